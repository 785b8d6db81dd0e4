/// \file judge.hpp
/// \brief The judge: one mechanism that runs, compares, times and reports every graded call of
/// every lab.
///
/// A lab states only its data, as a Call: the student's function, the case, the output's name
/// and shape, the float64 reference, the tolerance, and the lab's hints. The judge does the rest,
/// the same way for every lab:
///
/// 1. poison the output (NaN) and arm the guard zones around it;
/// 2. run the student's function, recording with CUPTI which kernels it launched;
/// 3. check that a kernel ran and that every kernel that ran is defined in the student's file;
/// 4. compare the output with the reference on the GPU (a failing output is read back and
///    compared again on the host, for the report) and check the guards;
/// 5. repeat, three runs in all: the call passes only if every run passes, and an output that
///    changes between identical runs is reported as a race;
/// 6. for a performance test, time it beside the reference with the output poisoned before every
///    timed run and verified after it, and refuse a figure beyond what the GPU can physically do.
///
/// Nothing here uses doctest: the checkers' doctest layer (checker.hpp) and `make bench` call
/// the same functions.
#pragma once

#include "compare.hpp"

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace workbook {

/// \brief What a failed comparison looked like, for a lab's hint.
struct Failure {
    Comparison comparison;   ///< the output against the reference
    GuardReport guards;      ///< writes outside the output
    std::vector<float> got;  ///< the output as read back
};

/// \brief A device array a call reads: the judge fills it with fresh random values before each
/// timed run (and puts its contents back afterwards), so that no run sees an input seen before.
/// After every call, judged or timed, the judge checks that each input is still bit for bit what
/// it handed over (against a copy of its own, or against the fresh values it drew), so that a
/// kernel that writes its input fails, naming the input and the first changed element, and never
/// makes the reference solution agree with it.
struct Input {
    const float* data = nullptr;  ///< the array, in device memory
    std::size_t count = 0;        ///< its number of floats
    std::string name = "input";   ///< its name in the lab's API, e.g. "a"
};

/// \brief One graded call of a student's function: everything the judge needs to know.
///
/// \snippet tests/check_01_vector_add.cpp call
struct Call {
    std::string function;           ///< the student's function, as the lab names it: "launch_vector_add"
    const void* address = nullptr;  ///< its address; null when the student's file lacks it
    std::string what;               ///< the case, e.g. "n = 1000" or "17 x 33 x 65"
    std::string output = "out";     ///< the output's name in the lab, e.g. "c"
    Shape shape;                    ///< how the output's elements are named
    Tolerance tolerance;            ///< how far from the reference an element may be
    /// The float64 reference, one value per output element (called when first needed; the judge
    /// compares on the GPU, so a reference made there never has to come to the host).
    std::function<const Reference&()> expected;
    /// Runs once before the call's runs, outside them (lab 07 copies its mask here).
    std::function<void()> setup;
    /// Calls the student's function so that it writes the output at `out`.
    std::function<void(float* out)> run;
    /// The lab's hint for a wrong output (the judge itself explains races and foreign kernels).
    std::function<std::string(const Failure&)> diagnose;
    /// The lab's words for an output that changes between identical runs.
    std::string race_hint;
    /// The device arrays the call reads (uniform in [-1, 1), as random_floats makes them): the
    /// performance test gives every timed run fresh values in them (time_call).
    std::vector<Input> inputs;
    bool host_output = false;             ///< `out` is host memory: a round trip from the host
    std::size_t copies_back_bytes = 0;    ///< at least this many bytes must be copied device to host
};

/// \brief A lab's case of these dimensions, for its calls to share. A large one (16 Mi elements
/// or more: 4096 x 4096 and up) is built once per process and kept in one slot per case type, so
/// that the correctness and performance tests of a size share its data and its float64
/// reference, and only the latest large case stays in memory; a smaller one is built afresh, and
/// so never evicts the large one that the next test needs again.
/// \tparam Case the lab's case, constructible from the dimensions
/// \param elements how many elements the case holds, to tell large from small
/// \param dimensions the case's dimensions, e.g. rows and cols
/// \snippet tests/transpose_cases.hpp cached case
template <class Case, class... Dimensions>
std::shared_ptr<const Case> cached_case(double elements, Dimensions... dimensions)
{
    if (elements < (1 << 24)) return std::make_shared<const Case>(dimensions...);
    static std::shared_ptr<const Case> last;
    static std::tuple<Dimensions...> key;
    if (!last || key != std::make_tuple(dimensions...)) {
        last.reset();  // free the old one before building the new one
        last = std::make_shared<const Case>(dimensions...);
        key = std::make_tuple(dimensions...);
    }
    return last;
}

/// \brief How many times the judge runs a call: every run must pass.
constexpr int kJudgeRuns = 3;

/// \brief The lowest speed that earns a performance test's points: the student's kernel may take
/// up to 1 / kSpeedFloor (1.25x) the reference's time.
constexpr double kSpeedFloor = 0.8;

/// \brief Options of judge_call.
struct JudgeOptions {
    int runs = kJudgeRuns;            ///< runs, all of which must pass
    bool own_kernels = true;          ///< every kernel must be defined in the student's file
};

/// \brief The judge's verdict on a call.
struct Verdict {
    bool ok = false;      ///< every run passed
    std::string message;  ///< when !ok: what went wrong, where, and a hint
};

/// \brief Runs, records and compares a call kJudgeRuns times (see the file's description).
/// \param call the call to judge
/// \param options how many runs, and whose kernels count
/// \return the verdict; a CUDA error in the student's code throws CudaError
/// \snippet tests/check_01_vector_add.cpp call
Verdict judge_call(const Call& call, const JudgeOptions& options = {});

/// \brief Runs a call once on a plain output, with no checks: the work a sanitizer probe watches.
/// \param call the call to run
void run_once(const Call& call);

/// \brief What a rate is measured against.
enum class Ceiling {
    copy,  ///< bytes per second, against a device-to-device copy on this GPU
    fp32,  ///< floating-point operations per second, against cuBLAS SGEMM (FP32) on this GPU
    tf32,  ///< floating-point operations per second, against cuBLAS in TF32 on this GPU's tensor cores
    /// floating-point operations per second of a product to FP32's accuracy computed on the tensor
    /// cores (each input split into TF32 parts, several products summed): against cuBLAS SGEMM,
    /// which it competes with, and bounded by the TF32 tensor-core peak, which it cannot pass
    fp32_on_tensor_cores,
};

/// \brief How a performance test counts the work of one call.
struct Work {
    double amount = 0;            ///< bytes moved (Ceiling::copy) or floating-point operations (the others)
    Ceiling ceiling = Ceiling::copy;  ///< what the rate is set beside
};

/// \brief A rate in the unit of its ceiling: "GB/s" or "GFLOP/s", and the sentence that sets it
/// beside the ceiling, e.g. "2700 GB/s = 91% of copy (2958 GB/s)".
/// \param rate the rate in GB/s or GFLOP/s
/// \param ceiling what it is measured against
std::string versus(double rate, Ceiling ceiling);

/// \brief The most this GPU can physically do: the copy bandwidth measured in this process (with
/// 10% for timing noise), the FP32 peak from its SM count, clock and FP32 lanes per SM, or the
/// TF32 tensor-core peak from its SM count, clock and TF32 operations per clock per SM (also the
/// bound of a product to FP32's accuracy on the tensor cores, which takes several TF32 products,
/// or at least three of 16-bit inputs at twice TF32's rate).
/// \param ceiling which limit
/// \return GB/s or GFLOP/s
double physical_limit(Ceiling ceiling);

/// \brief The outcome of a timed comparison with the reference.
struct SpeedVerdict {
    bool ok = false;          ///< timed, verified, possible, and fast enough
    bool slow = false;        ///< the only problem is the speed (then an explanation may help)
    bool impossible = false;  ///< the figure is beyond physical_limit()
    bool profiled = false;    ///< run under a profiler (WORKBOOK_PROFILE): launched once, nothing timed
    std::string message;      ///< when !ok, what went wrong
    std::string yours;        ///< "your kernel: ..." line
    std::string reference;    ///< "reference: ..." line
    double rate = 0;          ///< the student's rate (GB/s or GFLOP/s)
    double speed = 0;         ///< reference time over the student's time
    int call = 0;             ///< which time_call of the running test this was (0 for the first)
    double reference_ms = 0;  ///< the reference's figure that counted, milliseconds per run
};

/// A reference figure further than this from the reference run's own (set_reference_record), as
/// a ratio either way, is timed again with the student's process stopped, and counts only if the
/// new one is within it. In one class graded on an H100, lab 02's reference read 1.28 to 1.32 ms
/// per call in 16 grades (within 3%) and 15.13 ms in one, where a 3.3x-slow kernel then passed:
/// the bound is far outside the first and far inside the second.
constexpr double kReferenceDrift = 1.25;

/// \brief Times a correct call beside the reference, verifying every timed run.
///
/// The call is judged first ("not timed" if wrong). Then every timed run, warm-ups included,
/// gets input it has never seen: the call's inputs are filled with fresh random values (from a
/// seed drawn for that run, outside the timed interval), the output is poisoned, and after the
/// run its kernels are checked and its output compared with the reference solution's output
/// for that same input. So a launch that skips the work, or answers from a memo of earlier
/// outputs, fails, naming the run. The reference is timed on the same sequence of inputs, and
/// the inputs are put back afterwards. A rate beyond physical_limit() fails too. A call slower
/// than kSpeedFloor allows, or with a figure beyond physical_limit(), is timed once more, both
/// sides: another process's work on the GPU only ever adds time, to a call or to the round trip
/// the judge takes off. Too slow, each side's faster timing counts; impossible, the new ones.
/// Timed in batches on the judge's clock, both sides' batches are charged less the fixed cost
/// of a batch that the reference's timing measured on its own runner (Timing::batch_cost_ms).
/// Under a profiler (the environment variable WORKBOOK_PROFILE is
/// "yours" or "reference"), only the chosen launch runs once, inside the NVTX range
/// "workbook-profile", and nothing is timed.
/// \param yours the student's call
/// \param reference the reference solution's launch, writing the same output
/// \param work what one call does
/// \snippet tests/check_01_vector_add.cpp speed
SpeedVerdict time_call(const Call& yours, const std::function<void(float* out)>& reference, const Work& work);

/// \brief Installs what runs just before the student's call that a profiler run launches: a
/// checker has the runner, the process that holds the student's code, open the NVTX range there.
/// \param before what to run (nothing by default)
void set_before_profiled_call(std::function<void()> before);

/// \brief Installs how a call is run as the reference solution would run it: a checker sends the
/// very same call to a runner of the reference solution (grading/judge/calls.hpp), so that the
/// reference is timed exactly as the student's code is. Without it (make bench, where all the
/// code is the workbook's), time_call times the reference function it is given, in process.
/// \param route runs its argument with the student's functions standing for the reference's
void set_reference_route(std::function<void(const std::function<void()>&)> route);

/// \brief Installs what runs around the reference solution's timed runs, so that they have the
/// machine to themselves: a checker stops the runner that holds the student's code and waits
/// until its processes have ended (nothing they left running, a thread launching kernels between
/// calls say, then shares the GPU or the CPU with the reference), and starts it again afterwards,
/// so that its CUDA start overlaps what follows. Nothing by default: make bench has no student code.
/// \param before what to run just before the reference's first timed run
/// \param after what to run once its timed runs are over
void set_reference_timed_alone(std::function<void()> before, std::function<void()> after);

/// \brief Installs what the grade knows of the reference's speed: the reference run's own figure
/// for each timed call of the running test (made when the reference solution was graded on this
/// GPU and kept with its times). A reference figure further than kReferenceDrift from it is timed
/// again after `stop_student` ran, and if it is still off, the reference run's figure counts
/// instead; the "reference:" line says which. Nothing by default (make bench): no figure is checked.
/// \param expected_ms the reference run's milliseconds per run for timed call `call` of the
///        running test, or 0 where none is known
/// \param stop_student stops every process of the student's, and waits until the GPU is idle
void set_reference_record(std::function<double(int call)> expected_ms, std::function<void()> stop_student);

/// \brief Installs what runs before each timing of the student's code, just before the call's
/// setup runs again: a checker given WORKBOOK_FORCE_RUNNER_RESTART (a test's knob) stops the
/// process that runs the student's code there, to show that no timing relies on what that process
/// held before it. Nothing by default.
/// \param before what to run
void set_before_yours_timed(std::function<void()> before);

/// \brief Forgets which timed call of a test comes next (called when a test starts); a profiler
/// run picks its call by this count (WORKBOOK_PROFILE_CALL).
void judge_test_started();

}  // namespace workbook
