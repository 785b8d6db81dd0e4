// The judge's clock (clock.hpp): the round trip taken off each call, the size of a batch, and
// time_gpu's timing of calls into the runner, one run at a time or in batches.
#include "clock.hpp"

#include "calls.hpp"

#include "common/buffers.hpp"
#include "common/check.hpp"
#include "common/stats.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

namespace workbook::remote {

namespace {
double g_round_trip_ms = -1;  // the last measure_round_trip's
double g_fastest_round_trip_ms = -1;  // the fastest measure_round_trip has seen in this process

// The fastest of a series of pings to `trusted`, in milliseconds.
double fastest_ping(Runner& trusted, std::vector<double>& ms)
{
    static DeviceBuffer<unsigned char> touch(1 << 20);
    constexpr int kWarmup = 2, kTimed = 11;
    ms.clear();
    Runner::Timeline fastest;
    for (int i = 0; i < kWarmup + kTimed; ++i) {
        // As before a timed call: the judge's own GPU work (an L2 flush, say) just done.
        CUDA_CHECK(cudaMemsetAsync(touch.data(), i, touch.bytes()));
        trusted.call(wire::Message(wire::Op::ping), "a ping");
        if (i >= kWarmup) {
            if (ms.empty() || trusted.last_call_ms() < *std::min_element(ms.begin(), ms.end()))
                fastest = trusted.last_timeline();
            ms.push_back(trusted.last_call_ms());
        }
        trusted.take_record();
    }
    if (clock_trace() > 0) std::printf("clock: fastest ping: %s\n", fastest.legs().c_str());
    return *std::min_element(ms.begin(), ms.end());
}
}  // namespace

double measure_round_trip()
{
    // Pinged on the reference solution's runner: the same dispatcher, and no student code in it
    // that could slow the pings down to have its own calls credited with less.
    if (!has_reference_runner()) throw std::runtime_error("checker bug: no reference runner was built");
    Runner& trusted = reference_runner();
    std::vector<double> ms;
    double fastest = 0;
    Runner& student = student_runner();
    if (g_fastest_round_trip_ms < 0 && student.pid() > 0) {
        // The first series sets the bar for every later one (a slower series is taken as at most
        // kRoundTripDrift times the fastest): it is measured with the student's runner off the
        // GPU. A process of theirs that kept the GPU busy from the start would otherwise slow
        // every series, and have a longer round trip taken off each of its own calls.
        student.hold_off_gpu();
        fastest = fastest_ping(trusted, ms);
        student.resume();
    } else {
        fastest = fastest_ping(trusted, ms);
    }
    // Another process's work on the GPU (a checker's runners starting CUDA, say) can lengthen
    // every ping of a series, and a round trip taken as too long makes calls fast, even
    // impossibly so. A series much slower than the fastest this process has seen is measured
    // again, a few times, and the round trip is never taken as more than half as long again as
    // that fastest: a call is then charged a little more, never credited with less than it took.
    if (g_fastest_round_trip_ms > 0)
        for (int again = 0; again < 5 && fastest > kRoundTripDrift * g_fastest_round_trip_ms; ++again) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            fastest = std::min(fastest, fastest_ping(trusted, ms));
        }
    if (g_fastest_round_trip_ms < 0) {
        const Summary trip = summarize(ms);
        std::printf("round trip to a runner: %.4f ms (fastest of %zu; median %.4f ms): taken off each timed call "
                    "or batch of your code, measured again before each timing\n", trip.min, trip.count, trip.median);
        std::fflush(stdout);
        g_fastest_round_trip_ms = fastest;
    }
    g_fastest_round_trip_ms = std::min(g_fastest_round_trip_ms, fastest);
    g_round_trip_ms = std::min(fastest, kRoundTripDrift * g_fastest_round_trip_ms);
    return g_round_trip_ms;
}

bool gpu_idle()
{
    // Measured by the grader's device_query, on a GPU that no student's code had touched: not
    // here, where the student's processes may already keep the GPU busy.
    static const double idle_ms = [] {
        const char* value = std::getenv("WORKBOOK_IDLE_TURN_MS");
        return value == nullptr ? -1.0 : std::atof(value);
    }();
    if (!(idle_ms > 0)) return false;
    const double turn = median_turn_ms(9);
    // Another context's kernel holds the GPU until its time slice ends (on an H100, a call of the
    // student's took 6.8 ms instead of 0.3 while slows_the_reference kept the GPU busy); an idle
    // GPU's turn varies by microseconds.
    const bool idle = turn <= 2 * idle_ms + 0.05;
    if (clock_trace() > 0)
        std::printf("clock: GPU idle check, the judge's turn %.4f ms, on the idle GPU %.4f ms: %s\n", turn, idle_ms,
                    idle ? "idle" : "busy");
    return idle;
}

