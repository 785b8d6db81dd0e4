// The judge's side of the two processes (calls.hpp): which runner a call goes to (the
// student's or the reference's), the judge's clock over the calls, and how a call's arguments
// travel. runner_process.cpp starts a runner (runner_launch.cpp: its process, in its sandbox),
// sends it calls, reads what came back, and notices when it dies.
// arguments.cpp encodes a call's arguments (call_state.hpp: what both files share).
#include "calls.hpp"
#include "call_state.hpp"

#include "common/buffers.hpp"
#include "common/check.hpp"
#include "common/judge.hpp"
#include "common/launch_record.hpp"
#include "common/stats.hpp"
#include "common/timing.hpp"
#include "clock.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace workbook::remote {

Charged g_charged;                   // calls since take_charged, their time with each round trip
std::set<unsigned long long> g_call_allocations;  // the device allocations the call being encoded was given
std::string g_practice_reason;       // why this checker runs in practice mode (find_practice_mode), or ""
Batches g_batches;                   // the batches being timed (call_state.hpp)

namespace {

bool g_profile_next = false;
int g_calls_made = 0;                // calls sent since take_calls_made
Runner* g_target = nullptr;          // as_reference's runner, or null for the student's
Runner* g_tool_target = nullptr;     // with_runner's runner of the student's code under a tool, or null
double g_last_batch_own_ms = 0;  // the runner's own time of the last batch: traced, never counted
// set_reference_program's path; a function's static, as forwarders set it from static initializers
std::string& reference_program()
{
    static std::string program;
    return program;
}

std::map<const void*, const char*>& forwarders()
{
    static std::map<const void*, const char*> table;
    return table;
}

std::string g_running_test;  // set_running_test

// The words of WORKBOOK_RUNNER_TOOL (one per line): a tool the student's runner runs under, in
// its sandbox, for a checker started by run_self_under (tools.hpp).
std::vector<std::string> runner_tool()
{
    std::vector<std::string> words;
    const char* tool = std::getenv("WORKBOOK_RUNNER_TOOL");
    if (tool == nullptr) return words;
    std::istringstream lines(tool);
    std::string word;
    while (std::getline(lines, word))
        if (!word.empty()) words.push_back(word);
    return words;
}

}  // namespace

Runner& student_runner()
{
    static Runner& runner = [] () -> Runner& {
        static Runner made(this_program() + "_runner", "your code", runner_tool());
        // Not yet: on the H100 the judge's turn after the pause read 2 to 5 ms for the solutions
        // themselves (2026-12-08), and failed them with "still running GPU work". Off until the
        // cause is found (issue 63).
        // made.pause_between_calls();
        return made;
    }();
    return runner;
}

bool set_reference_program(const char* program)
{
    reference_program() = program;
    return true;
}

Runner& reference_runner()
{
    static Runner runner(reference_program(), "the reference solution");
    return runner;
}

bool has_reference_runner() { return !reference_program().empty(); }

void start_runners_early(bool reference)
{
    student_runner().start_early();
    // Started once the student's runner is up: CUDA starts one process at a time, and the
    // first test needs the student's runner, the first timed one the reference's.
    if (reference && !reference_program().empty()) student_runner().when_ready([] { reference_runner().start_early(); });
}

void end_runners()
{
    student_runner().end();
    if (!reference_program().empty()) reference_runner().end();
}

namespace {
// The runner of the student's code that the calls go to: the one under a tool (with_runner), or
// the student's own.
Runner& student_side() { return g_tool_target ? *g_tool_target : student_runner(); }
}  // namespace

Runner& target_runner() { return g_target ? *g_target : student_side(); }

void with_runner(Runner& runner, const std::function<void()>& calls)
{
    // Even from inside the reference's timing (a probe run before it, have_gpu_alone): every
    // call of `calls` goes to `runner`.
    struct Route {
        explicit Route(Runner& runner) : reference(std::exchange(g_target, nullptr)) { g_tool_target = &runner; }
        ~Route()
        {
            g_tool_target = nullptr;
            g_target = reference;
        }
        Runner* reference;
    } route(runner);
    calls();
}

