// The judge's judged runs: run, record, compare, repeat (judge.hpp says why; timed runs: judge_speed.cu).
#include "judge.hpp"
#include "judge_internal.cuh"

#include "buffers.hpp"
#include "check.hpp"
#include "launch_record.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>
#include <sstream>

namespace workbook {

using namespace detail;  // what judge.cu and judge_speed.cu share (judge_internal.cuh)

namespace {

// Counts the 32-bit words in which two device arrays differ: a timed run's output against the
// verified one, without copying either to the host.
__global__ void count_differences_kernel(const unsigned* a, const unsigned* b, std::size_t n,
                                         unsigned long long* count)
{
    unsigned long long local = 0;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        local += a[i] != b[i];
    for (int offset = 16; offset > 0; offset /= 2) local += __shfl_down_sync(0xffffffffu, local, offset);
    if (threadIdx.x % 32 == 0 && local > 0) atomicAdd(count, local);
}

// The first index at which `values` differs, bit for bit, from what the judge handed over: the
// judge's own copy `kept`, or where that is null the fresh values of `seed`. `first` starts at
// the largest index, which means "none".
__global__ void first_change_kernel(const float* values, const float* kept, std::uint64_t seed, std::size_t n,
                                    unsigned long long* first)
{
    unsigned long long local = ~0ull;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        const float handed = kept ? kept[i] : fresh_value(seed, i);
        if (__float_as_uint(values[i]) != __float_as_uint(handed)) {
            local = i;
            break;  // this thread's later indices are larger
        }
    }
    for (int offset = 16; offset > 0; offset /= 2) local = min(local, __shfl_down_sync(0xffffffffu, local, offset));
    if (threadIdx.x % 32 == 0 && local != ~0ull) atomicMin(first, local);
}

}  // namespace

namespace detail {

int grid_for(std::size_t n) { return static_cast<int>(std::min<std::size_t>((n + 255) / 256, 4096)); }

std::size_t count_differences(const float* a, const float* b, std::size_t n, DeviceBuffer<unsigned long long>& count)
{
    count.fill_bytes(0);
    if (n > 0) {
        count_differences_kernel<<<grid_for(n), 256>>>(reinterpret_cast<const unsigned*>(a),
                                                  reinterpret_cast<const unsigned*>(b), n, count.data());
        CUDA_CHECK_LAUNCH("the judge's comparison of two outputs");
    }
    return static_cast<std::size_t>(count.download()[0]);
}

// "" when `input` is bit for bit what the judge handed over (its copy `kept`, or the fresh values
// of `seed` where `kept` is null); otherwise what changed, first element first. A kernel that
// writes its input is a real bug (arguments swapped, an update in place), and in a timed run it
// would make the reference solution, run on that input afterwards, agree with it.
std::string written_input(const Call& call, const Input& input, const float* kept, std::uint64_t seed)
{
    if (input.count == 0) return "";
    DeviceBuffer<unsigned long long> first(1);
    first.fill_bytes(0xff);
    first_change_kernel<<<grid_for(input.count), 256>>>(input.data, kept, seed, input.count, first.data());
    CUDA_CHECK_LAUNCH("the judge's check of the inputs");
    const unsigned long long index = first.download()[0];
    if (index >= input.count) return "";
    float now = 0, was = 0;
    CUDA_CHECK(cudaMemcpy(&now, input.data + index, sizeof now, cudaMemcpyDeviceToHost));
    if (kept) CUDA_CHECK(cudaMemcpy(&was, kept + index, sizeof was, cudaMemcpyDeviceToHost));
    else was = fresh_value(seed, static_cast<std::size_t>(index));
    std::ostringstream text;
    text.precision(7);
    text << "your kernel wrote to its input `" << input.name << "`: " << input.name << "[" << index << "] was "
         << was << ", is now " << now << " (after every call the judge compares each input, bit for bit, with "
         << "what it handed over).\nHint: " << call.function << " only reads `" << input.name << "` (a const "
         << "pointer): look for a kernel that writes through it, such as arguments passed in the wrong order, "
         << "a result stored in place, or an index that runs past the end of another array.";
    return text.str();
}

}  // namespace detail

