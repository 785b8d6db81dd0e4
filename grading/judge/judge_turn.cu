// The judge's clock stops only when the GPU is the judge's again (calls.hpp): a kernel of its
// own, launched after the runner said "done", runs once the runner's work is off the GPU.
#include "calls.hpp"
#include "clock.hpp"

#include "common/check.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <thread>
#include <vector>

namespace workbook::remote {

namespace {
__global__ void judge_turn() {}
}  // namespace

void wait_for_judge_turn()
{
    judge_turn<<<1, 1>>>();
    CUDA_CHECK_LAUNCH("the judge's clock");
}

double median_turn_ms(int runs)
{
    // Each launch a millisecond after the last: another context with work on the GPU gets it back
    // while the judge's context has none, and the next launch waits for its time slice to end
    // again. Launched back to back, all of them could run within one slice of the judge's.
    std::vector<double> ms;
    for (int i = 0; i < runs + 1; ++i) {  // one warm-up
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        const auto start = std::chrono::steady_clock::now();
        judge_turn<<<1, 1>>>();
        CUDA_CHECK_LAUNCH("the judge's turn");
        CUDA_CHECK(cudaStreamSynchronize(nullptr));
        if (i >= 1) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
    return ms[ms.size() / 2];
}

namespace {
long involuntary_switches()
{
    rusage usage{};
    getrusage(RUSAGE_THREAD, &usage);
    return usage.ru_nivcsw;
}
}  // namespace

double gpu_busy_after_ms(std::chrono::steady_clock::time_point since, double most_ms)
{
    // The grader's figure for the judge's turn on the idle GPU (gpu_idle), else a fixed bound:
    // an idle H100 answers in about 0.02 ms, another context's work holds it for its kernel or
    // its time slice (milliseconds).
    static const double bound = [] {
        const char* value = std::getenv("WORKBOOK_IDLE_TURN_MS");
        const double idle = value == nullptr ? -1.0 : std::atof(value);
        return idle > 0 ? 2 * idle + 0.05 : 0.25;
    }();
    const auto ms = [](std::chrono::steady_clock::duration d) {
        return std::chrono::duration<double, std::milli>(d).count();
    };
    bool busy = false;
    int preempted = 0;
    for (;;) {
        const long switches = involuntary_switches();
        const auto start = std::chrono::steady_clock::now();
        judge_turn<<<1, 1>>>();
        CUDA_CHECK_LAUNCH("the judge's turn");
        CUDA_CHECK(cudaStreamSynchronize(nullptr));
        const auto end = std::chrono::steady_clock::now();
        if (ms(end - start) <= bound) return busy ? ms(start - since) : 0;
        if (involuntary_switches() == switches) busy = true;
        else if (!busy && ++preempted >= 3) return 0;  // the CPU was busy, not shown to be the GPU
        if (ms(end - since) > most_ms) return ms(end - since);
    }
}

}  // namespace workbook::remote
