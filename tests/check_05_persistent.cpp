// Checker for lab 05's fifth going-further step, a persistent clustered wgmma kernel (bonus points
// only).
//
// The tolerance is step 4's: TF32 for truncated inputs, derived from k (matmul::tolerance). Beside
// step 4's shapes (partial tiles in m, n and k, k and n that TMA cannot address directly), shapes
// for what this step adds: 1000 x 996 x 868, whose last cluster has a block wholly outside C;
// 4096, where each cluster takes several tiles in turn (a scheduler that skips one leaves it
// unwritten, and C is poisoned before every call); then GFLOP/s at 4096^3 beside the reference's
// and cuBLAS's in TF32. The walkthrough's goal: cuBLAS TF32's speed at 4096. The file is built for
// sm_90a, which runs on compute capability 9.0 alone: on any other GPU every test is skipped,
// saying so, never passed.
#include "matmul_cases.hpp"

#include "05_persistent.hpp"
// The reference solution's functions, with the types of yours: its object is linked beside yours
// with every name moved into namespace reference (grading/buildtools/reference_object.py).
namespace reference {
decltype(::launch_matmul_persistent) launch_matmul_persistent;
}  // namespace reference

using namespace workbook;

namespace {
constexpr matmul::Inputs kInputs = matmul::Inputs::tf32_truncated;

Call persistent(int m, int k, int n)
{
    Call call = matmul::call(launch_matmul_persistent, WORKBOOK_ADDRESS(launch_matmul_persistent),
                             "launch_matmul_persistent", m, k, n,
                             " Check that every cluster walks the tiles cluster, cluster + clusters, ... (in "
                             "clusters, not blocks), that both halves of A reach both blocks (the multicast mask "
                             "names both), and that the stages' phases run on from one tile to the next.",
                             kInputs);
    call.race_hint = "Do the consumers wait on full[s] with the parity of the phase they need before reading "
                     "stage s, and release it in both blocks only after their wgmma have finished reading it?";
    return call;
}
void check_persistent(int m, int k, int n)
{
    if (gpu_runs(kSm90a)) check(persistent(m, k, n));
}
std::vector<Call> small_sizes() { return {persistent(17, 33, 65), persistent(200, 36, 300)}; }
}  // namespace

TEST_CASE("persistent: 1 x 1 x 1" * bonus(1)) { check_persistent(1, 1, 1); }
TEST_CASE("persistent: 17 x 33 x 65 (k and n not multiples of 4 and a k-tail of 1)" * bonus(1))
{
    check_persistent(17, 33, 65);
}
TEST_CASE("persistent: 1 x 5000 x 1 (one long inner product)" * bonus(1)) { check_persistent(1, 5000, 1); }
TEST_CASE("persistent: 200 x 36 x 300 (partial tiles)" * bonus(1)) { check_persistent(200, 36, 300); }
TEST_CASE("persistent: 1000 x 996 x 868 (a block of the last cluster outside C)" * bonus(1))
{
    check_persistent(1000, 996, 868);
}
TEST_CASE("persistent: 2048 x 2048 x 2048" * bonus(1)) { check_persistent(2048, 2048, 2048); }
TEST_CASE("persistent: 4096 x 4096 x 4096 (several tiles a cluster)" * bonus(1)) { check_persistent(4096, 4096, 4096); }

WORKBOOK_PROBE("small sizes", "memcheck", "racecheck", "synccheck") { run_calls(small_sizes()); }

TEST_CASE("persistent: compute-sanitizer memcheck" * bonus(1))
{
    if (!gpu_runs(kSm90a)) return;
    sanitizer_test("memcheck", "small sizes", small_sizes(), "TMA fills a partial tile with zeros itself; the "
                   "stores to C must stay inside it.");
}

TEST_CASE("persistent: compute-sanitizer racecheck" * bonus(1))
{
    if (!gpu_runs(kSm90a)) return;
    sanitizer_test("racecheck", "small sizes", small_sizes(), "a stage may be refilled only after the consumers of "
                   "both blocks have released it (their wgmma reads of it finished).");
}

TEST_CASE("persistent: compute-sanitizer synccheck" * bonus(1))
{
    if (!gpu_runs(kSm90a)) return;
    sanitizer_test("synccheck", "small sizes", small_sizes(), "every thread of a barrier must reach it, the "
                   "cluster's barrier included.");
}

TEST_CASE("persistent: performance against the reference at 4096" * bonus(3))
{
    if (!gpu_runs(kSm90a)) return;
    matmul::check_performance(launch_matmul_persistent, WORKBOOK_ADDRESS(launch_matmul_persistent),
                              reference::launch_matmul_persistent, "launch_matmul_persistent", kInputs);
}
