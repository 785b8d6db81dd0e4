// Lab 05, going further, step 3 (tensor cores through mma.sync, TF32): the solution's kernel on
// each of its paths, checked against the float64 reference within TF32's tolerance and then timed
// beside cuBLAS TF32 in the same process (a wrong version is reported and never timed).
//
//   cmake --build build --target dev_tensor_cores
//   build/bin/dev_tensor_cores [VERSION ...] [--sizes 1024,2048,4096]
//
// Version 0 is the lab's reference solution (solutions/05_tiled_matmul/tensor_cores.cu, included
// here with the helpers it defines), which picks its path by GPU and shape; versions 1 to 3 force
// one path each. Step 3's target for the curious is half of cuBLAS TF32 at 4096 on an H100: the
// solution measured 51.4% to 51.6% there (2026-11-26, cuBLAS timed just before it).
//
// The 40 versions that led to the solution (padded rows and cp.async, mbarrier stages, TMA in the
// 128-byte swizzle, the last warp out of a stage refilling it) and the bounds that showed what the
// copies cost are in git: `git show 1601909:bench/dev/tensor_cores.cu`, whose header gives each
// version's figure. docs/lab05_performance_study.md tells that story.
#include "common/buffers.hpp"
#include "common/check.hpp"
#include "common/compare.hpp"
#include "common/device.hpp"
#include "common/gemm_reference.hpp"
#include "common/random.hpp"
#include "common/timing.hpp"
#include "harness.hpp"  // Version, parse_arguments, check_and_time

#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <vector>

#include "solutions/05_tiled_matmul/tensor_cores.cu"

namespace dev {

const std::vector<Version>& versions()
{
    static const std::vector<Version> all = {
        {"the solution (on sm_90: 256 x 128, 8 warps, 4 TMA stages)", ::launch_matmul_tensor_cores, nullptr},
        {"the solution's kernel copying with cp.async, 128 x 128 (sm_80 to sm_89)",
         ::launch_tensor_cores<128, 128, 64, 64, 3, 2, Copies::copies16>,
         reinterpret_cast<const void*>(::matmul_tensor_core_kernel<128, 128, 64, 64, 3, 2, Copies::copies16>)},
        {"the solution's kernel copying 4 bytes at a time, 64 x 64 (unaligned)",
         ::launch_tensor_cores<64, 64, 32, 32, 4, 2, Copies::copies4>,
         reinterpret_cast<const void*>(::matmul_tensor_core_kernel<64, 64, 32, 32, 4, 2, Copies::copies4>)},
        {"the solution's kernel with TMA, 64 x 64 (small sizes)", ::launch_tensor_cores<64, 64, 32, 32, 4, 2, Copies::tma>,
         reinterpret_cast<const void*>(::matmul_tensor_core_kernel<64, 64, 32, 32, 4, 2, Copies::tma>)},
    };
    return all;
}

// One size: the reference, cuBLAS TF32, then each chosen version checked and timed.
void run_size(int size, const std::vector<int>& chosen)
{
    using namespace workbook;
    const int m = size, k = size, n = size;
    const std::vector<float> a = random_floats(static_cast<std::size_t>(m) * k, seed_for("dev a " + std::to_string(size)));
    const std::vector<float> b = random_floats(static_cast<std::size_t>(k) * n, seed_for("dev b " + std::to_string(size)));
    DeviceBuffer<float> da(a), db(b), dc(static_cast<std::size_t>(m) * n);
    const Reference expected = gemm_reference(a, b, m, k, n);
    const Tolerance tolerance = gemm_tolerance(k, GemmInputs::tf32_rounded);
    const double cublas = tf32_gemm_gflops(m, k, n);
    std::printf("\n%d x %d x %d: cuBLAS TF32 %.0f GFLOP/s; tolerance %.3g (%s)\n", m, k, n, cublas, tolerance.abs,
                tolerance.why.c_str());
    print_heading(62);
    for (int v : chosen) check_and_time(v, versions().at(v), 62, da.data(), db.data(), dc, m, k, n, expected, tolerance);
}

}  // namespace dev

int main(int argc, char** argv)
{
    using namespace dev;
    std::vector<int> chosen, sizes = {1024, 2048, 4096};
    if (!parse_arguments(argc, argv, versions(), chosen, sizes)) return 2;
    for (int size : sizes)
        if (size <= 0 || size % 4 != 0) {
            std::fprintf(stderr, "sizes must be positive multiples of 4 (16-byte copies), not %d\n", size);
            return 2;
        }
    try {
        if (const std::string why = workbook::why_not_on_this_gpu(workbook::kTf32TensorCores); !why.empty()) {
            std::printf("SKIPPED: %s\n", why.c_str());
            return 77;
        }
        for (int size : sizes) run_size(size, chosen);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "dev_tensor_cores: %s\n", e.what());
        return 1;
    }
    return 0;
}
