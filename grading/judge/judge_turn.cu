// The judge's clock stops only when the GPU is the judge's again (calls.hpp): a kernel of its
// own, launched after the runner said "done", runs once the runner's work is off the GPU.
#include "calls.hpp"
#include "clock.hpp"

#include "common/check.hpp"

#include <algorithm>
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

}  // namespace workbook::remote
