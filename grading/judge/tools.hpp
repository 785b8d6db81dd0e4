/// \file tools.hpp
/// \brief Running a checker's own GPU work under NVIDIA's tools: Nsight Compute's hardware
/// counters and compute-sanitizer.
///
/// A checker declares *probes*: named pieces of GPU work, such as "launch the student's transpose
/// once at 4096 x 4096". A sanitizer or counter test starts a runner of the student's code (the
/// process that holds it, calls.hpp) under `compute-sanitizer` or `ncu`, inside the runner's
/// sandbox, runs the probe with every call going to that runner, ends it, and reads what the
/// tool wrote. The tool sees only the student's work, and a fault in it cannot take the checker
/// down. The checker itself is the probe's judge: a second judge process would cost a CUDA
/// start of its own, and CUDA starts one process at a time (docs/grading.md, "What it costs").
///
/// A probe names the compute-sanitizer tools its tests run on it. A checker that runs all its
/// tests starts those runners as its turn comes (start_tool_runs_early), so that their tool's
/// start and their CUDA's overlap the correctness tests; a sanitizer test then runs its probe on
/// its runner. Nothing is timed while one of them starts: every measurement waits for them first
/// (have_gpu_alone in common/timing.hpp, called by time_gpu). Hardware counters a test will read
/// can have their runner started early too (read_counters_early). Where a tool is missing or may
/// not read the counters, the test says so and is reported as skipped, never as passed.
///
/// `checker --workbook-probe=NAME` still runs one probe by itself, in a process of its own, run
/// by hand: under a tool wrapped around the whole checker (lab 03's walkthrough shows ncu so) or
/// with none (lab 07's). explain_slowness starts a second checker instead (run_self_under).
///
/// The definitions, by concept: tool_run.cpp (the probes, and running this program under a
/// tool), ncu.cpp (Nsight Compute's counters), slowness.cpp (explain_slowness) and
/// sanitizers.cpp (compute-sanitizer); what they share is in tool_run.hpp and ncu.hpp.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace workbook {

/// A probe's body: GPU work that a tool observes. It reports failure by throwing.
using ProbeFunction = void (*)();

/// \brief Registers a probe; use the WORKBOOK_PROBE macro instead.
/// \param name_and_tools the name given after --workbook-probe=, then the compute-sanitizer
///        tools ("memcheck", "racecheck", "synccheck") that the checker's tests run on it
/// \param body the work to run
/// \snippet tests/check_03_shared_transpose.cpp probe
bool register_probe(const std::vector<std::string>& name_and_tools, ProbeFunction body);

/// \brief Runs a registered probe in this process (checker_main.cpp calls it).
/// \param name the probe's name
/// \return false when no probe has that name
/// \snippet grading/judge/checker_main.cpp run probe
bool run_probe(const std::string& name);

/// \brief Where an NVIDIA tool lives: on PATH, else in the CUDA toolkit's bin folder.
/// \param name e.g. "ncu" or "compute-sanitizer"
/// \return the path, or an empty string when the tool is not installed
/// \snippet grading/judge/tool_run.cpp find tool
std::string find_tool(const std::string& name);

/// \brief What happened when a tool ran a probe.
struct ToolRun {
    bool ran = false;     ///< the tool was found and started
    int exit_code = -1;   ///< its exit status (124 when it ran past the timeout)
    std::string output;   ///< everything it printed, stdout and stderr together
    std::string why_not;  ///< when !ran, why not
};

/// \brief Which of a checker's two processes a tool watches (calls.hpp).
enum class Target {
    runner,  ///< the runner, the student's code: the tool is started inside its sandbox
    judge,   ///< the checker itself (the reference solution runs there)
};

/// \brief Runs this very program again under a tool, with arguments and environment settings.
/// \param tool_and_args the tool's name (looked up with find_tool) and its arguments
/// \param self_args the arguments this program gets
/// \param environment settings "NAME=value" for the run
/// \param timeout_s seconds before the tool is stopped
/// \param target which process the tool watches: the runner this program starts, or this program
/// \snippet grading/judge/slowness.cpp profile
ToolRun run_self_under(const std::vector<std::string>& tool_and_args, const std::vector<std::string>& self_args,
                       const std::vector<std::string>& environment, int timeout_s, Target target);

