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

std::string Timing::describe() const
{
    char text[128];
    std::snprintf(text, sizeof text, "%.4g ms (median of %zu, spread %.1f%%)", ms.median, ms.count,
                  100.0 * ms.spread());
    return disagreement.empty() ? std::string(text) : std::string(text) + "; " + disagreement;
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
std::function<CallTime()>& call_clock()
{
    static std::function<CallTime()> clock;
    return clock;
}
}  // namespace

void set_call_clock(std::function<CallTime()> clock) { call_clock() = std::move(clock); }

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
    std::vector<double> samples, judged;
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
        const CallTime in_calls = call_clock() ? call_clock()() : CallTime{};
        if (in_calls.calls > 0) {
            samples.push_back(std::max(in_calls.reported, 1e-6));
            judged.push_back(std::max(in_calls.judged, 1e-6));
        } else {
            samples.push_back(ms);
        }
        if (options.after_each) options.after_each();
        if (static_cast<int>(samples.size()) >= options.min_repetitions &&
            std::accumulate(samples.begin(), samples.end(), 0.0) >= options.enough_ms)
            break;
    }
    Timing timing{summarize(samples), summarize(judged), ""};
    // The other process reported its own times: they count only where the judge's clock agrees.
    // Noise on the judge's clock (a slow round trip) only ever adds time, so its fastest run is
    // the test: a forged figure is below even that; an honest one is not, however noisy the rest.
    if (!judged.empty() &&
        timing.judged.min > timing.ms.median * (1 + kJudgeClockSlackShare) + kJudgeClockSlackMs) {
        char text[256];
        std::snprintf(text, sizeof text, "its own process reported %.4g ms a run, but the judge's clock measured "
                      "%.4g ms: the judge's figure counts", timing.ms.median, timing.judged.median);
        timing.disagreement = text;
        timing.ms = timing.judged;
    }
    if (call_clock()) call_clock()();
    return timing;
}

}  // namespace workbook
