// Lab 05, going further, steps 4 and 5 (wgmma and TMA on Hopper): the two solutions beside cuBLAS
// TF32, each checked against the float64 reference within TF32's tolerance for truncated inputs,
// then timed beside cuBLAS TF32 timed just before it in the same process (a wrong version is
// reported and never timed). It measures what docs/lab05_performance_study.md says of the
// solutions themselves: their speed in the bench's timing, held at the power limit, and from rest.
//
//   cmake --build build --target dev_wgmma
//   build/bin/dev_wgmma [VERSION ...] [--sizes 1024,2048,4096]
//   (DEV_ONLY_SIZES=1 skips the awkward shape, for ncu -c 1 to see the named sizes first)
//   (DEV_SUSTAIN_S=5 first runs each version back to back for 5 s: bench/dev/harness.hpp)
//   (DEV_SHORT_S=3 first times it as the bench does, again and again for 3 s: the power-limited regime)
//   (DEV_COOL_S=5 first times it and cuBLAS from rest, as published H100 kernels are timed)
//
//   0  step 4's solution (solutions/05_tiled_matmul/wgmma.cu)
//   1  step 5's solution (solutions/05_tiled_matmul/persistent.cu)
//   2  cuBLAS TF32 itself, for its own error and its DEV_SUSTAIN_S window
//
// Run with DEV_SUSTAIN_S=5 beside `nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv -lms 100`,
// versions 2 and 1 say at which clock each runs once the GPU sits at its power limit, and how
// many products each finishes there.
//
// The 92 versions that led from step 4 to step 5 (persistent blocks, clusters and multicast, the
// pipelined register operand, B unrounded, and the stores, tile orders and bounds that were tried
// and dropped) are in git: `git show 1601909:bench/dev/wgmma.cu`, whose header gives each
// version's figures; and step 5's design on BF16 inputs, `git show 1601909:bench/dev/wgmma_bf16.cu`.
// docs/lab05_performance_study.md quotes them by those version numbers.
#include "common/buffers.hpp"
#include "common/check.hpp"
#include "common/compare.hpp"
#include "common/device.hpp"
#include "common/gemm_reference.hpp"
#include "common/random.hpp"
#include "common/timing.hpp"
#include "common/tma.hpp"
#include "harness.hpp"  // Version, parse_arguments, check_and_time, cublas_product

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

// The two solutions define the same names (BN, SharedStorage, the PTX wrappers, the padding
// kernel): each gets a namespace of its own. Their headers are included above, so that the
// includes inside the namespaces find them already included.
namespace step4 {
#include "solutions/05_tiled_matmul/wgmma.cu"
}  // namespace step4
namespace step5 {
#include "solutions/05_tiled_matmul/persistent.cu"
}  // namespace step5

namespace dev {

const std::vector<Version>& versions()
{
    static const std::vector<Version> all = {
        {"step 4's solution (one block a tile)", step4::launch_matmul_wgmma,
         reinterpret_cast<const void*>(step4::matmul_wgmma_kernel<256>)},
        {"step 5's solution (persistent, clusters of 2)", step5::launch_matmul_persistent,
         reinterpret_cast<const void*>(step5::matmul_persistent_kernel<256>)},
        {"cuBLAS TF32 (timed against itself)", cublas_product<true>, nullptr},
    };
    return all;
}

// One shape: the reference, then each chosen version checked and timed beside cuBLAS TF32.
void run_shape(int m, int k, int n, const std::vector<int>& chosen)
{
    using namespace workbook;
    const std::string tag = std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
    const std::vector<float> a = random_floats(static_cast<std::size_t>(m) * k, seed_for("dev a " + tag));
    const std::vector<float> b = random_floats(static_cast<std::size_t>(k) * n, seed_for("dev b " + tag));
    DeviceBuffer<float> da(a), db(b), dc(static_cast<std::size_t>(m) * n);
    const Reference expected = gemm_reference(a, b, m, k, n);
    // Both steps let the tensor core cut A to TF32 (step 5 B as well): the tolerance of cut inputs.
    const Tolerance tolerance = gemm_tolerance(k, GemmInputs::tf32_truncated);
    std::printf("\n%d x %d x %d: tolerance %.3g (%s)\n", m, k, n, tolerance.abs, tolerance.why.c_str());
    print_heading(50);
    for (int v : chosen) check_and_time(v, versions().at(v), 50, da.data(), db.data(), dc, m, k, n, expected, tolerance);
}

}  // namespace dev

int main(int argc, char** argv)
{
    using namespace dev;
    std::vector<int> chosen, sizes = {1024, 2048, 4096};
    if (!parse_arguments(argc, argv, versions(), chosen, sizes)) return 2;
    try {
        if (const std::string why = workbook::why_not_on_this_gpu(workbook::kSm90a); !why.empty()) {
            std::printf("SKIPPED: %s\n", why.c_str());
            return 77;
        }
        // An awkward shape first: tiles that stick out of C on both sides, and a block of the last
        // cluster wholly outside C (DEV_ONLY_SIZES skips it, for a profiler that should see the
        // named sizes' launches first).
        if (!std::getenv("DEV_ONLY_SIZES")) run_shape(1000, 996, 868, chosen);
        for (int size : sizes) run_shape(size, size, size, chosen);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "dev_wgmma: %s\n", e.what());
        return 1;
    }
    return 0;
}
