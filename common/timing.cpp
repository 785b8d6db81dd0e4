#include "timing.hpp"

#include "buffers.hpp"
#include "check.hpp"
#include "device.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <utility>
#include <vector>

namespace workbook {

namespace {
// Events are created and destroyed with the timing; a struct keeps that exception-safe.
struct Event {
    cudaEvent_t event = nullptr;
    Event() { CUDA_CHECK(cudaEventCreate(&event)); }
    ~Event() { cudaEventDestroy(event); }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
};

DeviceBuffer<unsigned char>& l2_flush_buffer()
{
    // Twice the L2 size, so that writing it evicts everything a kernel left there.
    static DeviceBuffer<unsigned char> buffer(2 * static_cast<std::size_t>(device_facts().l2_bytes) +
                                              (1 << 20));
    return buffer;
}
}  // namespace

Timing Timing::less_batch_cost(double cost) const
{
    if (runs_per_sample <= 1 || cost <= 0) return *this;
    Timing less = *this;
    const double per_run = cost / runs_per_sample;
    for (double* sample : {&less.ms.min, &less.ms.q1, &less.ms.median, &less.ms.q3, &less.ms.max})
        *sample = std::max(*sample - per_run, 1e-6);
    less.batch_cost_taken_ms = cost;
    return less;
}

std::string Timing::describe() const
{
    char text[200];
    if (runs_per_sample > 1 && batch_cost_taken_ms > 0)
        std::snprintf(text, sizeof text,
                      "%.4g ms (fastest of %zu batches of %d runs, spread %.1f%%, less a batch's fixed cost of %.3f ms)",
                      ms.min, ms.count, runs_per_sample, 100.0 * ms.spread(), batch_cost_taken_ms);
    else if (runs_per_sample > 1)
        std::snprintf(text, sizeof text, "%.4g ms (fastest of %zu batches of %d runs, spread %.1f%%)", ms.min,
                      ms.count, runs_per_sample, 100.0 * ms.spread());
    else
        std::snprintf(text, sizeof text, "%.4g ms (median of %zu, spread %.1f%%)", ms.median, ms.count,
                      100.0 * ms.spread());
    return text;
}

void flush_l2(int pass)
{
    auto& flush = l2_flush_buffer();
    CUDA_CHECK(cudaMemsetAsync(flush.data(), pass & 0xFF, flush.bytes()));
}

namespace {
std::vector<std::function<void()>>& background_gpu_work()
{
    static std::vector<std::function<void()>> waits;
    return waits;
}
}  // namespace

void add_background_gpu_work(std::function<void()> wait_until_done)
{
    background_gpu_work().push_back(std::move(wait_until_done));
}

namespace {
CallClock& call_clock()
{
    static CallClock clock;
    return clock;
}
}  // namespace

void set_call_clock(CallClock clock) { call_clock() = std::move(clock); }

void have_gpu_alone()
{
    for (const auto& wait : background_gpu_work()) wait();
}

Timing time_gpu(const std::function<void()>& launch, const TimingOptions& options)
{
    have_gpu_alone();  // no background tool run of this checker shares the GPU with a measurement
    int prepared = 0;  // calls of before_each so far (TimingOptions::before_check)
    const auto check = [&] {
        if (options.before_check) options.before_check(prepared - 1);
        if (options.after_each) options.after_each();
    };
    const auto warm_up = [&] {
        if (options.before_each) options.before_each();
        ++prepared;
        launch();
        CUDA_CHECK_LAUNCH("the warm-up run");
        check();
    };
    int warmups_left = options.warmup;
    if (call_clock().calls_made) {
        // A first warm-up run tells whether the work is done in another process: then only the
        // clock made for that (set_call_clock) can time it, and it takes over from here.
        call_clock().calls_made();
        warm_up();
        if (call_clock().calls_made() > 0) return call_clock().time(launch, options);
        --warmups_left;
    }
    for (int i = 0; i < warmups_left; ++i) warm_up();
    Event start, stop;
    std::vector<double> samples;
    for (int i = 0; i < options.repetitions; ++i) {
        if (options.before_each) options.before_each();
        ++prepared;
        if (options.flush_l2) flush_l2(i);
        CUDA_CHECK(cudaEventRecord(start.event));
        launch();
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaEventRecord(stop.event));
        CUDA_CHECK(cudaEventSynchronize(stop.event));
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start.event, stop.event));
        samples.push_back(ms);
        check();
        if (static_cast<int>(samples.size()) >= options.min_repetitions &&
            std::accumulate(samples.begin(), samples.end(), 0.0) >= options.enough_ms)
            break;
    }
    return Timing{summarize(samples)};
}

}  // namespace workbook
