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
#include <vector>

namespace workbook::remote {

namespace {
double g_round_trip_ms = -1;  // the last measure_round_trip's
}  // namespace

double measure_round_trip()
{
    // Pinged on the reference solution's runner: the same dispatcher, and no student code in it
    // that could slow the pings down to have its own calls credited with less.
    if (!has_reference_runner()) throw std::runtime_error("checker bug: no reference runner was built");
    Runner& trusted = reference_runner();
    static DeviceBuffer<unsigned char> touch(1 << 20);
    std::vector<double> ms;
    constexpr int kWarmup = 3, kTimed = 21;
    for (int i = 0; i < kWarmup + kTimed; ++i) {
        // As before a timed call: the judge's own GPU work (an L2 flush, say) just done.
        CUDA_CHECK(cudaMemsetAsync(touch.data(), i, touch.bytes()));
        trusted.call(wire::Message(wire::Op::ping), "a ping");
        if (i >= kWarmup) ms.push_back(trusted.last_call_ms());
        trusted.take_record();
    }
    // The fastest: whatever else happens on the machine only ever lengthens a ping, and a
    // round trip taken off too large would credit every call with less than it took.
    const Summary trip = summarize(ms);
    if (g_round_trip_ms < 0) {
        std::printf("round trip to a runner: %.4f ms (fastest of %zu; median %.4f ms): taken off each timed call "
                    "or batch of your code, measured again before each timing\n", trip.min, trip.count, trip.median);
        std::fflush(stdout);
    }
    g_round_trip_ms = trip.min;
    return trip.min;
}

double round_trip_ms() { return g_round_trip_ms < 0 ? measure_round_trip() : g_round_trip_ms; }

int batch_size(double call_ms, std::size_t bytes)
{
    int runs = static_cast<int>(std::ceil(kBatchMs / std::max(call_ms, 1e-3)));
    runs = std::clamp(runs, 1, kMaxBatch);
    if (bytes > 0) {
        std::size_t free = 0, total = 0;
        CUDA_CHECK(cudaMemGetInfo(&free, &total));
        const auto fits = static_cast<double>(free) * kBatchMemoryShare / static_cast<double>(bytes);
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
    measure_round_trip();
    // One run, unbatched: its time on the judge's clock, less a round trip per call.
    const auto one_run = [&](int pass) {
        if (options.before_each) options.before_each();
        if (options.flush_l2) flush_l2(pass);
        take_charged();
        launch();
        CUDA_CHECK(cudaGetLastError());
        const Charged run = take_charged();
        if (options.after_each) options.after_each();
        return run;
    };
    // Two more warm-ups tell how long a run takes, and how much memory its arrays take: the
    // faster of the two, since a round trip's noise only ever adds.
    const Charged probe = one_run(0);
    const double estimate = std::min(probe.ms, one_run(1).ms);
    int runs = probe.batchable ? batch_size(estimate, probe.device_bytes) : 1;
    std::vector<double> samples;
    if (runs == 1) {
        for (int i = 3; i < options.warmup; ++i) one_run(i);
        while (!enough(samples, 1, options, options.repetitions))
            samples.push_back(std::max(one_run(static_cast<int>(samples.size())).ms, 1e-6));
        return Timing{summarize(samples), 1};
    }
    // A batch: `runs` runs queued, each in a slot of its own, then sent as one message.
    Batching batching(runs);
    const auto one_batch = [&](int pass, bool checked) {
        for (int slot = 0; slot < runs; ++slot) {
            if (options.before_each) options.before_each();
            fill_slot(slot);
            launch();
        }
        if (options.flush_l2) flush_l2(pass);
        const double ms = run_batch();
        if (checked && options.after_each)
            for (int slot = 0; slot < runs; ++slot) {
                restore_slot(slot);
                options.after_each();
            }
        return std::max(ms / runs, 1e-6);
    };
    // A warm-up batch, neither timed nor checked: the runner maps each slot's arrays once. It
    // also times a run better than the single runs above, whose round trip weighs more: where
    // the batch should be half as large again, it grows (and the new slots are mapped in
    // one more).
    const int better = batch_size(std::min(estimate, one_batch(1, false)), probe.device_bytes);
    if (2 * better > 3 * runs) {
        runs = better;
        resize_batches(runs);
        one_batch(2, false);
    }
    // A batch already averages many runs: a few of them are plenty, and the fastest counts.
    const int batches = std::clamp(options.repetitions, 1, kTimedBatches);
    const auto started = std::chrono::steady_clock::now();
    while (!enough(samples, runs, options, batches))
        samples.push_back(one_batch(static_cast<int>(samples.size()) + 3, true));
    if (std::getenv("WORKBOOK_CLOCK_TRACE"))
        std::printf("clock: estimate %.4f ms, %d runs a batch, %zu batches in %.1f ms, fastest %.4f ms\n", estimate,
                    runs, samples.size(),
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count(),
                    *std::min_element(samples.begin(), samples.end()));
    return Timing{summarize(samples), runs};
}
//! [time calls]

}  // namespace

void install_judge_clock()
{
    set_call_clock({[] { return take_calls_made(); }, time_calls});
}

}  // namespace workbook::remote
