// Checker for lab 05's sixth going-further step, FP32's accuracy from three TF32 products on step
// 5's kernel (bonus points only).
//
// The tolerance is FP32's, the one lab 05 and steps 1 and 2 meet (matmul::tolerance): step 5 alone,
// TF32, fails it, and so does a split that drops a term or pairs the parts wrongly. The shapes:
// step 5's, among them k not a multiple of 4 (17 x 33 x 65), where each part of the split copies
// is padded to kp = 36 columns; k = 5000 in one long inner product; and 4096, where the target
// is: GFLOP/s beside the reference's and cuBLAS SGEMM's, bounded by the TF32 tensor-core
// peak (the FP32 peak of the CUDA cores does not bound products on the tensor cores). The file is built for sm_90a, which runs
// on compute capability 9.0 alone: on any other GPU every test is skipped, saying so, never passed.
#include "matmul_cases.hpp"

#include "05_split_tf32.hpp"
// The reference solution's functions, with the types of yours: its object is linked beside yours
// with every name moved into namespace reference (grading/buildtools/reference_object.py).
namespace reference {
decltype(::launch_matmul_split_tf32) launch_matmul_split_tf32;
}  // namespace reference

using namespace workbook;

namespace {
constexpr matmul::Inputs kInputs = matmul::Inputs::fp32;

Call split(int m, int k, int n)
{
    Call call = matmul::call(launch_matmul_split_tf32, WORKBOOK_ADDRESS(launch_matmul_split_tf32),
                             "launch_matmul_split_tf32", m, k, n,
                             " Check the copies' layout: A3 is m x 3 kp and B3 3 kp x n, each part kp = k rounded "
                             "up to 4 wide with zeros after k, and step 5 is called with 3 kp.",
                             kInputs);
    // Errors the size TF32 leaves mean a part of the split is lost, not that floats must be
    // multiplied as they are: this step multiplies TF32 on purpose.
    const auto general = call.diagnose;
    call.diagnose = [general, m, k, n](const Failure& f) -> std::string {
        if (matmul::errors_of_tf32_size(*matmul::shared_case(m, k, n), f))
            return "Every element is close, but " + std::to_string(f.comparison.wrong) + " are beyond the FP32 "
                   "tolerance by errors of the size TF32 inputs leave: a term of the split is missing or comes out "
                   "twice. Is each float split exactly (lo = x - hi(x), both rounded to TF32), and do A3's parts "
                   "lo, hi, hi meet B3's hi, lo, hi, so that hi(A)hi(B), hi(A)lo(B) and lo(A)hi(B) each come out once?";
        return general(f);
    };
    return call;
}
void check_split(int m, int k, int n)
{
    if (gpu_runs(kSm90a)) check(split(m, k, n));
}
std::vector<Call> small_sizes() { return {split(17, 33, 65), split(200, 36, 300)}; }
}  // namespace

TEST_CASE("split TF32: 1 x 1 x 1" * bonus(1)) { check_split(1, 1, 1); }
TEST_CASE("split TF32: 17 x 33 x 65 (k not a multiple of 4: each part padded to 36)" * bonus(1))
{
    check_split(17, 33, 65);
}
TEST_CASE("split TF32: 1 x 5000 x 1 (one long inner product)" * bonus(1)) { check_split(1, 5000, 1); }
TEST_CASE("split TF32: 1000 x 996 x 868 (partial tiles)" * bonus(1))
{
    check_split(1000, 996, 868);
}
TEST_CASE("split TF32: 4096 x 4096 x 4096" * bonus(1)) { check_split(4096, 4096, 4096); }

WORKBOOK_PROBE("small sizes", "memcheck") { run_calls(small_sizes()); }

TEST_CASE("split TF32: compute-sanitizer memcheck" * bonus(1))
{
    if (!gpu_runs(kSm90a)) return;
    sanitizer_test("memcheck", "small sizes", small_sizes(), "the split kernels read A and B only below k, and "
                   "write each copy only inside its 3 kp columns (A3) or rows (B3).");
}

TEST_CASE("split TF32: performance against the reference at 4096" * bonus(3))
{
    if (!gpu_runs(kSm90a)) return;
    // Set beside SGEMM, FP32's ceiling, and bounded by the TF32 tensor-core peak, not the FP32 one
    // that the CUDA cores' steps are held to: this step's products run on the tensor cores.
    matmul::check_performance(launch_matmul_split_tf32, WORKBOOK_ADDRESS(launch_matmul_split_tf32),
                              reference::launch_matmul_split_tf32, "launch_matmul_split_tf32", kInputs,
                              Ceiling::fp32_on_tensor_cores);
}
