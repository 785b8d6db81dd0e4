// Checker for lab 05's fourth going-further step, Hopper's wgmma with TMA loads (bonus points only).
//
// The tensor core reads TF32 inputs, and what TMA brings to it unrounded it cuts to TF32, so the
// tolerance is TF32's for truncated inputs, derived from that and k (matmul::tolerance); every
// failure message states it. Shapes with partial tiles in m, n and k (a k-tail shorter than one
// step), k and n that TMA cannot address directly (not multiples of 4); then GFLOP/s at 4096^3
// beside the reference's and cuBLAS's in TF32. The walkthrough's goal: 80% of cuBLAS TF32 at
// 4096. The file is built for sm_90a, which runs on compute capability 9.0 alone: on any other
// GPU every test is skipped, saying so, never passed.
#include "matmul_cases.hpp"

#include "05_wgmma.hpp"
// The reference solution's functions, with the types of yours: its object is linked beside yours
// with every name moved into namespace reference (grading/buildtools/reference_object.py).
namespace reference {
decltype(::launch_matmul_wgmma) launch_matmul_wgmma;
}  // namespace reference

using namespace workbook;

namespace {
constexpr matmul::Inputs kInputs = matmul::Inputs::tf32_truncated;

Call wgmma(int m, int k, int n)
{
    Call call = matmul::call(launch_matmul_wgmma, WORKBOOK_ADDRESS(launch_matmul_wgmma), "launch_matmul_wgmma", m, k, n,
                             " Check the shared-memory descriptors (the swizzle and the strides must match the "
                             "tensor map's), the accumulator layout of the store, and that every stage is waited "
                             "for before wgmma reads it.", kInputs);
    call.race_hint = "Do the consumers wait on full[s] with the parity of the phase they need before reading "
                     "stage s, and release it on empty[s] only after their wgmma have finished reading it?";
    return call;
}
void check_wgmma(int m, int k, int n)
{
    //! [architecture]
    if (gpu_runs(kSm90a)) check(wgmma(m, k, n));
    //! [architecture]
}
std::vector<Call> small_sizes() { return {wgmma(17, 33, 65), wgmma(200, 36, 300)}; }
}  // namespace

TEST_CASE("wgmma: 1 x 1 x 1" * bonus(1)) { check_wgmma(1, 1, 1); }
TEST_CASE("wgmma: 17 x 33 x 65 (k and n not multiples of 4 and a k-tail of 1)" * bonus(1)) { check_wgmma(17, 33, 65); }
TEST_CASE("wgmma: 1 x 5000 x 1 (one long inner product)" * bonus(1)) { check_wgmma(1, 5000, 1); }
TEST_CASE("wgmma: 200 x 36 x 300 (partial tiles)" * bonus(1)) { check_wgmma(200, 36, 300); }
TEST_CASE("wgmma: 1024 x 777 x 1023" * bonus(1)) { check_wgmma(1024, 777, 1023); }
TEST_CASE("wgmma: 1024 x 1024 x 1024" * bonus(1)) { check_wgmma(1024, 1024, 1024); }
TEST_CASE("wgmma: 4096 x 4096 x 4096" * bonus(1)) { check_wgmma(4096, 4096, 4096); }

WORKBOOK_PROBE("small sizes", "memcheck", "racecheck", "synccheck") { run_calls(small_sizes()); }

TEST_CASE("wgmma: compute-sanitizer memcheck" * bonus(1))
{
    if (!gpu_runs(kSm90a)) return;
    sanitizer_test("memcheck", "small sizes", small_sizes(), "TMA fills a partial tile with zeros itself; the "
                   "stores to C must stay inside it.");
}

TEST_CASE("wgmma: compute-sanitizer racecheck" * bonus(1))
{
    if (!gpu_runs(kSm90a)) return;
    sanitizer_test("racecheck", "small sizes", small_sizes(), "a stage may be refilled only after its consumers "
                   "have released it (their wgmma reads of it finished).");
}

TEST_CASE("wgmma: compute-sanitizer synccheck" * bonus(1))
{
    if (!gpu_runs(kSm90a)) return;
    sanitizer_test("synccheck", "small sizes", small_sizes(), "every thread of a barrier must reach it.");
}

TEST_CASE("wgmma: performance against the reference at 4096" * bonus(3))
{
    if (!gpu_runs(kSm90a)) return;
    matmul::check_performance(launch_matmul_wgmma, WORKBOOK_ADDRESS(launch_matmul_wgmma),
                              reference::launch_matmul_wgmma, "launch_matmul_wgmma", kInputs);
}