namespace {

// The call's inputs as the judge handed them over, in copies of its own that the student's
// process has no mapping of: checked after every judged run, and put back when a run wrote them,
// so that later tests find the case as it was.
class KeptInputs {
public:
    explicit KeptInputs(const std::vector<Input>& inputs) : inputs_(inputs)
    {
        for (const Input& input : inputs_) {
            copies_.emplace_back(input.count);
            if (input.count > 0)
                CUDA_CHECK(cudaMemcpy(copies_.back().data(), input.data, input.count * sizeof(float),
                                      cudaMemcpyDeviceToDevice));
        }
    }
    // "" or what the run wrote to an input (written_input); the inputs are put back then.
    std::string check(const Call& call)
    {
        for (std::size_t i = 0; i < inputs_.size(); ++i) {
            const std::string written = written_input(call, inputs_[i], copies_[i].data(), 0);
            if (written.empty()) continue;
            put_back();
            return written;
        }
        return "";
    }

private:
    void put_back()
    {
        for (std::size_t i = 0; i < inputs_.size(); ++i)
            if (inputs_[i].count > 0)
                CUDA_CHECK(cudaMemcpy(const_cast<float*>(inputs_[i].data), copies_[i].data(), copies_[i].bytes(),
                                      cudaMemcpyDeviceToDevice));
    }
    std::vector<Input> inputs_;
    std::vector<DeviceBuffer<float>> copies_;
};

// Whether a kernel that started between two calls fails the next one (LaunchRecord::after_return).
constexpr bool kJudgeKernelsBetweenCalls = false;

// The CPU time a call of a device function may take beyond one core for the whole call
// (check_cpu_time): set-up costs of an honest call stay far below it.
constexpr double kMostCpuMs = 20;

std::string plural(std::size_t n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

}  // namespace

namespace detail {

// What a run's recording says is wrong with how the work was done, or "".
std::string check_record(const Call& call, const LaunchRecord& record, const JudgeOptions& options)
{
    if (!record.unavailable.empty())
        return "what it launched could not be recorded: " + record.unavailable;
    if (record.kernels.empty())
        return "launched no kernel on the GPU.\nHint: the work must be done by a __global__ kernel "
               "that " + call.function + " launches; host code, copies and cudaMemset do not count.";
    if (options.own_kernels) {
        const std::set<std::string>& own = student_kernels();
        std::set<std::string> foreign;
        for (const std::string& kernel : record.kernels)
            if (!own.count(kernel)) foreign.insert(kernel);
        if (!foreign.empty()) {
            std::string text = "ran " + plural(foreign.size(), "kernel") + " that your file does not define:";
            for (const std::string& kernel : foreign)
                text += "\n  " + kernel_display_name(kernel) + " (" + kernel_origin(kernel) + ")";
            return text + "\nHint: a lab is graded on the kernel you write. Calling cuBLAS, cuDNN, "
                          "Thrust or another library instead earns no points.";
        }
    }
    if (!record.still_running.empty())
        return "your kernel " + kernel_display_name(record.still_running.front()) + " was still running when " +
               call.function + " returned: it ran on a stream that the default stream does not wait for "
               "(one created with cudaStreamNonBlocking, say), so whoever calls " + call.function +
               " next may read " + call.output + " before it is written.\nHint: wait for that stream "
               "(cudaStreamSynchronize) before returning, or launch on the default stream; and launch "
               "nothing from a thread of yours after the call has returned.";
    if (record.left_running_ms > 0) {
        std::ostringstream text;
        text.precision(2);
        text << std::fixed << "your process was still running GPU work " << record.left_running_ms << " ms after "
             << call.function << " returned (the judge pauses your process once a call has returned, then "
             << "waits until the GPU is idle before it reads " << call.output << ").\nHint: wait for every "
             << "stream and every thread you started (cudaStreamSynchronize, join) before " << call.function
             << " returns, and launch nothing after it has returned.";
        return text.str();
    }
    // Kernels between calls: recorded, not yet judged (unproven on a GPU: issue 63).
    if (kJudgeKernelsBetweenCalls && !record.after_return.empty()) {
        std::ostringstream text;
        text.precision(2);
        text << std::fixed << "your process launched " << kernel_display_name(record.after_return.front())
             << " after the previous call of your code had returned (" << record.after_return_ms << " ms after), "
             << "and before this one began: work done between calls is work nobody waits for or times.\nHint: "
             << "launch every kernel from inside the call, on a stream the call waits for before it returns; a "
             << "thread of yours must be joined before the call returns.";
        return text.str();
    }
    if (!call.host_output && record.pinned_bytes > 0)
        return "held " + std::to_string(record.pinned_bytes) + " bytes of page-locked host memory (from "
               "cudaHostAlloc, cudaMallocHost or cudaHostRegister) while " + call.function + " ran. A kernel "
               "reads and writes such memory in place, so the CPU could do the work there; " + call.function +
               "'s arrays live on the device.\nHint: only a host round trip may stage through page-locked "
               "memory, and it must free it (cudaFreeHost, cudaHostUnregister) before it returns.";
    // A device output is the kernel's to compute, from inputs in device memory: copying as much
    // as half of it to the host is the data a computation on the host needs. A few values (a
    // debugging print, a flag, a sample of the inputs) stay under a page, 4 KiB, and never count:
    // at the small sizes that is all of an output, and the larger sizes of every lab catch a
    // computation on the host.
    const std::size_t output_bytes = call.shape.count() * sizeof(float);
    if (!call.host_output && record.device_to_host_bytes >= 4096 && record.device_to_host_bytes * 2 >= output_bytes)
        return "copied " + std::to_string(record.device_to_host_bytes) + " bytes from the device to the host "
               "during the call (copies and managed-memory migrations counted), at least half the size of " +
               call.output + " (" + std::to_string(output_bytes) + " bytes). " + call.function + "'s arrays "
               "live on the device, and its work is graded as done there, by your kernel.\nHint: remove the "
               "copies to the host; compute " + call.output + " in the kernel, from the inputs in device memory.";
    if (record.device_to_host_bytes < call.copies_back_bytes)
        return "moved " + std::to_string(record.device_to_host_bytes) + " bytes from the device to the host "
               "(copies and managed-memory migrations counted), and " + call.output + " alone is " +
               std::to_string(call.copies_back_bytes) + " bytes: " + call.output + " did not come back from "
               "the GPU.\nHint: after the kernel, copy the result back with cudaMemcpy(..., "
               "cudaMemcpyDeviceToHost), or read it from managed memory after cudaDeviceSynchronize().";
    return "";
}

}  // namespace detail

namespace {

// What the CPU time of a call's runs says (judge_into): a call of a device function whose every
// counted run kept the CPU busy for more than the whole call and kMostCpuMs more, more than one
// core's worth, had work done on the host, even where no copy shows it (memory the GPU and the
// CPU share needs none). The runner's own waits, which spin where it may use 8 cores or more, and
// the student's code, which may spin while it waits for its own stream, take turns on one thread:
// one core busy at most. A run that had to map new arrays
// or load the student's module is not counted, and neither is a one-off cost that other runs did
// not pay.
std::string check_cpu_time(const Call& call, const std::vector<LaunchRecord>& runs)
{
    const LaunchRecord* least = nullptr;
    for (const LaunchRecord& run : runs)
        if (run.cpu_counted && (least == nullptr || run.host_cpu_ms - run.call_ms < least->host_cpu_ms - least->call_ms))
            least = &run;
    if (call.host_output || least == nullptr) return "";
    if (least->host_cpu_ms <= least->call_ms + kMostCpuMs) return "";
    return "kept the CPU busy for at least " + std::to_string(std::lround(least->host_cpu_ms)) + " ms of the call's " +
           std::to_string(std::lround(least->call_ms)) + " ms, in every run: more than one core the whole time (the "
           "processes that run your code, as the kernel counts their time). " + call.function + "'s work is graded "
           "as done by your kernel on the GPU.\nHint: compute " + call.output + " in a kernel, from the inputs in "
           "device memory, and do no work of the call on the host.";
}

std::string race_text(const Call& call)
{
    return "The output changes from one run to the next on the same input: a race. " +
           (call.race_hint.empty() ? std::string("Do threads read shared memory before other threads "
                                                 "have written it (a missing __syncthreads()), or do "
                                                 "several threads write the same element?")
                                   : call.race_hint);
}

}  // namespace

namespace detail {

// judge_call's work, leaving the last run's output in `out` for time_call.
Verdict judge_into(const Call& call, const JudgeOptions& options, Output& out)
{
    const std::string where = call.function + ", " + call.what;
    Comparison previous_comparison;
    Failure failure;
    int failed_runs = 0, first_failed = 0;
    bool changes = false;
    if (call.setup) call.setup();
    std::vector<LaunchRecord> records;
    KeptInputs inputs(call.inputs);
    //! [judge]
    for (int run = 1; run <= options.runs; ++run) {
        out.poison();
        begin_recording();
        call.run(out.data());
        CUDA_CHECK_LAUNCH(call.function.c_str());
        records.push_back(end_recording());
        const std::string wrong_launch = check_record(call, records.back(), options);
        if (!wrong_launch.empty()) return {false, where + ": " + wrong_launch};
        const std::string written = inputs.check(call);
        if (!written.empty()) return {false, where + ": " + written};

        const GuardReport guards = out.guards();
        // A run identical to the one before has the same comparison: only changes are compared again.
        const bool same = run > 1 && !out.differs_from_kept();
        changes |= run > 1 && !same;
        Comparison comparison = same ? previous_comparison : out.compare_with(call);
        if (!(comparison.ok() && guards.intact()) && failed_runs++ == 0) {
            first_failed = run;
            failure = {comparison, guards, out.download()};
        }
        out.keep();
        previous_comparison = std::move(comparison);
    }
    //! [judge]
    const std::string on_the_cpu = check_cpu_time(call, records);
    if (!on_the_cpu.empty()) return {false, where + ": " + on_the_cpu};
    if (failed_runs == 0) return {true, ""};

    std::ostringstream message;
    message << where << ":\n";
    if (failed_runs < options.runs)
        message << "  " << failed_runs << " of " << options.runs << " identical runs failed (the first: run "
                << first_failed << "); a test passes only when every run does.\n";
    if (!failure.guards.intact()) message << "  " << failure.guards.describe(call.output, call.shape.count()) << "\n";
    // Writes outside the output change from run to run too: the lab's diagnosis names them first.
    const bool race = changes && failure.guards.intact();
    message << failure.comparison.report() << "Hint: "
            << (race ? race_text(call) : call.diagnose ? call.diagnose(failure) : std::string("compare your "
                "output with the reference above."));
    return {false, message.str()};
}

}  // namespace detail

Verdict judge_call(const Call& call, const JudgeOptions& options)
{
    Output out(call);
    return judge_into(call, options, out);
}

void run_once(const Call& call)
{
    Output out(call);
    if (call.setup) call.setup();
    call.run(out.data());
    CUDA_CHECK_LAUNCH(call.function.c_str());
}

}  // namespace workbook
