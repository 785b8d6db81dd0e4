// The runner's main(): serve the judge's calls of the student's functions, one at a time.
//
// For each call: put back the device state the last call set, map the judge's arrays, start
// CUPTI's recording, call the function, note when the default stream has drained after it
// returned, wait for the whole GPU, answer "done", then send what CUPTI saw. The judge's clock
// stops at "done"; the record follows outside it.
// Where CUDA IPC is missing (practice mode), the judge's device arrays come as host copies: each
// is copied into a device allocation of the runner's for the call and back after it
// (Kind::device_copy), and the record ends before those copies back, which are not the call's.
// runner.hpp and grading/judge/calls.hpp describe the two sides; docs/grading.md the reasons.
// The judge's arrays, decoded for each call, are arguments.cu's (call_state.hpp: what both share).
#include "runner.hpp"
#include "call_state.hpp"

#include "common/check.hpp"
#include "common/launch_record.hpp"

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

// Launched on the default stream after a call returns: it starts once everything the default
// stream waits for is done, so a kernel of the call still running then was on another stream.
__global__ void workbook_runner_drained() {}

namespace workbook::runner {

namespace {

constexpr const char* kDrainedMarker = "_Z23workbook_runner_drainedv";

std::string g_cupti_unavailable;  // why CUPTI cannot record here (another tool holds it), or ""

// The monotonic clock, which the judge's process reads too, in milliseconds: the moments of a
// call that "done" reports for the judge's trace (WORKBOOK_CLOCK_TRACE), never for its figures.
double now_ms()
{
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
double g_received_ms = 0;  // the moment the message being served arrived
double g_started_ms = 0;   // the moment its calls started (after the GPU's switch to this process)
double g_ended_ms = 0;     // the moment its work was over (after the last waits)

const Function* find(const std::string& name)
{
    for (const Function& function : lab_functions())
        if (name == function.name && function.address != nullptr) return &function;
    return nullptr;
}

// Each name once, in the order first seen: the judge asks which kernels ran, never how often, and
// a thread of the student's that launches kernels all the time must not make the record larger
// than a message may be.
std::vector<std::string> distinct(const std::vector<std::string>& names)
{
    std::vector<std::string> once;
    std::set<std::string> seen;
    for (const std::string& name : names)
        if (seen.insert(name).second) once.push_back(name);
    return once;
}

// The record message: what the call launched, each kernel name once. One that a message cannot
// carry (thousands of kernels of different names) says so instead of listing them.
wire::Message record_message(const LaunchRecord& record)
{
    const auto encode = [](const LaunchRecord& sent) {
        wire::Message message(wire::Op::record);
        message.put(static_cast<std::uint32_t>(sent.kernels.size()));
        for (const std::string& kernel : sent.kernels) message.put_string(kernel);
        message.put(static_cast<std::uint64_t>(sent.device_to_host_bytes));
        message.put(static_cast<std::uint32_t>(sent.still_running.size()));
        for (const std::string& kernel : sent.still_running) message.put_string(kernel);
        message.put_string(sent.unavailable);
        message.put(static_cast<std::uint32_t>(sent.after_return.size()));
        for (const std::string& kernel : sent.after_return) message.put_string(kernel);
        message.put(sent.after_return_ms);
        message.put(static_cast<std::uint64_t>(sent.pinned_bytes));
        return message;
    };
    LaunchRecord sent = record;
    sent.kernels = distinct(record.kernels);
    sent.still_running = distinct(record.still_running);
    sent.after_return = distinct(record.after_return);
    wire::Message message = encode(sent);
    if (message.bytes().size() <= wire::kMaxMessage) return message;
    LaunchRecord too_large;
    too_large.unavailable = "the call launched " + std::to_string(sent.kernels.size()) +
                            " different kernels, too many to list";
    return encode(too_large);
}

// How a call ended: what "done" tells the judge.
struct Outcome {
    wire::Status status = wire::Status::ok;
    cudaError_t code = cudaSuccess;
    std::string text;  // the error's or the exception's words
    // A sticky error destroyed this process's CUDA context: the judge starts a fresh runner.
    bool sticky() const { return status == wire::Status::cuda_error && is_sticky(code); }
};

// Starts CUPTI's recording of what the call launches, unless a tool holds CUPTI (as found
// before): whether it records.
bool begin_recording_if_free()
{
    if (!g_cupti_unavailable.empty()) return false;
    try {
        cupti_begin_recording();
        return true;
    } catch (const std::exception& e) {
        g_cupti_unavailable = e.what();  // under compute-sanitizer or ncu: they hold CUPTI
        return false;
    }
}

// One call of the message: its function and arguments.
struct Call {
    const Function* function = nullptr;
    bool profile = false;
    std::unique_ptr<Arguments> arguments;
};

// Waits for everything queued on the default stream: spinning where wire::may_spin, blocking
// elsewhere (a laptop, a Slurm job of 2 cores), so as to take no core the judge needs. A thread
// that sleeps while the GPU works wakes up late when it is done (0.05 to 0.2 ms on the H100
// machines, virtual machines), and the judge's clock would count that wake-up at the GPU's switch
// to this process and at the end of every call: a batch's runs read 3 to 5% above the bench's,
// and a ping, whose wake-ups are shorter, did not take them off (docs/grading.md, "The judge's
// clock"). A spin adds nothing the CPU check (check_cpu_time in common/judge.cu) counts against a
// call: it runs on the thread that ran the student's code, after that code returned, so that
// thread stays within its one core. The student's code waits as the context says, spinning too.
void wait_for_default_stream()
{
    // wire::may_spin() is fixed for the process's lifetime, so one event serves every wait.
    static const cudaEvent_t marker = [] {
        const unsigned how = wire::may_spin() ? cudaEventDefault : cudaEventBlockingSync;
        cudaEvent_t made = nullptr;
        CUDA_CHECK(cudaEventCreateWithFlags(&made, how | cudaEventDisableTiming));
        return made;
    }();
    CUDA_CHECK(cudaEventRecord(marker, cudaStreamLegacy));
    if (!wire::may_spin()) {
        CUDA_CHECK(cudaEventSynchronize(marker));
        return;
    }
    cudaError_t status;
    while ((status = cudaEventQuery(marker)) == cudaErrorNotReady) {
    }
    CUDA_CHECK(status);
}

// Runs the message's calls one after another (a ping runs none), then waits for the whole GPU,
// so that their work is finished when the judge hears "done". Throws what a call threw. The
// judge times all of it on its own clock. `own_ms` is this process's own time of the calls, from
// the first call's start to the end of the waits, less the copies in of practice mode: the judge
// uses it in practice mode only, where nothing is graded (docs/grading.md, "Practice mode").
// The calls' arguments are left to finish (serve_call).
void run_calls(wire::Reader& request, bool ping, wire::Message& result, std::vector<Call>& calls, double& own_ms)
{
    // The GPU switches between the judge's context and this one: a first kernel takes the
    // switch, so that a call's kernels start at once (the marker below relies on it).
    workbook_runner_drained<<<1, 1, 0, cudaStreamLegacy>>>();
    wait_for_default_stream();
    const auto started = std::chrono::steady_clock::now();
    g_started_ms = now_ms();
    g_copying_in_ms = 0;
    if (!ping) {
        const bool exact = request.get<unsigned char>() != 0;
        const auto count = request.get<std::uint32_t>();
        for (std::uint32_t i = 0; i < count; ++i) {
            Call call;
            const std::string name = request.get_string();
            call.function = find(name);
            if (call.function == nullptr) throw std::runtime_error(name + " is missing from your file");
            call.profile = request.get<unsigned char>() != 0;
            // The call's arguments: device arrays opened from the judge's IPC handles (kept
            // open for later calls), host arrays mapped from the judge's shared memory.
            call.arguments = std::make_unique<Arguments>(request, exact);
            g_call_copies.clear();
            if (call.profile) nvtxRangePushA("workbook-profile");
            call.function->invoke(*call.arguments, result);
            if (call.profile) nvtxRangePop();
            calls.push_back(std::move(call));
        }
    }
    // What the caller's next use of the default stream would wait for: a kernel of the call
    // still running when this marker starts ran on a stream the default stream ignores.
    workbook_runner_drained<<<1, 1, 0, cudaStreamLegacy>>>();
    CUDA_CHECK(cudaGetLastError());
    wait_for_default_stream();
    CUDA_CHECK(cudaDeviceSynchronize());  // and for any other stream (at once when none is busy)
    own_ms = std::max(ms_since(started) - g_copying_in_ms, 0.0);
    g_ended_ms = now_ms();
}

// The "done" answer: how the call ended and, when all went well, this process's own time of it
// (run_calls) and its result.
wire::Message done_message(const Outcome& outcome, double own_ms, const wire::Message& result)
{
    wire::Message done(wire::Op::done);
    done.put(outcome.status);
    done.put(static_cast<std::int32_t>(outcome.code));
    done.put(static_cast<unsigned char>(outcome.sticky()));
    done.put_string(outcome.text);
    if (outcome.status == wire::Status::ok) {
        done.put(g_received_ms);
        done.put(g_started_ms);
        done.put(g_ended_ms);
        done.put(own_ms);
        done.put_bytes(result.bytes().data(), result.bytes().size());
    }
    return done;
}

// What CUPTI saw the call launch, read after "done", outside the judge's clock; or why there is
// no record. After a sticky error CUPTI is not asked: the context it would read is gone.
LaunchRecord what_it_launched(bool recording, const Outcome& outcome)
{
    LaunchRecord seen;
    if (!recording) seen.unavailable = g_cupti_unavailable.empty() ? "the call failed first" : g_cupti_unavailable;
    if (recording && !outcome.sticky()) {
        try {
            seen = cupti_end_recording(kDrainedMarker);
        } catch (const std::exception& e) {
            seen.unavailable = e.what();
        }
    }
    return seen;
}

// Launches the marker kernel and waits for it. CUPTI's first kernel after a recording was read
// (a forced flush hands CUPTI's buffer back) waits in its launch while CUPTI readies a new one:
// 0.1 to 0.5 ms on an H100, at times 1.5 ms. In the next call that wait fell inside the judge's
// clock, as the largest and noisiest part of the GPU's first turn, where a ping to the
// reference's runner, which the judge takes off every call, paid less of it than a batch did.
// So the runner pays it once more here, after each record is read and before it is sent: the
// judge waits for the record before it sends the next call (docs/grading.md, "The judge's clock").
void launch_after_recording(bool recording, const Outcome& outcome)
{
    if (!recording || outcome.sticky()) return;
    workbook_runner_drained<<<1, 1, 0, cudaStreamLegacy>>>();
    if (cudaGetLastError() == cudaSuccess) {
        try {
            wait_for_default_stream();
        } catch (const std::exception&) {
        }
    }
    cudaGetLastError();  // nothing of this may reach the student's next call
}

// Runs `step`, and notes in `outcome` what it threw, unless an earlier step failed.
template <class Step>
void step_of_call(Outcome& outcome, Step step)
{
    if (outcome.status != wire::Status::ok) return;
    try {
        step();
    } catch (const CudaError& e) {
        outcome.status = wire::Status::cuda_error;
        outcome.code = e.code();
        outcome.text = e.what();
    } catch (const std::exception& e) {
        outcome.status = wire::Status::exception;
        outcome.text = e.what();
    }
}

// One call or ping: run it, answer done, then send the record.
bool serve_call(int socket, wire::Reader& request, bool ping)
{
    ++g_call;
    wire::Message result;  // the result's fields, appended to done when all went well
    Outcome outcome;
    bool recording = false;
    std::vector<Call> calls;
    double own_ms = 0;
    g_practice_copies = 0;
    // Whatever device state an earlier call, or a thread between calls, set is put back: no timed
    // run inherits it (device_state.cu).
    reset_device_state();
    reset_pinned_watch();
    step_of_call(outcome, [&] {
        recording = begin_recording_if_free();
        cudaGetLastError();  // the student's call starts with no error pending from the runner's
        run_calls(request, ping, result, calls, own_ms);
    });
    // And after the call: lines it made persisting must not survive the judge's L2 flush before
    // the next timed run, nor a carve-out reach the reference's runs while this process is paused.
    if (!ping) reset_device_state();
    // Practice mode: the record ends before the copies back into the judge's files, which are the
    // runner's work, not the call's (a copy to the host would count as the call's own).
    const bool practice = g_practice_copies > 0;
    LaunchRecord seen;
    if (practice) seen = what_it_launched(recording, outcome);
    step_of_call(outcome, [&] {
        for (Call& call : calls) call.arguments->finish();
    });
    calls.clear();
    if (outcome.status == wire::Status::ok) {
        // An error raised inside a kernel shows at the first call that waits for it.
        const cudaError_t late = cudaGetLastError();
        if (late != cudaSuccess) {
            outcome.status = wire::Status::cuda_error;
            outcome.code = late;
            outcome.text = std::string(cudaGetErrorString(late)) + " (" + cudaGetErrorName(late) + ")";
        }
    }
    if (!wire::send(socket, done_message(outcome, own_ms, result))) return false;

    // What CUPTI saw is read after "done", outside the judge's clock (the forced flush, and the
    // wait of CUPTI's next launch, would otherwise lengthen every call).
    if (!practice) seen = what_it_launched(recording, outcome);
    seen.pinned_bytes = most_pinned_bytes();
    launch_after_recording(recording, outcome);
    if (!wire::send(socket, record_message(seen))) return false;
    Arguments::forget_stale_allocations();
    return true;
}

// The judge's question at its start (Op::probe_ipc): can this process open a CUDA IPC handle of
// the judge's? The answer is done with a byte, 1 when it could, and the CUDA error's words when
// not; then an empty record, as after any call.
bool serve_ipc_probe(int socket, wire::Reader& request)
{
    const auto handle = request.get<cudaIpcMemHandle_t>();
    void* base = nullptr;
    const cudaError_t status = cudaIpcOpenMemHandle(&base, handle, cudaIpcMemLazyEnablePeerAccess);
    if (status == cudaSuccess) cudaIpcCloseMemHandle(base);
    cudaGetLastError();  // nothing of this may reach the student's first call
    wire::Message answer;
    answer.put(static_cast<unsigned char>(status == cudaSuccess));
    answer.put_string(status == cudaSuccess ? std::string()
                                            : std::string(cudaGetErrorString(status)) + " (" + cudaGetErrorName(status) + ")");
    if (!wire::send(socket, done_message(Outcome{}, 0, answer))) return false;
    LaunchRecord none;
    none.unavailable = "a check of CUDA IPC runs nothing";
    return wire::send(socket, record_message(none));
}

// Readies CUDA's context, the marker kernel's module and CUPTI while the judge starts too, so
// that the first test does not wait for them. What fails here fails again, and is reported, at
// the first call.
void warm_up()
{
    if (cudaFree(nullptr) != cudaSuccess) {
        cudaGetLastError();
        return;
    }
    bool recording = false;
    try {
        cupti_begin_recording();
        recording = true;
    } catch (const std::exception& e) {
        g_cupti_unavailable = e.what();  // under compute-sanitizer or ncu: they hold CUPTI
    }
    workbook_runner_drained<<<1, 1, 0, cudaStreamLegacy>>>();
    const bool ran = cudaDeviceSynchronize() == cudaSuccess;
    if (recording && ran) {
        try {
            cupti_end_recording(kDrainedMarker);
        } catch (const std::exception&) {
            recording = false;
        }
    }
    launch_after_recording(recording && ran, Outcome{});
    cudaGetLastError();
}

}  // namespace

}  // namespace workbook::runner

int main()
{
    using namespace workbook;
    // Nothing here outlives the judge: the kernel ends this process when its parent goes.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    const char* fd = std::getenv("WORKBOOK_RUNNER_FD");
    if (fd == nullptr) {
        std::fprintf(stderr, "this is a checker's runner: the checker starts it (run check_NN_name instead)\n");
        return 2;
    }
    const int socket = std::atoi(fd);
    unsetenv("WORKBOOK_RUNNER_FD");

    wire::Message hello(wire::Op::hello);
    std::uint32_t defined = 0;
    for (const runner::Function& function : runner::lab_functions()) defined += function.address != nullptr;
    hello.put(defined);
    for (const runner::Function& function : runner::lab_functions())
        if (function.address != nullptr) hello.put_string(function.name);
    if (!wire::send(socket, hello)) return 1;
    // The student's code waits for the GPU by spinning, which keeps a call that waits for its own
    // stream as fast as in a process of its own; the runner's own waits spin where they may
    // (wait_for_default_stream).
    cudaSetDeviceFlags(cudaDeviceScheduleSpin);
    runner::warm_up();

    for (;;) {
        wire::Reader request;
        wire::poll_for_message(socket, wire::kPollMs);  // the next call soon comes, read at once
        if (!wire::receive(socket, request)) return 0;  // the judge is gone
        runner::g_received_ms = runner::now_ms();
        const auto op = request.get<wire::Op>();
        if (op == wire::Op::exit) {
            // Let go of the output, then say so by closing the socket: the judge need not wait
            // while CUDA tears this process down. (A tool wrapped around it keeps its own.)
            wire::release_output();
            close(socket);
            return 0;
        }
        if (op != wire::Op::call && op != wire::Op::ping && op != wire::Op::probe_ipc) return 3;
        if (op == wire::Op::probe_ipc) {
            if (!runner::serve_ipc_probe(socket, request)) return 0;
            continue;
        }
        if (!runner::serve_call(socket, request, op == wire::Op::ping)) return 0;
        std::fflush(stdout);
    }
}