void as_reference(const std::function<void()>& calls)
{
    if (reference_program().empty()) throw std::runtime_error("checker bug: no reference runner was built");
    struct Route {
        Route() { g_target = &reference_runner(); }
        ~Route() { g_target = nullptr; }
    } route;
    calls();
}

namespace {
// The start of a message of `count` calls to `runner`: under a sanitizer the student's runner
// hands its functions exact-size copies of the device arrays (grading/runner/runner.hpp).
wire::Message calls_message(Runner& runner, std::uint32_t count)
{
    wire::Message request(wire::Op::call);
    request.put(static_cast<unsigned char>(runner.under_tool()));
    request.put(count);
    return request;
}
}  // namespace

wire::Message call_body(const char* name)
{
    wire::Message body;
    body.put_string(name);
    body.put(static_cast<unsigned char>(g_profile_next));
    g_profile_next = false;
    g_call_allocations.clear();
    return body;
}

void profile_next_call() { g_profile_next = true; }

wire::Reader send_call(const wire::Message& body, bool batchable, const char* name)
{
    // A call message holds calls one after another: here one (run_batch sends many).
    Runner& runner = target_runner();
    wire::Message request = calls_message(runner, 1);
    request.put_bytes(body.bytes().data(), body.bytes().size());
    for (const int fd : body.fds()) request.attach(fd);
    wire::Reader reply = runner.call(request, name);
    // The runner's own time of the call, less the copies of practice mode: counted in practice
    // mode only, where nothing is graded; otherwise the judge's clock counts.
    const auto own_ms = reply.get<double>();
    ++g_charged.calls;
    ++g_calls_made;
    g_charged.ms += g_practice_reason.empty() ? runner.last_call_ms() : own_ms;
    g_charged.own_clock = !g_practice_reason.empty();
    g_charged.batchable &= batchable;
    g_charged.reference = g_target != nullptr;
    return reply;
}

int take_calls_made() { return std::exchange(g_calls_made, 0); }

Charged take_charged()
{
    Charged taken = g_charged;
    g_charged = Charged{};
    if (taken.calls > 0 && !taken.own_clock) taken.ms = std::max(taken.ms - taken.calls * round_trip_ms(), 0.0);
    return taken;
}

bool queue_in_batch(const wire::Message& body)
{
    if (!g_batches.active) return false;
    Runner& runner = target_runner();
    if (g_batches.runner != nullptr && g_batches.runner != &runner)
        throw std::runtime_error("checker bug: one batch of calls went to two runners");
    g_batches.runner = &runner;
    g_batches.queued.put_bytes(body.bytes().data(), body.bytes().size());
    ++g_batches.count;
    return true;
}

void begin_batches(int slots)
{
    g_batches = Batches{};
    g_batches.active = true;
    g_batches.slots.resize(static_cast<std::size_t>(slots));
}

void resize_batches(int slots) { g_batches.slots.resize(static_cast<std::size_t>(slots)); }

void fill_slot(int slot) { g_batches.current = slot; }

double run_batch()
{
    if (g_batches.count == 0) return 0;
    Runner& runner = *g_batches.runner;
    wire::Message request = calls_message(runner, g_batches.count);
    request.put_bytes(g_batches.queued.bytes().data(), g_batches.queued.bytes().size());
    const std::uint32_t calls = g_batches.count;
    g_batches.queued = wire::Message();
    g_batches.count = 0;
    wire::Reader reply = runner.call(request, calls == 1 ? "a call" : "a batch of " + std::to_string(calls) + " calls");
    g_last_batch_own_ms = reply.get<double>();
    if (clock_trace() > 0) std::printf("clock: batch of %u: %s\n", calls, runner.last_timeline().legs().c_str());
    const double ms = std::max(runner.last_call_ms() - round_trip_ms(), 0.0);
    // One record for the whole batch: each run's check gets it, with the bytes it copied to the
    // host shared out among the runs.
    LaunchRecord record = runner.take_record();
    record.device_to_host_bytes /= calls;
    g_batches.record = std::move(record);
    g_batches.replays = static_cast<int>(g_batches.slots.size());
    return ms;
}

double last_batch_own_ms() { return g_last_batch_own_ms; }

void restore_slot(int slot)
{
    for (auto& [id, copy] : g_batches.slots.at(static_cast<std::size_t>(slot)))
        CUDA_CHECK(cudaMemcpy(copy.original, copy.copy.data(), copy.copy.bytes(), cudaMemcpyDeviceToDevice));
}

