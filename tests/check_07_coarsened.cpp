// Checker for lab 07's going-further part, thread coarsening (bonus points only).
//
// Correctness on images whose width is and is not a multiple of 4 (16-byte stores or the
// float-by-float fallback), with partial 128 x 8 tiles, each with every odd mask from 1 x 1 to
// 15 x 15 (at 8192 x 8192: k = 1, 7 and 15); then the effective bandwidth at 8192 x 8192 beside
// the reference's, with the goal of half the copy ceiling at k = 5.
#include "convolution_cases.hpp"

#include "07_coarsened.hpp"
namespace reference {
#include "07_coarsened.hpp"
}

using namespace workbook;

namespace {
convolution::Kernel coarsened()
{
    return {launch_convolution_coarsened, set_mask, "launch_convolution_coarsened", 128, 8};
}
convolution::Kernel reference_coarsened()
{
    return {reference::launch_convolution_coarsened, reference::set_mask, "reference coarsened kernel", 128, 8};
}
constexpr double kGoalPercentOfCopy = 50;  // at 8192 x 8192 with k = 5
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
WORKBOOK_PROBE("small sizes")
{
    for (int k : {3, 15}) {
        convolution::run_once(coarsened(), 17, 31, k);
        convolution::run_once(coarsened(), 9, 130, k);
    }
}

namespace {
bool coarsened_writes_everything()
{
    std::string why;
    if (convolution::writes_everything(coarsened(), 9, 130, 5, why)) return true;
    if (launch_convolution_coarsened != nullptr)
        FAIL_CHECK("not checked: launch_convolution_coarsened leaves outputs unwritten (or writes outside "
                   "`out`) at 9 x 130. Make the correctness tests pass first.\n" << why);
    return false;
}
}  // namespace

TEST_CASE("coarsened: compute-sanitizer memcheck" * bonus(1))
{
    if (coarsened_writes_everything())
        sanitizer_test("memcheck", "small sizes", "16-byte stores need all four outputs inside the row; "
                       "the last, partial group is written one float at a time.");
}

TEST_CASE("coarsened: compute-sanitizer racecheck" * bonus(1))
{
    if (coarsened_writes_everything())
        sanitizer_test("racecheck", "small sizes", "a barrier after the tile load, before any thread reads it.");
}

TEST_CASE("coarsened: compute-sanitizer synccheck" * bonus(1))
{
    if (coarsened_writes_everything())
        sanitizer_test("synccheck", "small sizes", "every thread must reach the barrier.");
}
