// Checker for lab 07's going-further part, thread coarsening (bonus points only).
//
// Correctness on images whose width is and is not a multiple of 4 (16-byte loads and stores, or
// the float-by-float fallback), with partial 128 x 32 blocks of outputs, each with every odd mask
// from 1 x 1 to 15 x 15 (at 8192 x 8192: k = 1, 7 and 15); then the effective bandwidth at
// 8192 x 8192 beside the reference's, with the walkthrough's goal of 85% of copy printed at k = 5.
#include "convolution_cases.hpp"

#include "07_coarsened.hpp"
// The reference solution's functions, with the types of yours: its object is linked beside yours
// with every name moved into namespace reference (grading/buildtools/reference_object.py).
namespace reference {
decltype(::launch_convolution_coarsened) launch_convolution_coarsened;
decltype(::set_mask) set_mask;
}  // namespace reference

using namespace workbook;

namespace {
convolution::Kernel coarsened()
{
    return {launch_convolution_coarsened, set_mask, "launch_convolution_coarsened", 128, 32, 1,
            WORKBOOK_ADDRESS(launch_convolution_coarsened)};
}
convolution::Kernel reference_coarsened()
{
    return {reference::launch_convolution_coarsened, reference::set_mask, "reference coarsened kernel", 128, 32, 1,
            WORKBOOK_ADDRESS(reference::launch_convolution_coarsened)};
}
constexpr double kGoalPercentOfCopy = 85;  // at 8192 x 8192 with k = 5
}  // namespace

TEST_CASE("coarsened: 1 x 1" * bonus(1)) { convolution::check(coarsened(), 1, 1); }
TEST_CASE("coarsened: 17 x 31 (scalar stores)" * bonus(1)) { convolution::check(coarsened(), 17, 31); }
TEST_CASE("coarsened: 5000 x 1 (one column)" * bonus(1)) { convolution::check(coarsened(), 5000, 1); }
TEST_CASE("coarsened: 1 x 5000 (one row)" * bonus(1)) { convolution::check(coarsened(), 1, 5000); }
TEST_CASE("coarsened: 1000 x 1000 (16-byte stores and partial tiles)" * bonus(1)) { convolution::check(coarsened(), 1000, 1000); }
TEST_CASE("coarsened: 2000 x 5000 (the source post's size)" * bonus(1)) { convolution::check(coarsened(), 2000, 5000); }
TEST_CASE("coarsened: 8192 x 8192" * bonus(1)) { convolution::check(coarsened(), 8192, 8192); }

TEST_CASE("coarsened: performance against the reference at 8192 x 8192" * bonus(3))
{
    convolution::check_bandwidth(coarsened(), reference_coarsened(), kGoalPercentOfCopy);
}

// What compute-sanitizer watches: the coarsened kernel on small awkward images.
namespace {
std::vector<Call> small_sizes()
{
    return convolution::small_calls(coarsened(), {{17, 31, 3}, {17, 31, 15}, {9, 130, 3}, {9, 130, 15}});
}
}  // namespace

WORKBOOK_PROBE("small sizes", "memcheck", "racecheck", "synccheck") { run_calls(small_sizes()); }

TEST_CASE("coarsened: compute-sanitizer memcheck" * bonus(1))
{
    sanitizer_test("memcheck", "small sizes", small_sizes(), "16-byte loads and stores need all four floats "
                   "inside the row; the last, partial group goes one float at a time, and rows and columns "
                   "outside the image read 0.");
}

TEST_CASE("coarsened: compute-sanitizer racecheck" * bonus(1))
{
    sanitizer_test("racecheck", "small sizes", small_sizes(), "if your kernel stages inputs in shared memory, a "
                   "barrier after the load, before any thread reads it.");
}

TEST_CASE("coarsened: compute-sanitizer synccheck" * bonus(1))
{
    sanitizer_test("synccheck", "small sizes", small_sizes(), "every thread must reach each barrier.");
}