int clock_trace()
{
    static const int level = [] {
        const char* value = std::getenv("WORKBOOK_CLOCK_TRACE");
        return value == nullptr ? 0 : std::max(std::atoi(value), 1);
    }();
    return level;
}

double round_trip_ms() { return g_round_trip_ms < 0 ? measure_round_trip() : g_round_trip_ms; }

int batch_size(double call_ms, std::size_t bytes)
{
    int runs = static_cast<int>(std::ceil(kBatchMs / std::max(call_ms, 1e-3)));
    runs = std::clamp(runs, 1, kMaxBatch);
    if (bytes > 0) {
        std::size_t free = 0, total = 0;
        CUDA_CHECK(cudaMemGetInfo(&free, &total));
        const double room = std::min(static_cast<double>(free) * kBatchMemoryShare, kBatchMemoryMost);
        const auto fits = room / static_cast<double>(bytes);
        runs = std::min(runs, static_cast<int>(std::max(fits, 1.0)));
    }
    return runs;
}

namespace {

// Ends timing in batches however the timing ends (a failed run's check throws).
struct Batching {
    explicit Batching(int slots) { begin_batches(slots); }
    ~Batching() { end_batches(); }
    Batching(const Batching&) = delete;
    Batching& operator=(const Batching&) = delete;
};

bool enough(const std::vector<double>& samples, int runs_per_sample, const TimingOptions& options, int wanted)
{
    const double total = std::accumulate(samples.begin(), samples.end(), 0.0) * runs_per_sample;
    return static_cast<int>(samples.size()) >= wanted ||
           (static_cast<int>(samples.size()) >= std::min(options.min_repetitions, wanted) && total >= options.enough_ms);
}

//! [time calls]
// time_gpu's timing of a launch that calls into the runner; its first warm-up run is done.
Timing time_calls(const std::function<void()>& launch, const TimingOptions& options)
{
    // Measured afresh before each timing: a machine busy for a while (another process starting
    // CUDA, say) lengthens every ping then, and a round trip taken as too long makes calls fast.
    const auto timing_started = std::chrono::steady_clock::now();
    measure_round_trip();
    // One run, unbatched: its time on the judge's clock, less a round trip per call.
    // Runs prepared by before_each so far: time_gpu's first warm-up was the first
    // (TimingOptions::before_check).
    int prepared = 1;
    const auto one_run = [&](int pass) {
        if (options.before_each) options.before_each();
        ++prepared;
        if (options.flush_l2) flush_l2(pass);
        take_charged();
        launch();
        CUDA_CHECK(cudaGetLastError());
        const Charged run = take_charged();
        if (options.before_check) options.before_check(prepared - 1);
        if (options.after_each) options.after_each();
        return run;
    };
    // Two more warm-ups tell how long a run takes, and how much memory its arrays take: the
    // faster of the two, since a round trip's noise only ever adds.
    const Charged probe = one_run(0);
    const bool reference = probe.reference;
    const double estimate = std::min(probe.ms, one_run(1).ms);
    int runs = probe.batchable ? batch_size(estimate, probe.device_bytes) : 1;
    std::vector<double> samples;
    if (runs == 1) {
        for (int i = 3; i < options.warmup; ++i) one_run(i);
        while (!enough(samples, 1, options, options.repetitions))
            samples.push_back(std::max(one_run(static_cast<int>(samples.size())).ms, 1e-6));
        return Timing{summarize(samples), 1};
    }
    // A batch: `count` runs queued, each in a slot of its own, then sent as one message. Its
    // time on the judge's clock, less a round trip. Its runs are checked when it took less than
    // `check_below` milliseconds.
    Batching batching(runs);
    constexpr double kAlways = 1e300, kNever = -1;
    const auto one_batch = [&](int pass, double check_below, int count) {
        const int first = prepared;  // the run prepared for slot 0
        for (int slot = 0; slot < count; ++slot) {
            if (options.before_each) options.before_each();
            ++prepared;
            fill_slot(slot);
            launch();
        }
        if (options.flush_l2) flush_l2(pass);
        const double ms = run_batch();
        if (ms < check_below && options.after_each)
            for (int slot = 0; slot < count; ++slot) {
                restore_slot(slot);
                if (options.before_check) options.before_check(first + slot);
                options.after_each();
            }
        return ms;
    };
    // A warm-up batch, neither timed nor checked: the runner maps each slot's arrays once. Then
    // a second, also unchecked, times a run as a batch does (the single runs above weigh a
    // round trip more, the first batch the mapping): where the batch should be a quarter
    // larger, it grows, and the new slots are mapped in one more.
    const auto setup_started = std::chrono::steady_clock::now();
    one_batch(1, kNever, runs);
    const double per_run = one_batch(2, kNever, runs) / runs;
    const int better = batch_size(std::min(estimate, per_run), probe.device_bytes);
    const int first = runs;
    if (4 * better > 5 * runs) {
        runs = better;
        resize_batches(runs);
        one_batch(3, kNever, runs);
    }
    // A batch already averages many runs: a few of them are plenty, and the fastest counts. The
    // first is checked run by run, and so is each later one that is faster than every batch
    // before it: the batch that counts always was, and a slower one, which cannot count, is not
    // checked (the checks cost more than the batch: copies back, a reference run, a comparison).
    const int batches = std::clamp(options.repetitions, 1, kTimedBatches);
    const auto started = std::chrono::steady_clock::now();
    std::vector<double> own;  // the runner's own time of each batch, a run: traced, never counted
    while (!enough(samples, runs, options, batches)) {
        const double fastest = samples.empty() ? kAlways : *std::min_element(samples.begin(), samples.end()) * runs;
        samples.push_back(std::max(one_batch(static_cast<int>(samples.size()) + 4, fastest, runs) / runs, 1e-6));
        own.push_back(last_batch_own_ms() / runs);
    }
    // On the reference's runner only: what a batch costs beyond its runs and the round trip
    // (the GPU's switches to the runner's work and back, the first launch, the last waits), from
    // batches that run every slot twice, on the same memory, against the batches above. The
    // student's batches are charged the same cost (time_call takes it off both sides); the
    // student's runner is never asked, since its code could make a slot's second run cheaper.
    double batch_cost = 0;
    static std::vector<double> estimates;  // of the batch cost, by every reference timing of this process
    if (reference) {
        // Three batches for the process's first estimates, one for each later one (their median
        // counts).
        const int calibrations = estimates.size() < 3 ? kTimedBatches : 1;
        double twice = 1e9;
        for (int i = 0; i < calibrations; ++i) {
            for (int pass = 0; pass < 2; ++pass)
                for (int slot = 0; slot < runs; ++slot) {
                    fill_slot(slot);
                    launch();
                }
            if (options.flush_l2) flush_l2(i);
            twice = std::min(twice, run_batch());
        }
        const double once = *std::min_element(samples.begin(), samples.end()) * runs;
        // One such estimate is a difference of two timings, each with its noise (measured on the
        // H100: 0.05 to 0.5 ms for the same runner), while the cost is the runner's, the same for
        // every call: the median of every estimate this process has made counts.
        estimates.push_back(std::clamp(2 * once - twice, 0.0, kMostBatchCostMs));
        batch_cost = std::min(summarize(estimates).median, once / 2);
        if (clock_trace() > 0)
            std::printf("clock: batch of %d %.4f ms, twice as many runs %.4f ms: a batch's cost %.4f ms, median of "
                        "%zu %.4f ms\n", runs, once, twice, estimates.back(), estimates.size(), batch_cost);
    }
    // Traced at level 2: the time of a batch of 1, 2, 4, ... runs, each the fastest of 5 (the
    // measurements behind docs/grading.md's account of the clock).
    if (clock_trace() >= 2) {
        const int most = batch_size(1e-3, probe.device_bytes);
        for (int n = 1; n <= most; n *= 2) {
            resize_batches(n);
            one_batch(1, kNever, n);
            double best = 1e9;
            for (int i = 0; i < 5; ++i) best = std::min(best, one_batch(2, kNever, n) + round_trip_ms());
            std::printf("clock sweep: %d runs, batch %.4f ms, round trip %.4f ms\n", n, best, round_trip_ms());
        }
    }
    if (clock_trace() > 0) {
        const auto since = [](std::chrono::steady_clock::time_point t) {
            return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
        };
        std::printf("clock: round trip %.4f ms, single runs %.4f ms, batch of %d %.4f ms a run, %d runs a batch, "
                    "set-up %.1f ms, %zu batches %.1f ms, all %.1f ms, fastest %.4f ms\n",
                    round_trip_ms(), estimate, first, per_run, runs, since(setup_started) - since(started),
                    samples.size(), since(started), since(timing_started),
                    *std::min_element(samples.begin(), samples.end()));
        std::printf("clock: %s batches, a run on the judge's clock / the runner's own:", reference ? "reference" : "student");
        for (std::size_t i = 0; i < samples.size(); ++i) std::printf(" %.4f/%.4f", samples[i], own[i]);
        std::printf(" ms\n");
    }
    Timing timing{summarize(samples), runs};
    timing.batch_cost_ms = batch_cost;
    return timing;
}
//! [time calls]

}  // namespace

void install_judge_clock()
{
    set_call_clock({[] { return take_calls_made(); }, time_calls});
}

}  // namespace workbook::remote
