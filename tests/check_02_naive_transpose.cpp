// Checker for lab 02, naive transpose.
//
// Correctness on shapes that are not multiples of the 32 x 32 tile, thin ones and the source
// post's 2000 x 5000, on random data with poisoned, guarded output; then the bandwidth at
// 8192 x 8192 beside the reference solution's and the copy ceiling.
#include "transpose_cases.hpp"

#include "02_naive_transpose.hpp"
// The reference solution's functions, with the types of yours: its object is linked beside yours
// with every name moved into namespace reference (grading/buildtools/reference_object.py).
namespace reference {
decltype(::launch_transpose_naive) launch_transpose_naive;
}  // namespace reference

using namespace workbook;

namespace {
Call naive(int rows, int cols) { return transpose::call(launch_transpose_naive, "launch_transpose_naive", rows, cols); }
void check_naive(int rows, int cols) { check(naive(rows, cols)); }
std::vector<Call> small_sizes() { return transpose::small_sizes(launch_transpose_naive, "launch_transpose_naive"); }
}  // namespace

TEST_CASE("1 x 1" * points(1)) { check_naive(1, 1); }
TEST_CASE("1 x 5000 (one row)" * points(1)) { check_naive(1, 5000); }
TEST_CASE("5000 x 1 (one column)" * points(1)) { check_naive(5000, 1); }
TEST_CASE("31 x 33" * points(1)) { check_naive(31, 33); }
TEST_CASE("33 x 31" * points(1)) { check_naive(33, 31); }
TEST_CASE("1000 x 1" * points(1)) { check_naive(1000, 1); }
TEST_CASE("1025 x 2049" * points(1)) { check_naive(1025, 2049); }
TEST_CASE("2000 x 5000 (the source post's size)" * points(1)) { check_naive(2000, 5000); }
TEST_CASE("8192 x 8192" * points(2)) { check_naive(8192, 8192); }

WORKBOOK_PROBE("small sizes", "memcheck") { run_calls(small_sizes()); }

TEST_CASE("compute-sanitizer memcheck: small sizes" * points(1))
{
    sanitizer_test("memcheck", "small sizes", small_sizes(),
                   "an access out of bounds is a missing guard: row < rows and col < cols.");
}

TEST_CASE("performance: bandwidth against the reference at 8192 x 8192" * points(3))
{
    transpose::check_bandwidth(launch_transpose_naive, reference::launch_transpose_naive,
                               "launch_transpose_naive", 8192, 8192);
}