void end_batches() { g_batches = Batches{}; }

void record_from_runner()
{
    set_recorder({[] {
                      // Before a run queued into a batch nothing is pending: the batch's record
                      // comes after it ran.
                      if (!g_batches.active) student_side().take_record();
                  },
                  [] {
                      if (g_batches.replays > 0) {
                          --g_batches.replays;
                          return g_batches.record;
                      }
                      return student_side().take_record();
                  }});
    // A timed run of the student's code is timed on the judge's clock alone (clock.hpp).
    install_judge_clock();
    // The reference is timed in its own runner, the same way as the student's code.
    set_reference_route(as_reference);
    // And alone: the student's runner is taken off the GPU first (Runner::hold_off_gpu: paused,
    // or stopped where the GPU stays busy with its work), so that nothing of its code runs: a
    // thread that launches kernels between calls would otherwise slow the reference, and so
    // flatter the student's ratio. Pausing spares a restart (0.2 s on an H100: the context's end
    // and a new one's first call). A runner under a tool is left alone: no probe times anything.
    const bool under_tool = !runner_tool().empty();
    set_reference_timed_alone(
        [under_tool] {
            if (under_tool) return;
            static bool told = false;
            if (!std::exchange(told, true)) {
                std::printf("the process that runs your code is paused while the reference solution is timed "
                            "(stopped, and started again afterwards, if the GPU is still busy with its work)\n");
                std::fflush(stdout);
            }
            student_runner().hold_off_gpu();
        },
        [under_tool] {
            if (!under_tool) student_runner().resume();
        });
    // A test's knob: the student's runner stopped before each timing of its code, as it is before
    // the reference's timing wherever a pause leaves the GPU busy or there is no PID namespace,
    // so that a second timing runs in a new process (gpu.07_convolution.timed_after_a_restart).
    if (std::getenv("WORKBOOK_FORCE_RUNNER_RESTART") != nullptr && !under_tool) {
        std::printf("the process that runs your code is started afresh before each timing "
                    "(WORKBOOK_FORCE_RUNNER_RESTART)\n");
        std::fflush(stdout);
        set_before_yours_timed([] {
            student_runner().stop_and_wait();
            student_runner().start_early();
        });
    }
    // The reference's figure is checked against the reference run's own (reference_run_ms, from
    // the reference solution's grade on this GPU): one far from it is timed again with the
    // student's runner stopped, not paused, and the GPU idle (judge.hpp, set_reference_record).
    // Not in practice mode, whose times are each runner's own and were never kept, nor under a tool.
    if (!under_tool)
        set_reference_record(
            [](int call) { return practice_reason().empty() ? reference_run_ms(call) : 0.0; },
            [] {
                student_runner().stop_and_wait();
                const bool idle = gpu_idle();
                std::printf("the reference's figure was far from its own run's: the process that runs your code was "
                            "stopped%s before the reference was timed again\n",
                            idle ? "" : " (the GPU still looked busy afterwards)");
                std::fflush(stdout);
            });
}

void set_running_test(const std::string& name) { g_running_test = name; }

double reference_run_ms(int call)
{
    // Read once, from the checker's own environment, which the student's process cannot reach.
    static const auto figures = [] {
        std::map<std::pair<std::string, int>, double> read;
        const char* handed = std::getenv("WORKBOOK_REFERENCE_FIGURES");
        std::istringstream lines(handed == nullptr ? "" : handed);
        std::string line;
        while (std::getline(lines, line)) {
            std::istringstream fields(line);
            std::string number, ms, test;
            if (std::getline(fields, number, '\t') && std::getline(fields, ms, '\t') && std::getline(fields, test))
                read[{test, std::atoi(number.c_str())}] = std::atof(ms.c_str());
        }
        return read;
    }();
    const auto found = figures.find({g_running_test, call});
    return found == figures.end() ? 0.0 : found->second;
}

bool register_forwarder(const void* address, const char* name)
{
    forwarders()[address] = name;
    return true;
}

const char* forwarder_name(const void* address)
{
    const auto found = forwarders().find(address);
    return found == forwarders().end() ? nullptr : found->second;
}

}  // namespace workbook::remote
