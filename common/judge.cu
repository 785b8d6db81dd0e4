// The judge: run, record, compare, repeat, time, verify (judge.hpp says why each step is there).
#include "judge.hpp"

#include "buffers.hpp"
#include "check.hpp"
#include "device.hpp"
#include "launch_record.hpp"
#include "timing.hpp"

#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <set>
#include <sstream>

namespace workbook {

namespace {

int g_timed_calls = 0;  // time_call()s so far in the running test
std::function<void()> g_before_profiled_call;  // set_before_profiled_call
std::function<void(const std::function<void()>&)> g_reference_route;  // set_reference_route
std::function<void()> g_before_reference_timed, g_after_reference_timed;  // set_reference_timed_alone
std::function<void()> g_before_yours_timed;  // set_before_yours_timed

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

// The fresh value of element i of an input whose values come from `seed`: uniform in [-1, 1), as
// random_floats makes them, from a hash of the seed and the index (splitmix64), so that any timed
// run's values are new. The same on both sides, so the judge can tell what it handed over.
__host__ __device__ inline float fresh_value(std::uint64_t seed, std::size_t i)
{
    std::uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return -1.0f + 2.0f * static_cast<float>(z >> 40) * 0x1p-24f;
}

// Fresh inputs for a timed run (fresh_value).
__global__ void fill_uniform_kernel(float* values, std::size_t n, std::uint64_t seed)
{
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        values[i] = fresh_value(seed, i);
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

//! [output]
// The output of a call: on the device with guard zones, or on the host for a round trip.
class Output {
public:
    explicit Output(const Call& call)
    {
        if (call.host_output) host_.assign(call.shape.count(), 0.0f);
        else device_.emplace(call.shape.count());
    }
    float* data() { return device_ ? device_->data() : host_.data(); }
    void poison()
    {
        if (device_) device_->poison();
        else poison_host(host_);
    }
    std::vector<float> download() const { return device_ ? device_->download() : host_; }
    GuardReport guards() const { return device_ ? device_->check_guards() : GuardReport{}; }
    // Against the reference: on the GPU for a device output, so that a large one stays there.
    Comparison compare_with(const Call& call)
    {
        if (device_) return compare_on_device(call.output, data(), call.expected(), call.shape, call.tolerance);
        return compare(call.output, host_, call.expected().host(), call.shape, call.tolerance);
    }
    // Keeps the output as it is now, for differs_from_kept().
    void keep()
    {
        if (!device_) {
            kept_host_ = host_;
            return;
        }
        if (kept_.size() != device_->size()) kept_ = DeviceBuffer<float>(device_->size());
        if (kept_.size() > 0)
            CUDA_CHECK(cudaMemcpy(kept_.data(), data(), kept_.bytes(), cudaMemcpyDeviceToDevice));
    }
    // Whether the output differs, bit for bit (so NaN equals NaN), from what keep() saved.
    bool differs_from_kept()
    {
        if (!device_) return std::memcmp(kept_host_.data(), host_.data(), host_.size() * sizeof(float)) != 0;
        return count_differences(data(), kept_.data(), kept_.size(), differences_) > 0;
    }

private:
    std::optional<GuardedOutput<float>> device_;
    std::vector<float> host_, kept_host_;
    DeviceBuffer<float> kept_;
    DeviceBuffer<unsigned long long> differences_{1};
};
//! [output]

// Whether a kernel that started between two calls fails the next one (LaunchRecord::after_return).
constexpr bool kJudgeKernelsBetweenCalls = false;

// The CPU time a call of a device function may take beyond one core for the whole call
// (check_cpu_time): set-up costs of an honest call stay far below it.
constexpr double kMostCpuMs = 20;

std::string plural(std::size_t n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

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

// Thrown from a timed run's check to stop the timing at the first wrong run.
struct TimedRunFailed {
    std::string message;
};

//! [fresh inputs]
// A call's inputs, refilled with fresh values before each timed run and put back at the end,
// so that later tests find the case's data as it was.
class FreshInputs {
public:
    explicit FreshInputs(const std::vector<Input>& inputs) : inputs_(inputs)
    {
        next_series();
        for (const Input& input : inputs_) {
            saved_.emplace_back(input.count);
            if (input.count > 0)
                CUDA_CHECK(cudaMemcpy(saved_.back().data(), input.data, input.count * sizeof(float),
                                      cudaMemcpyDeviceToDevice));
        }
    }
    ~FreshInputs()
    {
        for (std::size_t i = 0; i < inputs_.size(); ++i)
            if (inputs_[i].count > 0)
                cudaMemcpy(mutable_data(inputs_[i]), saved_[i].data(), saved_[i].bytes(), cudaMemcpyDeviceToDevice);
        cudaDeviceSynchronize();
    }
    FreshInputs(const FreshInputs&) = delete;
    FreshInputs& operator=(const FreshInputs&) = delete;
    bool any() const { return !inputs_.empty(); }
    // New values for every run from here on: a timing repeated (time_call's retiming) must not
    // find the inputs of the first, which the student's process has already seen.
    void next_series()
    {
        std::random_device entropy;  // not the run's seed: nothing the student's process can know
        base_seed_ = (static_cast<std::uint64_t>(entropy()) << 32) ^ entropy();
    }
    // The inputs of timed run `run` (the same run number gives the same values, for the reference).
    void refill(int run)
    {
        for (std::size_t i = 0; i < inputs_.size(); ++i) {
            if (inputs_[i].count == 0) continue;
            fill_uniform_kernel<<<grid_for(inputs_[i].count), 256>>>(mutable_data(inputs_[i]), inputs_[i].count,
                                                                     seed(run, i));
            CUDA_CHECK(cudaGetLastError());
        }
    }
    // "" when every input still holds the values refill(run) gave it; otherwise what changed
    // (written_input). Checked against the seed, which only the judge knows, never against a
    // buffer the student's process can write.
    std::string written(const Call& call, int run) const
    {
        for (std::size_t i = 0; i < inputs_.size(); ++i) {
            const std::string text = written_input(call, inputs_[i], nullptr, seed(run, i));
            if (!text.empty()) return text;
        }
        return "";
    }

private:
    std::uint64_t seed(int run, std::size_t input) const
    {
        return base_seed_ + 0x100000ull * static_cast<std::uint64_t>(run) + input;
    }
    // The judge owns the case's arrays and puts their contents back: writing them is its right.
    static float* mutable_data(const Input& input) { return const_cast<float*>(input.data); }
    std::vector<Input> inputs_;
    std::vector<DeviceBuffer<float>> saved_;
    std::uint64_t base_seed_ = 0;
};
//! [fresh inputs]

// Whether a timed run's output matches the reference solution's on the same input, within twice
// the call's tolerance (each is within the tolerance of the exact result); a report if not.
std::string against_reference_output(const Call& call, const float* got, const float* expected)
{
    const Tolerance twice{2 * call.tolerance.abs, 2 * call.tolerance.rel,
                          "twice the tolerance (" + call.tolerance.why + "): your output and the reference "
                          "solution's are each within it of the exact result"};
    const Comparison comparison = compare_on_device(call.output, got, expected, call.shape, twice);
    return comparison.ok() ? "" : comparison.report();
}

// A profiler run's one launch (see explain_slowness in tools.hpp): when this is the timed call
// asked for (WORKBOOK_PROFILE_CALL, the first by default), the chosen side's call runs once,
// inside the NVTX range "workbook-profile" that ncu profiles, so that ncu sees that kernel alone.
void launch_for_profiler(const Call& yours, const std::function<void(float* out)>& reference, const char* who,
                         int index)
{
    const char* wanted = std::getenv("WORKBOOK_PROFILE_CALL");
    if (index != (wanted ? std::atoi(wanted) : 0)) return;
    Output out(yours);
    out.poison();
    if (yours.setup) yours.setup();
    nvtxRangePushA("workbook-profile");
    if (std::strcmp(who, "reference") == 0) {
        reference(out.data());
    } else {
        if (g_before_profiled_call) g_before_profiled_call();
        yours.run(out.data());
    }
    CUDA_CHECK_LAUNCH("the profiled launch");
    nvtxRangePop();
}

// The check after one of the student's timed runs, whose output is in `out`: a run that skips
// the work, or answers from a memo of earlier outputs, must fail as a judged run would. Checks
// what it launched, the guards, and the output: against the reference solution's on the run's
// fresh input, or, without declared inputs, against the verified output. Throws TimedRunFailed.
void check_timed_run(const Call& yours, const std::function<void(float* out)>& reference, const std::string& where,
                     const FreshInputs& fresh, int fill, Output& out, Output& theirs_out)
{
    const bool fresh_inputs = fresh.any();
    const std::string wrong_launch = check_record(yours, end_recording(), {});
    if (!wrong_launch.empty()) throw TimedRunFailed{where + ": " + wrong_launch};
    const GuardReport guards = out.guards();
    if (!guards.intact()) throw TimedRunFailed{where + ": " + guards.describe(yours.output, yours.shape.count())};
    if (fresh_inputs) {
        // The inputs first: the reference solution below runs on them, and must see what the
        // judge handed over, not what the student's kernel left there.
        const std::string written = fresh.written(yours, fill);
        if (!written.empty()) throw TimedRunFailed{where + ": " + written};
        // The reference solution, on this run's input: what the output must be.
        theirs_out.poison();
        reference(theirs_out.data());
        CUDA_CHECK_LAUNCH("the reference solution");
        const std::string wrong = against_reference_output(yours, out.data(), theirs_out.data());
        if (!wrong.empty())
            throw TimedRunFailed{where + ": the output is wrong for this run's input, fresh random values "
                                 "that no earlier run had, although the runs before timing were right. "
                                 "Every timed run must compute its output from its input.\n" + wrong};
        return;
    }
    // Without declared inputs: judge_into kept the last judged run's output, verified.
    if (!out.differs_from_kept()) return;
    // Not bit for bit the verified output: still right if within the tolerance (atomics
    // may add in another order every time).
    const Comparison again = out.compare_with(yours);
    if (!again.ok())
        throw TimedRunFailed{where + ": the output is wrong, although the runs before timing were "
                             "right. Every timed run must do the whole work.\n" + again.report()};
}

//! [timed runs]
// The student's timed runs: before each, fresh inputs and a poisoned output; after each, the
// check (check_timed_run), so that every run timed is a run verified.
Timing time_yours(const Call& yours, const std::function<void(float* out)>& reference, FreshInputs& fresh,
                  Output& out, Output& theirs_out)
{
    // The call's setup again (lab 07's mask, copied into constant memory): the process that runs
    // the student's code may have been started afresh since judge_into ran it, and holds nothing
    // an earlier call left there. A checker stops it before the reference's timing where a pause
    // leaves the GPU busy, or where it has no PID namespace, and a too-slow timing is then timed
    // again in the new process.
    if (g_before_yours_timed) g_before_yours_timed();
    if (yours.setup) yours.setup();
    int run = 0, filled = 0, checking = 0;
    TimingOptions checked;
    checked.before_each = [&] {
        // Each run its own fresh values, also where runs are queued into one batch before any
        // of them is checked (grading's clock.hpp).
        if (fresh.any()) fresh.refill(filled);
        ++filled;
        out.poison();
        begin_recording();
    };
    // Which run's fresh values the next check is about (a batch prepares all its runs first).
    checked.before_check = [&](int prepared) { checking = prepared; };
    checked.after_each = [&] {
        ++run;
        const std::string where = "timed run " + std::to_string(run) + " of " +
                                  std::to_string(checked.warmup + checked.repetitions) + " (" + yours.what + ")";
        check_timed_run(yours, reference, where, fresh, checking, out, theirs_out);
    };
    return time_gpu([&] { yours.run(out.data()); }, checked);
}

// The reference's timed runs, on the same sequence of inputs as the student's: a fair race.
Timing time_reference(const Call& yours, const std::function<void(float* out)>& reference, FreshInputs& fresh,
                      Output& theirs_out)
{
    int reference_run = 0;
    TimingOptions fair;  // the reference's runs see the same inputs, on the same poisoned output
    fair.before_each = [&] {
        if (fresh.any()) fresh.refill(reference_run++);
        theirs_out.poison();
    };
    // The student's code stops first, whatever it left running: the GPU is the reference's alone.
    if (g_before_reference_timed) g_before_reference_timed();
    Timing theirs;
    if (g_reference_route) {
        // The same call, sent to the reference solution's runner: timed exactly as yours.
        if (yours.setup) g_reference_route(yours.setup);
        theirs = time_gpu([&] { g_reference_route([&] { yours.run(theirs_out.data()); }); }, fair);
    } else {
        theirs = time_gpu([&] { reference(theirs_out.data()); }, fair);
    }
    if (g_after_reference_timed) g_after_reference_timed();
    return theirs;
}
//! [timed runs]

// Takes a batch's fixed cost, as the reference's timing measured it on its own runner, off both
// sides' batches (grading's clock.hpp): what the judge's clock adds to a batch beyond its runs
// is the same for both runners, and the student's runner cannot make it larger.
void take_off_batch_cost(Timing& mine, Timing& theirs)
{
    const double cost = theirs.batch_cost_ms;
    mine = mine.less_batch_cost(cost);
    theirs = theirs.less_batch_cost(cost);
}

// Why a rate beyond what the GPU can physically do fails: the timed runs cannot have done the
// work they are credited with.
std::string beyond_physical_limit(double rate, double limit, Ceiling ceiling)
{
    std::ostringstream text;
    text << "your kernel's figure, " << versus(rate, ceiling) << ", is beyond what this GPU "
         << "can physically do ("
         << (ceiling == Ceiling::copy   ? "its copy bandwidth, plus 10% for timing noise: "
             : ceiling == Ceiling::fp32 ? "its FP32 peak from SM count, clock and FP32 lanes: "
             : ceiling == Ceiling::tf32 ? "its TF32 tensor-core peak from SM count, clock and TF32 operations per clock: "
                                        : "its TF32 tensor-core peak, which a product to FP32's accuracy, several "
                                          "tensor-core products in one, cannot pass: ")
         << static_cast<long>(limit) << (ceiling == Ceiling::copy ? " GB/s" : " GFLOP/s")
         << "). The timed runs cannot have done the work they are credited with.";
    return text.str();
}

// The verdict on the two timings: both rates set beside the ceiling, then ok unless the
// student's figure is impossible or slower than kSpeedFloor allows.
void judge_speed(SpeedVerdict& verdict, const Timing& mine, const Timing& theirs, const Work& work)
{
    //! [versus]
    verdict.rate = mine.giga_per_second(work.amount);
    verdict.yours = "your kernel: " + versus(verdict.rate, work.ceiling) + ", " + mine.describe();
    verdict.reference = "reference:   " + versus(theirs.giga_per_second(work.amount), work.ceiling) + ", " +
                        theirs.describe();
    //! [versus]
    const double limit = physical_limit(work.ceiling);
    if (verdict.rate > limit) {
        verdict.impossible = true;
        verdict.message = beyond_physical_limit(verdict.rate, limit, work.ceiling);
        return;
    }
    verdict.speed = theirs.seconds() / mine.seconds();
    if (verdict.speed < kSpeedFloor) {
        std::ostringstream text;
        text.precision(3);
        text << "your kernel takes " << 1 / verdict.speed << "x the reference's time (at most "
             << 1 / kSpeedFloor << "x earns these points).";
        verdict.slow = true;
        verdict.message = text.str();
        return;
    }
    verdict.ok = true;
}

}  // namespace

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

std::string versus(double rate, Ceiling ceiling)
{
    switch (ceiling) {
    case Ceiling::copy: return versus_copy(rate);
    case Ceiling::fp32: return versus_sgemm(rate);
    case Ceiling::tf32: return versus_tf32(rate);
    case Ceiling::fp32_on_tensor_cores: return versus_sgemm(rate);
    }
    return "";
}

double physical_limit(Ceiling ceiling)
{
    // Measured here, not taken from the environment, which the student's file could change.
    switch (ceiling) {
    case Ceiling::copy: return 1.10 * measured_copy_gbs();
    case Ceiling::fp32: return fp32_peak_gflops();
    case Ceiling::tf32:
    case Ceiling::fp32_on_tensor_cores: return tf32_peak_gflops();
    }
    return 0;
}

void judge_test_started() { g_timed_calls = 0; }

void set_before_profiled_call(std::function<void()> before) { g_before_profiled_call = std::move(before); }

void set_reference_route(std::function<void(const std::function<void()>&)> route) { g_reference_route = std::move(route); }

void set_before_yours_timed(std::function<void()> before) { g_before_yours_timed = std::move(before); }

void set_reference_timed_alone(std::function<void()> before, std::function<void()> after)
{
    g_before_reference_timed = std::move(before);
    g_after_reference_timed = std::move(after);
}

SpeedVerdict time_call(const Call& yours, const std::function<void(float* out)>& reference, const Work& work)
{
    SpeedVerdict verdict;
    const int index = g_timed_calls++;
    verdict.call = index;
    // Under Nsight Compute (see explain_slowness in tools.hpp): one launch, nothing timed.
    if (const char* who = std::getenv("WORKBOOK_PROFILE")) {
        launch_for_profiler(yours, reference, who, index);
        verdict.profiled = true;
        return verdict;
    }

    // Traced (WORKBOOK_CLOCK_TRACE): where a timed call's time goes, phase by phase.
    static const bool traced = std::getenv("WORKBOOK_CLOCK_TRACE") != nullptr;
    const auto started = std::chrono::steady_clock::now();
    const auto phase = [&](const char* what) {
        if (traced)
            std::printf("time_call %d: %s at %.1f ms\n", index, what,
                        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
    };
    Output out(yours);
    const Verdict correct = judge_into(yours, {}, out);
    phase("judged");
    if (!correct.ok) {
        verdict.message = "not timed: " + yours.function + " is wrong at " + yours.what +
                          ". Make the correctness tests pass first.\n" + correct.message;
        return verdict;
    }
    FreshInputs fresh(yours.inputs);
    Output theirs_out(yours);  // the reference's output for the same input
    phase("fresh inputs made");
    const auto failed_runs = [index](const TimedRunFailed& failed) {
        SpeedVerdict failed_verdict;
        failed_verdict.call = index;
        failed_verdict.message = "the timed runs were checked too, and " + failed.message;
        return failed_verdict;
    };
    // Both sides timed, the student's first, each less a batch's fixed cost as the reference's
    // runner measured it; a timed run of the student's that fails stops it, and is returned.
    const auto time_both = [&](Timing& mine, Timing& theirs) -> std::optional<TimedRunFailed> {
        try {
            mine = time_yours(yours, reference, fresh, out, theirs_out);
        } catch (const TimedRunFailed& failed) {
            return failed;
        }
        phase("yours timed");
        theirs = time_reference(yours, reference, fresh, theirs_out);
        phase("reference timed");
        take_off_batch_cost(mine, theirs);
        return std::nullopt;
    };
    Timing mine, theirs;
    if (const auto failed = time_both(mine, theirs)) return failed_runs(*failed);
    judge_speed(verdict, mine, theirs, work);
    if (!verdict.slow && !verdict.impossible) return verdict;
    // Too slow, or impossibly fast: timed once more, both sides. Another process's work on the
    // GPU (a checker's CUDA ending, a tool's starting) only ever adds time, to a call or to the
    // round trip the judge takes off, and it can fall on the one timing of a correct kernel. Too
    // slow: each side's faster timing counts. Impossible: the new timings count.
    std::ostringstream note;
    note.precision(3);
    if (verdict.slow)
        note << " (timed twice, each side's faster timing counts; the first took " << 1 / verdict.speed
             << "x the reference's time)";
    else
        note << " (timed twice, the second timing counts; the first, " << mine.ms_per_run()
             << " ms, was beyond what this GPU can do)";
    Timing again, theirs_again;
    fresh.next_series();
    if (const auto failed = time_both(again, theirs_again)) return failed_runs(*failed);
    const bool keep_faster = verdict.slow;
    if (!keep_faster || again.seconds() < mine.seconds()) mine = again;
    if (!keep_faster || theirs_again.seconds() < theirs.seconds()) theirs = theirs_again;
    SpeedVerdict second;
    second.call = index;
    judge_speed(second, mine, theirs, work);
    second.yours += note.str();
    return second;
}

}  // namespace workbook
