#include "timing.hpp"

#include "buffers.hpp"
#include "check.hpp"
#include "device.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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

namespace {
std::string& gpu_lock_file()
{
    static std::string path;
    return path;
}
int g_gpu_alone_fd = -1;  // the lock held alone by have_gpu_alone until release_gpu

// The lock file opened, and locked with `how` (LOCK_EX or LOCK_SH, maybe with LOCK_NB); -1 with
// no lock file, or when LOCK_NB found it taken.
int lock_gpu(int how)
{
    if (gpu_lock_file().empty()) return -1;
    const int fd = ::open(gpu_lock_file().c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    int locked;
    while ((locked = ::flock(fd, how)) != 0 && errno == EINTR) {
    }
    if (locked != 0 && (how & LOCK_NB)) {
        ::close(fd);
        return -1;
    }
    return fd;
}

std::function<void(bool)>& gpu_wait_reporter()
{
    static std::function<void(bool)> report;
    return report;
}
}  // namespace

void set_gpu_lock_file(const std::string& path) { gpu_lock_file() = path; }

void set_gpu_wait_reporter(std::function<void(bool waiting)> report) { gpu_wait_reporter() = std::move(report); }

void have_gpu_alone()
{
    for (const auto& wait : background_gpu_work()) wait();
    if (g_gpu_alone_fd >= 0) return;
    g_gpu_alone_fd = lock_gpu(LOCK_EX | LOCK_NB);
    if (g_gpu_alone_fd >= 0 || gpu_lock_file().empty()) return;
    // Another checker's tool runs have the GPU: at most a minute each (tool_run.cpp).
    if (gpu_wait_reporter()) gpu_wait_reporter()(true);
    g_gpu_alone_fd = lock_gpu(LOCK_EX);
    if (gpu_wait_reporter()) gpu_wait_reporter()(false);
}

void release_gpu()
{
    if (g_gpu_alone_fd >= 0) ::close(g_gpu_alone_fd);
    g_gpu_alone_fd = -1;
}

GpuBackgroundUse::GpuBackgroundUse() : fd_(lock_gpu(LOCK_SH)) {}

GpuBackgroundUse::~GpuBackgroundUse()
{
    if (fd_ >= 0) ::close(fd_);
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
