// Checker for lab 05, tiled matrix multiplication.
//
// The shapes of lab 04, most of which leave partial tiles; a racecheck of the two barriers;
// GFLOP/s at 4096^3 beside the reference's and cuBLAS's, and the reference tiled kernel's
// speedup over the reference naive kernel of lab 04.
#include "matmul_cases.hpp"

#include "04_naive_matmul.hpp"  // for the types of lab 04's functions
#include "05_tiled_matmul.hpp"
// The reference solutions' functions, with the types of yours: each solution's object is linked
// beside yours with every name moved into its namespace (grading/buildtools/reference_object.py).
namespace reference {
decltype(::launch_matmul_tiled) launch_matmul_tiled;
}  // namespace reference
namespace reference_04 {  // lab 04's solution: the naive kernel the tiled one is measured against
decltype(::launch_matmul_naive) launch_matmul_naive;
}  // namespace reference_04

#include <string>

using namespace workbook;

namespace {

const std::string kTileHint =
    " When only some shapes fail, look at the partial tiles: the last phase sticks out past A's "
    "columns and B's rows when k is not a multiple of TILE, and each load must put 0 there.";

Call tiled(int m, int k, int n)
{
    return matmul::call(launch_matmul_tiled, WORKBOOK_ADDRESS(launch_matmul_tiled), "launch_matmul_tiled", m, k, n, kTileHint);
}
void check_tiled(int m, int k, int n) { check(tiled(m, k, n)); }

constexpr int kRaceShape[3] = {100, 70, 90};
Call race_shape() { return tiled(kRaceShape[0], kRaceShape[1], kRaceShape[2]); }
std::vector<Call> small_sizes() { return {tiled(17, 33, 65), tiled(31, 32, 33)}; }

double speedup_of_tiled_reference()
{
    const int s = matmul::kTimedSize;
    const auto t = matmul::shared_case(s, s, s);
    DeviceBuffer<float> c(t->c.size());
    const float *a = t->device_a.data(), *b = t->device_b.data();
    const Timing naive = time_gpu([&] { reference_04::launch_matmul_naive(a, b, c.data(), s, s, s); });
    const Timing tiled = time_gpu([&] { reference::launch_matmul_tiled(a, b, c.data(), s, s, s); });
    return naive.seconds() / tiled.seconds();
}

}  // namespace

WORKBOOK_PROBE("tiled 100x70x90", "racecheck") { run_calls({race_shape()}); }
WORKBOOK_PROBE("small sizes", "memcheck", "synccheck") { run_calls(small_sizes()); }

// The workbook's own claim, run by `make test`: the tiled reference clearly beats the naive one.
WORKBOOK_PROBE("reference speedup")
{
    const double speedup = speedup_of_tiled_reference();
    std::printf("reference tiled kernel / reference naive kernel at 4096: %.2fx faster\n", speedup);
    if (speedup < 1.2) throw std::runtime_error("the tiled reference is not clearly faster than the naive one");
}

TEST_CASE("1 x 1 x 1" * points(1)) { check_tiled(1, 1, 1); }
TEST_CASE("1 x 5000 x 1 (one long inner product)" * points(1)) { check_tiled(1, 5000, 1); }
TEST_CASE("17 x 33 x 65" * points(1)) { check_tiled(17, 33, 65); }
TEST_CASE("31 x 32 x 33" * points(1)) { check_tiled(31, 32, 33); }
TEST_CASE("1000 x 1 x 1000 (an outer product)" * points(1)) { check_tiled(1000, 1, 1000); }
TEST_CASE("512 x 512 x 512" * points(1)) { check_tiled(512, 512, 512); }
TEST_CASE("1024 x 777 x 1023" * points(1)) { check_tiled(1024, 777, 1023); }
TEST_CASE("4096 x 4096 x 4096" * points(2)) { check_tiled(4096, 4096, 4096); }

TEST_CASE("no shared-memory race: compute-sanitizer racecheck (100 x 70 x 90)" * points(2))
{
    sanitizer_test("racecheck", "tiled 100x70x90", {race_shape()},
                   "each phase needs two barriers: one after loading the tiles (nobody reads a cell "
                   "before it is loaded), one after using them (nobody overwrites a cell that another "
                   "thread still reads).");
}

TEST_CASE("compute-sanitizer memcheck: small sizes" * points(1))
{
    sanitizer_test("memcheck", "small sizes", small_sizes(),
                   "an access out of bounds is a tile load without its test (row < m and a_col < k; "
                   "b_row < k and col < n).");
}

TEST_CASE("compute-sanitizer synccheck: small sizes" * points(1))
{
    sanitizer_test("synccheck", "small sizes", small_sizes(),
                   "every thread must reach both barriers: no early return for threads outside C, "
                   "and no __syncthreads() inside an if.");
}

TEST_CASE("performance: GFLOP/s against the reference at 4096" * points(3))
{
    matmul::check_performance(launch_matmul_tiled, WORKBOOK_ADDRESS(launch_matmul_tiled), reference::launch_matmul_tiled,
                              "launch_matmul_tiled");
    MESSAGE("the reference tiled kernel is " << speedup_of_tiled_reference()
            << "x as fast as lab 04's reference naive kernel here (the IJCEE paper saw about 2x)");
}
