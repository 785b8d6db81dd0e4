// Checker for lab 05's third going-further step, tensor cores through mma.sync (bonus points only).
//
// The inputs are rounded to TF32 and summed in FP32, so the tolerance is TF32's, derived from
// the rounding of the inputs and k (matmul::tolerance); every failure message states it. Shapes
// with partial tiles in m, n and k (a k-tail shorter than one mma step), both load paths; then
// GFLOP/s at 4096^3 beside the reference's and cuBLAS's in TF32, the same precision. The
// walkthrough's goal: 50% of cuBLAS TF32 at 4096. Needs sm_80 or newer (TF32 mma); skipped,
// never passed, on older GPUs.
#include "matmul_cases.hpp"

#include "05_tensor_cores.hpp"
// The reference solution's functions, with the types of yours: its object is linked beside yours
// with every name moved into namespace reference (grading/buildtools/reference_object.py).
namespace reference {
decltype(::launch_matmul_tensor_cores) launch_matmul_tensor_cores;
}  // namespace reference

using namespace workbook;

namespace {
constexpr matmul::Inputs kInputs = matmul::Inputs::tf32_rounded;

Call tensor_cores(int m, int k, int n)
{
    Call call = matmul::call(launch_matmul_tensor_cores, WORKBOOK_ADDRESS(launch_matmul_tensor_cores),
                             "launch_matmul_tensor_cores", m, k, n,
                             " Check the fragment layout (groupID = lane / 4, and lane % 4 within the group), "
                             "and that partial tiles and a k-tail shorter than one step load zeros.", kInputs);
    call.race_hint = "Does every warp wait on a stage's full mbarrier before it reads the stage, and is a stage "
                     "refilled only once every warp is done with it (the barrier after each slice with cp.async, "
                     "the last warp's count with TMA)?";
    return call;
}
void check_tensor_cores(int m, int k, int n)
{
    if (gpu_runs(kTf32TensorCores)) check(tensor_cores(m, k, n));
}
// For the sanitizers: both copy paths (4-byte cp.async where rows are not 16-byte aligned, TMA on
// Hopper where they are), each once with fewer slices of k than stages and once with stages refilled.
std::vector<Call> small_sizes()
{
    return {tensor_cores(17, 33, 65), tensor_cores(200, 36, 300), tensor_cores(17, 233, 65), tensor_cores(40, 260, 68)};
}
}  // namespace

TEST_CASE("tensor cores: 1 x 1 x 1" * bonus(1)) { check_tensor_cores(1, 1, 1); }
TEST_CASE("tensor cores: 17 x 33 x 65 (scalar loads and a k-tail of 1)" * bonus(1)) { check_tensor_cores(17, 33, 65); }
TEST_CASE("tensor cores: 1 x 5000 x 1 (one long inner product)" * bonus(1)) { check_tensor_cores(1, 5000, 1); }
TEST_CASE("tensor cores: 200 x 36 x 300 (16-byte loads, partial tiles)" * bonus(1)) { check_tensor_cores(200, 36, 300); }
TEST_CASE("tensor cores: 1024 x 777 x 1023" * bonus(1)) { check_tensor_cores(1024, 777, 1023); }
TEST_CASE("tensor cores: 1024 x 1024 x 1024" * bonus(1)) { check_tensor_cores(1024, 1024, 1024); }
TEST_CASE("tensor cores: 4096 x 4096 x 4096" * bonus(1)) { check_tensor_cores(4096, 4096, 4096); }

WORKBOOK_PROBE("small sizes", "memcheck", "racecheck", "synccheck") { run_calls(small_sizes()); }

TEST_CASE("tensor cores: compute-sanitizer memcheck" * bonus(1))
{
    if (!gpu_runs(kTf32TensorCores)) return;
    sanitizer_test("memcheck", "small sizes", small_sizes(), "16-byte loads and copies need the whole float4 "
                   "inside the matrix; partial tiles load scalars or zeros.");
}

TEST_CASE("tensor cores: compute-sanitizer racecheck" * bonus(1))
{
    if (!gpu_runs(kTf32TensorCores)) return;
    sanitizer_test("racecheck", "small sizes", small_sizes(), "a stage of shared memory may be overwritten only "
                   "once every warp is done reading it: with cp.async, after the barrier that follows its last read.");
}

TEST_CASE("tensor cores: compute-sanitizer synccheck" * bonus(1))
{
    if (!gpu_runs(kTf32TensorCores)) return;
    sanitizer_test("synccheck", "small sizes", small_sizes(), "every thread must reach the barrier of each stage.");
}

TEST_CASE("tensor cores: performance against the reference at 4096" * bonus(3))
{
    if (!gpu_runs(kTf32TensorCores)) return;
    matmul::check_performance(launch_matmul_tensor_cores, WORKBOOK_ADDRESS(launch_matmul_tensor_cores),
                              reference::launch_matmul_tensor_cores, "launch_matmul_tensor_cores", kInputs);
}
