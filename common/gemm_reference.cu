#include "gemm_reference.hpp"

#include "buffers.hpp"
#include "check.hpp"
#include "exact_references.hpp"

#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace workbook {

namespace {

// Products up to this many multiply-adds are computed on the CPU (about a second on one core).
constexpr double kCpuLimit = 1u << 28;

double dot(const std::vector<float>& a, const std::vector<float>& b, int k, int n, int i, int j,
           double* magnitude)
{
    double sum = 0, size = 0;
    for (int p = 0; p < k; ++p) {
        const double term = static_cast<double>(a[static_cast<std::size_t>(i) * k + p]) *
                            b[static_cast<std::size_t>(p) * n + j];
        sum += term;
        size += std::fabs(term);
    }
    if (magnitude) *magnitude = size;
    return sum;
}

std::vector<double> on_cpu(const std::vector<float>& a, const std::vector<float>& b, int m, int k, int n)
{
    std::vector<double> c(static_cast<std::size_t>(m) * n, 0.0);
    for (int i = 0; i < m; ++i)
        for (int p = 0; p < k; ++p) {
            const double a_ip = a[static_cast<std::size_t>(i) * k + p];
            const float* b_row = &b[static_cast<std::size_t>(p) * n];
            double* c_row = &c[static_cast<std::size_t>(i) * n];
            for (int j = 0; j < n; ++j) c_row[j] += a_ip * b_row[j];
        }
    return c;
}

DeviceBuffer<double> on_gpu(const std::vector<float>& a, const std::vector<float>& b, int m, int k, int n)
{
    const DeviceBuffer<double> da = widened_on_device(a), db = widened_on_device(b);
    DeviceBuffer<double> dc(static_cast<std::size_t>(m) * n);
    cublasHandle_t handle = nullptr;
    if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
    const double one = 1, zero = 0;
    // cuBLAS is column-major: a row-major C = A·B is the column-major C^T = B^T·A^T.
    const cublasStatus_t status = cublasDgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one,
                                              db.data(), n, da.data(), k, &zero, dc.data(), n);
    cublasDestroy(handle);
    if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasDgemm failed");
    return dc;
}

}  // namespace

Reference gemm_reference(const std::vector<float>& a, const std::vector<float>& b, int m, int k, int n)
{
    if (static_cast<double>(m) * n * k <= kCpuLimit) return Reference(on_cpu(a, b, m, k, n));
    DeviceBuffer<double> c = on_gpu(a, b, m, k, n);
    // Trust, but verify: DGEMM must match the CPU's float64 loop wherever we look.
    spot_check(c, m, n, [&](std::size_t i, std::size_t j) {
        double magnitude = 0;
        const double expected = dot(a, b, k, n, static_cast<int>(i), static_cast<int>(j), &magnitude);
        return std::make_pair(expected, 1e-12 * (magnitude + 1));
    }, "gemm");
    return Reference(std::move(c));
}

Tolerance gemm_tolerance(int k)
{
    return Tolerance{0x1p-24 * k * (std::sqrt(static_cast<double>(k)) + 1), 0,
                     "2^-24 * k * (sqrt(k) + 1): k roundings, each at most 2^-24 of a running sum "
                     "below about sqrt(k)"};
}

Tolerance tensor_gemm_tolerance(int k, double unit, const std::string& rounding)
{
    const Tolerance sums = gemm_tolerance(k);
    const double terms = std::min<double>(k, 9 * std::sqrt(static_cast<double>(k)));
    char why[512];
    std::snprintf(why, sizeof why,
                  "2 * %g * min(k, 9 * sqrt(k)) + %s: inputs %s, each off by at most %g of itself, so "
                  "each product by 2 * %g; k of them with random signs stay within 9 * sqrt(k) of "
                  "one (Hoeffding); then the FP32 sums' own bound",
                  unit, "2^-24 * k * (sqrt(k) + 1)", rounding.c_str(), unit, unit);
    return Tolerance{2 * unit * terms + sums.abs, 0, why};
}

Tolerance gemm_tolerance(int k, GemmInputs inputs)
{
    switch (inputs) {
    case GemmInputs::fp32: return gemm_tolerance(k);
    //! [tensor tolerance]
    case GemmInputs::tf32_rounded: return tensor_gemm_tolerance(k, 0x1p-11, "rounded to TF32 (to nearest)");
    case GemmInputs::tf32_truncated:
        return tensor_gemm_tolerance(k, 0x1p-10, "cut to TF32 (the tensor core drops the low 13 bits)");
    //! [tensor tolerance]
    }
    return gemm_tolerance(k);
}

}  // namespace workbook
