// Checker for lab 05's second going-further step, warp tiling (bonus points only).
//
// Correctness on shapes that exercise both the 16-byte path (k and n multiples of 4) and the
// scalar one, with partial tiles of both tile sizes the launch picks (128 x 128, and 64 x 64
// when the larger tiles would leave SMs idle); then GFLOP/s at 4096^3 beside the reference's and
// cuBLAS's. The walkthrough's goal: 80% of cuBLAS SGEMM (FP32) at 4096.
#include "matmul_cases.hpp"

#include "05_warp_tiling.hpp"
// The reference solution's functions, with the types of yours: its object is linked beside yours
// with every name moved into namespace reference (grading/buildtools/reference_object.py).
namespace reference {
decltype(::launch_matmul_warp_tiled) launch_matmul_warp_tiled;
}  // namespace reference

using namespace workbook;

namespace {
Call warp_tiled(int m, int k, int n)
{
    return matmul::call(launch_matmul_warp_tiled, WORKBOOK_ADDRESS(launch_matmul_warp_tiled), "launch_matmul_warp_tiled",
                        m, k, n, " Partial tiles and a last slice shorter than 16 must load zeros; the 16-byte "
                        "path needs k and n to be multiples of 4.");
}
void check_warp_tiled(int m, int k, int n) { check(warp_tiled(m, k, n)); }
std::vector<Call> small_sizes() { return {warp_tiled(17, 33, 65), warp_tiled(200, 36, 300)}; }
}  // namespace

TEST_CASE("warp tiling: 1 x 1 x 1" * bonus(1)) { check_warp_tiled(1, 1, 1); }
TEST_CASE("warp tiling: 17 x 33 x 65 (scalar loads)" * bonus(1)) { check_warp_tiled(17, 33, 65); }
TEST_CASE("warp tiling: 1 x 5000 x 1 (one long inner product)" * bonus(1)) { check_warp_tiled(1, 5000, 1); }
TEST_CASE("warp tiling: 200 x 36 x 300 (16-byte loads, partial tiles)" * bonus(1)) { check_warp_tiled(200, 36, 300); }
TEST_CASE("warp tiling: 1024 x 777 x 1023" * bonus(1)) { check_warp_tiled(1024, 777, 1023); }
TEST_CASE("warp tiling: 1024 x 1024 x 1024 (64 x 64 tiles)" * bonus(1)) { check_warp_tiled(1024, 1024, 1024); }
TEST_CASE("warp tiling: 4096 x 4096 x 4096" * bonus(1)) { check_warp_tiled(4096, 4096, 4096); }

WORKBOOK_PROBE("small sizes", "memcheck", "racecheck", "synccheck") { run_calls(small_sizes()); }

TEST_CASE("warp tiling: compute-sanitizer memcheck" * bonus(1))
{
    sanitizer_test("memcheck", "small sizes", small_sizes(), "16-byte loads and stores need the whole float4 "
                   "inside the matrix; partial tiles load scalars or zeros.");
}

TEST_CASE("warp tiling: compute-sanitizer racecheck" * bonus(1))
{
    sanitizer_test("racecheck", "small sizes", small_sizes(), "with two buffers, one barrier per slice: every "
                   "thread stores the next slice into the buffer nobody reads, then waits.");
}

TEST_CASE("warp tiling: compute-sanitizer synccheck" * bonus(1))
{
    sanitizer_test("synccheck", "small sizes", small_sizes(), "every thread must reach the barrier of each slice.");
}

TEST_CASE("warp tiling: performance against the reference at 4096" * bonus(3))
{
    matmul::check_performance(launch_matmul_warp_tiled, WORKBOOK_ADDRESS(launch_matmul_warp_tiled),
                              reference::launch_matmul_warp_tiled, "launch_matmul_warp_tiled");
}
