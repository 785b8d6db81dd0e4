// The judge's clock stops only when the GPU is the judge's again (calls.hpp): a kernel of its
// own, launched after the runner said "done", runs once the runner's work is off the GPU.
#include "calls.hpp"
#include "clock.hpp"

#include "common/check.hpp"

#include <algorithm>
#include <chrono>

namespace workbook::remote {

namespace {
__global__ void judge_turn() {}
}  // namespace

void wait_for_judge_turn()
{
    judge_turn<<<1, 1>>>();
    CUDA_CHECK_LAUNCH("the judge's clock");
}

double fastest_turn_ms(int runs)
{
    double fastest = 1e300;
    for (int i = 0; i < runs + 2; ++i) {  // two warm-ups
        const auto start = std::chrono::steady_clock::now();
        judge_turn<<<1, 1>>>();
        CUDA_CHECK_LAUNCH("the judge's turn");
        CUDA_CHECK(cudaStreamSynchronize(nullptr));
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        if (i >= 2) fastest = std::min(fastest, ms);
    }
    return fastest;
}

}  // namespace workbook::remote
