#include "timing.hpp"

#include "buffers.hpp"
#include "check.hpp"
#include "device.hpp"

#include <algorithm>
#include <cstdio>
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

std::string Timing::describe() const
{
    char text[128];
    std::snprintf(text, sizeof text, "%.4g ms (median of %zu, spread %.1f%%)", ms.median, ms.count,
                  100.0 * ms.spread());
    return text;
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
std::function<double()>& call_clock()
{
    static std::function<double()> clock;
    return clock;
}
}  // namespace

void set_call_clock(std::function<double()> milliseconds) { call_clock() = std::move(milliseconds); }

void have_gpu_alone()
{
    for (const auto& wait : background_gpu_work()) wait();
}

Timing time_gpu(const std::function<void()>& launch, const TimingOptions& options)
{
    have_gpu_alone();  // no background tool run of this checker shares the GPU with a measurement
    for (int i = 0; i < options.warmup; ++i) {
        if (options.before_each) options.before_each();
        launch();
        CUDA_CHECK_LAUNCH("the warm-up run");
        if (options.after_each) options.after_each();
    }
    Event start, stop;
    std::vector<double> samples;
    for (int i = 0; i < options.repetitions; ++i) {
        if (options.before_each) options.before_each();
        if (options.flush_l2) {
            auto& flush = l2_flush_buffer();
            CUDA_CHECK(cudaMemsetAsync(flush.data(), i & 0xFF, flush.bytes()));
        }
        if (call_clock()) call_clock()();  // forget calls made before the timed run
        CUDA_CHECK(cudaEventRecord(start.event));
        launch();
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaEventRecord(stop.event));
        CUDA_CHECK(cudaEventSynchronize(stop.event));
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start.event, stop.event));
        // Work done in another process is timed by the clock made for it (set_call_clock).
        const double in_calls = call_clock() ? call_clock()() : -1.0;
        samples.push_back(in_calls >= 0 ? std::max(in_calls, 1e-6) : static_cast<double>(ms));
        if (options.after_each) options.after_each();
    }
    return Timing{summarize(samples)};
}

}  // namespace workbook
