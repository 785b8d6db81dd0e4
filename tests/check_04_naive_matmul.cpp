// Checker for lab 04, naive matrix multiplication.
//
// Correctness on shapes from 1 x 1 x 1 to 4096^3, most of them not multiples of the 16 x 16
// block, against a float64 reference with a tolerance derived from k; then GFLOP/s at 4096^3
// beside the reference solution's and cuBLAS SGEMM's, measured in the same run.
#include "matmul_cases.hpp"

#include "04_naive_matmul.hpp"
// The reference solution's functions, with the types of yours: its object is linked beside yours
// with every name moved into namespace reference (grading/buildtools/reference_object.py).
namespace reference {
decltype(::launch_matmul_naive) launch_matmul_naive;
}  // namespace reference

using namespace workbook;

namespace {
Call naive(int m, int k, int n) { return matmul::call(launch_matmul_naive, WORKBOOK_ADDRESS(launch_matmul_naive), "launch_matmul_naive", m, k, n); }
Call naive_1d(int m, int k, int n) { return matmul::call(launch_matmul_naive_1d, WORKBOOK_ADDRESS(launch_matmul_naive_1d), "launch_matmul_naive_1d", m, k, n); }
void check_naive(int m, int k, int n) { check(naive(m, k, n)); }
void check_1d(int m, int k, int n) { check(naive_1d(m, k, n)); }
std::vector<Call> small_sizes() { return {naive(17, 33, 65), naive(31, 32, 33)}; }
}  // namespace

TEST_CASE("1 x 1 x 1" * points(1)) { check_naive(1, 1, 1); }
TEST_CASE("1 x 5000 x 1 (one long inner product)" * points(1)) { check_naive(1, 5000, 1); }
TEST_CASE("17 x 33 x 65" * points(1)) { check_naive(17, 33, 65); }
TEST_CASE("31 x 32 x 33" * points(1)) { check_naive(31, 32, 33); }
TEST_CASE("1000 x 1 x 1000 (an outer product)" * points(1)) { check_naive(1000, 1, 1000); }
TEST_CASE("512 x 512 x 512" * points(1)) { check_naive(512, 512, 512); }
TEST_CASE("1024 x 777 x 1023" * points(1)) { check_naive(1024, 777, 1023); }
TEST_CASE("4096 x 4096 x 4096" * points(2)) { check_naive(4096, 4096, 4096); }

WORKBOOK_PROBE("small sizes", "memcheck") { run_calls(small_sizes()); }

TEST_CASE("compute-sanitizer memcheck: small sizes" * points(1))
{
    sanitizer_test("memcheck", "small sizes", small_sizes(),
                   "an access out of bounds is a missing guard (row < m and col < n) or an index "
                   "that mixes up k and n.");
}

TEST_CASE("performance: GFLOP/s against the reference at 4096" * points(3))
{
    matmul::check_performance(launch_matmul_naive, WORKBOOK_ADDRESS(launch_matmul_naive), reference::launch_matmul_naive,
                              "launch_matmul_naive");
}

TEST_CASE("optional, 1-D blocks: 17 x 33 x 65" * bonus(1)) { check_1d(17, 33, 65); }
TEST_CASE("optional, 1-D blocks: 1024 x 777 x 1023" * bonus(1)) { check_1d(1024, 777, 1023); }
