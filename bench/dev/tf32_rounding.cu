// How does cuBLAS in TF32 (CUBLAS_TF32_TENSOR_OP_MATH) make TF32 of its FP32 inputs: rounded to
// nearest, or cut to their top 19 bits as the tensor cores do when handed FP32? Lab 05's step 3
// rounds to nearest as it loads (one instruction a fragment register); this says whether the
// cuBLAS it is measured against pays for the same precision.
//
// In the workbook (it has a target, with bench/): cmake --build build --target dev_tf32_rounding,
// then build/bin/dev_tf32_rounding. In the student edition, which ships this file without the
// bench's build, compile it by hand from the repository's root, on a machine with a GPU:
//   nvcc -std=c++17 -O2 -I. bench/dev/tf32_rounding.cu common/random.cpp common/buffers.cpp \
//        common/check.cpp -lcublas -o tf32_rounding && ./tf32_rounding
//
// The inputs are all in [1, 2), so that cutting makes every input smaller: a product of k terms
// then comes out low by about k times the mean cut, a bias that no rounding to nearest has. Each
// output is set beside three float64 models of the same sum: the FP32 inputs as they are, cut,
// and rounded to nearest (ties to even; ties away from zero differs from it by far less than the
// sums' own rounding). Of cut and rounded, the one whose mean difference is nearer zero is how
// cuBLAS made its inputs. cuBLAS in FP32 is the control: it matches the inputs as they are.
// H100 (sm_90), CUDA 13.0, 2026-11-26, two runs: mean difference -0.019 against rounding to
// nearest, +5.97 to +5.98 against cutting, for sums of about 9200 (k = 4096): cuBLAS rounds to
// nearest. (cuBLAS in FP32, the control: 0.0000 against the inputs as they are.)
#include "common/buffers.hpp"
#include "common/check.hpp"
#include "common/random.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

enum Model { exact, cut, nearest, kModels };
const char* const kModelNames[kModels] = {"FP32 inputs as they are", "cut to TF32 (top 19 bits)",
                                          "rounded to TF32, to nearest"};

// One FP32 value made TF32 (10 bits of mantissa), kept in an FP32.
float to_tf32(float x, Model model)
{
    std::uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    const std::uint32_t dropped = bits & 0x1fffu, kept = bits & ~0x1fffu;
    switch (model) {
    case exact: return x;
    case cut: bits = kept; break;
    case nearest: bits = kept + ((dropped > 0x1000u || (dropped == 0x1000u && (kept & 0x2000u))) ? 0x2000u : 0); break;
    default: break;
    }
    std::memcpy(&x, &bits, sizeof x);
    return x;
}

#define CUBLAS_OK(call)                                                                            \
    do {                                                                                           \
        if ((call) != CUBLAS_STATUS_SUCCESS) {                                                     \
            std::fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #call);                \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

}  // namespace

int main()
{
    const int m = 256, n = 256, k = 4096, rows_checked = 16;
    const std::vector<float> a = workbook::random_floats(std::size_t(m) * k, workbook::seed_for("tf32 a"), 1.0f, 2.0f);
    const std::vector<float> b = workbook::random_floats(std::size_t(k) * n, workbook::seed_for("tf32 b"), 1.0f, 2.0f);
    const workbook::DeviceBuffer<float> da(a), db(b);
    workbook::DeviceBuffer<float> dc(std::size_t(m) * n);
    // The inputs as each model makes them, once.
    std::vector<float> a_as[kModels], b_as[kModels];
    for (int model = 0; model < kModels; ++model) {
        for (float x : a) a_as[model].push_back(to_tf32(x, Model(model)));
        for (float x : b) b_as[model].push_back(to_tf32(x, Model(model)));
    }

    cublasHandle_t handle = nullptr;
    CUBLAS_OK(cublasCreate(&handle));
    for (cublasMath_t math : {CUBLAS_DEFAULT_MATH, CUBLAS_TF32_TENSOR_OP_MATH}) {
        CUBLAS_OK(cublasSetMathMode(handle, math));
        // Row-major C = A B is column-major C^T = B^T A^T.
        const float one = 1.0f, zero = 0.0f;
        CUBLAS_OK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, db.data(), n, da.data(), k, &zero,
                              dc.data(), n));
        const std::vector<float> c = dc.download();

        double mean_difference[kModels] = {};
        for (int row = 0; row < rows_checked; ++row)
            for (int col = 0; col < n; ++col)
                for (int model = 0; model < kModels; ++model) {
                    double sum = 0;
                    for (int p = 0; p < k; ++p)
                        sum += double(a_as[model][std::size_t(row) * k + p]) *
                               double(b_as[model][std::size_t(p) * n + col]);
                    mean_difference[model] += (c[std::size_t(row) * n + col] - sum) / (rows_checked * n);
                }
        std::printf("cuBLAS %s, k = %d, sums of about %.0f; mean of (cuBLAS - model) over %d outputs:\n",
                    math == CUBLAS_DEFAULT_MATH ? "FP32" : "TF32", k, double(c[0]), rows_checked * n);
        for (int model = 0; model < kModels; ++model)
            std::printf("  %-30s %+.4f\n", kModelNames[model], mean_difference[model]);
        if (math == CUBLAS_TF32_TENSOR_OP_MATH)
            std::printf("  so cuBLAS in TF32 %s\n",
                        std::fabs(mean_difference[cut]) < std::fabs(mean_difference[nearest])
                            ? "cuts its inputs to TF32"
                            : "rounds its inputs to TF32, to nearest");
    }
    cublasDestroy(handle);
    return 0;
}
