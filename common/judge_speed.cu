// The judge's timed runs: fresh inputs, every timed run checked, both sides timed, the verdict on speed.
#include "judge.hpp"
#include "judge_internal.cuh"

#include "buffers.hpp"
#include "check.hpp"
#include "device.hpp"
#include "launch_record.hpp"
#include "timing.hpp"

#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <sstream>

namespace workbook {

using namespace detail;  // what judge.cu and judge_speed.cu share (judge_internal.cuh)

namespace {

int g_timed_calls = 0;  // time_call()s so far in the running test
std::function<void()> g_before_profiled_call;  // set_before_profiled_call
std::function<void(const std::function<void()>&)> g_reference_route;  // set_reference_route
std::function<void()> g_before_reference_timed, g_after_reference_timed;  // set_reference_timed_alone
std::function<void()> g_before_yours_timed;  // set_before_yours_timed
std::function<double(int)> g_expected_reference_ms;  // set_reference_record
std::function<void()> g_stop_student;                // set_reference_record

// Fresh inputs for a timed run (fresh_value).
__global__ void fill_uniform_kernel(float* values, std::size_t n, std::uint64_t seed)
{
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        values[i] = fresh_value(seed, i);
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

// The reference's figure checked against the reference run's own, `expected` ms per run: one
// further than kReferenceDrift from it is timed again with every process of the student's stopped
// and the GPU idle, and the record counts if the new figure is still off. Returns what the
// "reference:" line adds ("" when the first figure was near the record); `theirs` becomes the
// figure that counts.
std::string check_reference_figure(double expected, Timing& theirs, const std::function<Timing()>& time_again)
{
    const auto off = [expected](const Timing& t) {
        const double ratio = t.ms_per_run() / expected;
        return ratio > kReferenceDrift || ratio < 1 / kReferenceDrift;
    };
    if (!(expected > 0) || !off(theirs)) return "";
    std::ostringstream note;
    note.precision(4);
    note << " (the first timing here, " << theirs.ms_per_run() << " ms, was " << theirs.ms_per_run() / expected
         << "x the reference run's own " << expected << " ms; timed again with your process stopped: ";
    if (g_stop_student) g_stop_student();
    Timing again = time_again();
    again = again.less_batch_cost(again.batch_cost_ms);
    note << again.ms_per_run() << " ms";
    if (!off(again)) {
        theirs = again;
        note << ", which counts)";
    } else {
        theirs = Timing{};
        theirs.ms = summarize({expected});
        note << ", still off, so the reference run's " << expected << " ms counts)";
    }
    return note.str();
}

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

void set_reference_record(std::function<double(int call)> expected_ms, std::function<void()> stop_student)
{
    g_expected_reference_ms = std::move(expected_ms);
    g_stop_student = std::move(stop_student);
}

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
    // runner measured it, and the reference's figure checked against its own run's
    // (check_reference_figure); a timed run of the student's that fails stops it, and is returned.
    std::string reference_note;
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
        reference_note += check_reference_figure(
            g_expected_reference_ms ? g_expected_reference_ms(index) : 0, theirs,
            [&] { return time_reference(yours, reference, fresh, theirs_out); });
        if (!reference_note.empty()) phase("reference timed again");
        return std::nullopt;
    };
    Timing mine, theirs;
    if (const auto failed = time_both(mine, theirs)) return failed_runs(*failed);
    judge_speed(verdict, mine, theirs, work);
    verdict.reference += reference_note;
    verdict.reference_ms = theirs.ms_per_run();
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
    second.reference += reference_note;
    second.reference_ms = theirs.ms_per_run();
    return second;
}

}  // namespace workbook
