// The judge's clock stops only when the GPU is the judge's again (calls.hpp): a kernel of its
// own, launched after the runner said "done", runs once the runner's work is off the GPU.
#include "calls.hpp"

#include "common/check.hpp"

namespace workbook::remote {

namespace {
__global__ void judge_turn() {}
}  // namespace

void wait_for_judge_turn()
{
    judge_turn<<<1, 1>>>();
    CUDA_CHECK_LAUNCH("the judge's clock");
}

}  // namespace workbook::remote
