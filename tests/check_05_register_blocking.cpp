// Checker for lab 05's going-further part, register blocking (bonus points only).
//
// Correctness on shapes that exercise both the 16-byte load path (k and n multiples of 4) and
// the scalar one, with partial 128 x 128 tiles; then GFLOP/s at 4096^3 beside the reference's
// and cuBLAS's.
#include "matmul_cases.hpp"

#include "05_register_blocking.hpp"
// The reference solution's functions, with the types of yours: its object is linked beside yours
// with every name moved into namespace reference (grading/buildtools/reference_object.py).
namespace reference {
decltype(::launch_matmul_register_blocked) launch_matmul_register_blocked;
}  // namespace reference

using namespace workbook;

namespace {
Call blocked(int m, int k, int n)
{
    return matmul::call(launch_matmul_register_blocked, WORKBOOK_ADDRESS(launch_matmul_register_blocked),
                        "launch_matmul_register_blocked", m, k, n,
                        " Partial 128 x 128 tiles and a last slice shorter than 8 must load zeros.");
}
void check_blocked(int m, int k, int n) { check(blocked(m, k, n)); }
std::vector<Call> small_sizes() { return {blocked(17, 33, 65), blocked(200, 36, 300)}; }
}  // namespace

//! [bonus]
TEST_CASE("register blocking: 1 x 1 x 1" * bonus(1)) { check_blocked(1, 1, 1); }
//! [bonus]
TEST_CASE("register blocking: 17 x 33 x 65 (scalar loads)" * bonus(1)) { check_blocked(17, 33, 65); }
TEST_CASE("register blocking: 200 x 36 x 300 (16-byte loads, partial tiles)" * bonus(1)) { check_blocked(200, 36, 300); }
TEST_CASE("register blocking: 1024 x 777 x 1023" * bonus(1)) { check_blocked(1024, 777, 1023); }
TEST_CASE("register blocking: 4096 x 4096 x 4096" * bonus(1)) { check_blocked(4096, 4096, 4096); }

WORKBOOK_PROBE("small sizes", "memcheck", "racecheck", "synccheck") { run_calls(small_sizes()); }

TEST_CASE("register blocking: compute-sanitizer memcheck" * bonus(1))
{
    sanitizer_test("memcheck", "small sizes", small_sizes(), "16-byte loads need the whole float4 inside the matrix; "
                       "partial tiles load scalars or zeros.");
}

TEST_CASE("register blocking: compute-sanitizer racecheck" * bonus(1))
{
    sanitizer_test("racecheck", "small sizes", small_sizes(), "a barrier after loading each slice, and another "
                       "before the next slice overwrites it.");
}

TEST_CASE("register blocking: compute-sanitizer synccheck" * bonus(1))
{
    sanitizer_test("synccheck", "small sizes", small_sizes(), "every thread must reach both barriers of each slice.");
}

TEST_CASE("register blocking: performance against the reference at 4096" * bonus(3))
{
    matmul::check_performance(launch_matmul_register_blocked, WORKBOOK_ADDRESS(launch_matmul_register_blocked),
                              reference::launch_matmul_register_blocked, "launch_matmul_register_blocked");
}