/// \brief Why a kernel is slower than the reference, in Nsight Compute's words.
///
/// Runs the failing performance test twice more under ncu, once launching the student's timed
/// call and once the reference's (time_call in judge.hpp does only that when WORKBOOK_PROFILE is
/// set, inside the NVTX range "workbook-profile", which is all ncu profiles). Sets the two
/// kernels side by side: threads per block, registers per thread, blocks that fit on an SM,
/// achieved occupancy, DRAM throughput as a percentage of peak, shared-memory bank conflicts per
/// request and the top warp stall reason, then a one-line hint drawn from the largest
/// difference. Where the counters cannot be read, says why.
/// \param test_name the running test's name
/// \param timed_call which time_call of the test (0 for the first)
/// \return the table and the hint, or the reason there is none
std::string explain_slowness(const std::string& test_name, int timed_call);

/// \brief Hardware counters read by Nsight Compute.
struct CounterReading {
    bool available = false;                ///< whether the counters could be read
    std::string why_not;                   ///< when not available, why (tool missing, no permission, ...)
    std::map<std::string, double> values;  ///< metric name -> value, summed over the matching launches
    int launches = 0;                      ///< kernel launches profiled
};

/// \brief Reads hardware counters for the kernels a probe launches.
/// \param probe the probe to run under ncu
/// \param kernel_regex which kernels to profile (a regular expression on the function name)
/// \param metrics ncu metric names, e.g. "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
/// \snippet tests/check_03_shared_transpose.cpp counters
CounterReading read_counters(const std::string& probe, const std::string& kernel_regex,
                             const std::vector<std::string>& metrics);

/// \brief Asks for a read_counters() with these arguments to start with the checker, beside its
/// first tests (see start_tool_runs_early); call it at namespace scope, as a static initializer.
/// \param probe the probe to run under ncu
/// \param kernel_regex which kernels to profile
/// \param metrics the metric names, exactly as the test will pass them
/// \return true, for the initializer
/// \snippet tests/check_03_shared_transpose.cpp counters early
bool read_counters_early(const std::string& probe, const std::string& kernel_regex,
                         const std::vector<std::string>& metrics);

/// \brief What compute-sanitizer found when it ran a probe.
struct SanitizerReport {
    /// The verdict.
    enum class Verdict { clean, findings, probe_failed, unavailable };
    Verdict verdict = Verdict::unavailable;  ///< clean, something found, the probe failed, or no tool
    std::string findings;                    ///< the tool's report lines (kind, kernel, source line)
    std::string why_not;                     ///< when probe_failed or unavailable, why
};

/// \brief Runs a probe under one of compute-sanitizer's tools, on the runner that
/// start_tool_runs_early started for it if there is one.
/// \param tool "memcheck", "racecheck", "synccheck" or "initcheck"
/// \param probe the probe to run
/// \snippet tests/check_03_shared_transpose.cpp racecheck
SanitizerReport sanitize(const std::string& tool, const std::string& probe);

/// \brief Starts the runner under its tool of every compute-sanitizer run the probes name and
/// of every counter reading asked for early (checker_main.cpp calls it when the checker runs all
/// its tests from the first, once its turn has come: CUDA's start under compute-sanitizer runs
/// the tool's own work on the GPU, which must not share it with the lab before).
void start_tool_runs_early();

/// \brief Marks the running test as skipped with a reason: it is reported as skipped and scores
/// nothing, never as passed. Call it, then return from the test.
/// \param reason why the test could not run here, e.g. "ncu is not installed"
/// \snippet tests/check_06_thread_sweep.cpp skip
void skip_test(const std::string& reason);

/// \brief The reason given to skip_test in the running test, or empty (checker_main.cpp uses it).
/// \snippet grading/judge/checker_main.cpp skip reason
const std::string& skip_reason();

/// \brief Forgets the skip reason; called when a test starts.
/// \snippet grading/judge/checker_support.cpp clear skip
void clear_skip();

}  // namespace workbook

/// Pastes two tokens together (a helper of WORKBOOK_PROBE).
#define WORKBOOK_PROBE_CAT2(a, b) a##b
/// Pastes two tokens together after expanding them, e.g. __LINE__ (a helper of WORKBOOK_PROBE).
#define WORKBOOK_PROBE_CAT(a, b) WORKBOOK_PROBE_CAT2(a, b)
/// Defines a probe, and the compute-sanitizer tools its tests run on it:
/// `WORKBOOK_PROBE("small sizes", "memcheck", "synccheck") { ...GPU work... }`.
#define WORKBOOK_PROBE(...)                                                                   \
    static void WORKBOOK_PROBE_CAT(workbook_probe_, __LINE__)();                               \
    static const bool WORKBOOK_PROBE_CAT(workbook_probe_registered_, __LINE__) =              \
        ::workbook::register_probe({__VA_ARGS__}, &WORKBOOK_PROBE_CAT(workbook_probe_, __LINE__)); \
    static void WORKBOOK_PROBE_CAT(workbook_probe_, __LINE__)()
