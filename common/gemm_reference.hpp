/// \file gemm_reference.hpp
/// \brief The float64 reference for matrix products, fast enough for 4096 x 4096 x 4096.
///
/// A float64 loop on the CPU is the plainest reference, and the workbook uses it for small
/// products. At 4096^3 it would take minutes on a two-core machine, so larger products are
/// computed by cuBLAS DGEMM on the GPU, in float64 from the same float inputs, and stay there for
/// the judge's comparison; that result is itself checked against the CPU loop at random entries before any student's output is compared
/// with it.
#pragma once

#include "compare.hpp"

#include <string>
#include <vector>

namespace workbook {

/// \brief C = A·B in float64, where A is m x k, B is k x n and C is m x n, all row-major.
/// \param a m * k floats
/// \param b k * n floats
/// \param m rows of A and C
/// \param k columns of A, rows of B
/// \param n columns of B and C
/// \return m * n values, on the host (small products) or on the GPU (large ones); throws
///         std::runtime_error if DGEMM and the CPU disagree
/// \snippet tests/matmul_cases.hpp reference
Reference gemm_reference(const std::vector<float>& a, const std::vector<float>& b, int m,
                                   int k, int n);

/// \brief The tolerance for a float product with k terms against its float64 reference.
///
/// Each of the k multiply-adds rounds once, by at most 2^-24 of the running sum; with random
/// signs and values in [-1, 1] the running sum stays below about sqrt(k), and the products add
/// the 1: |got - ref| <= 2^-24 * k * (sqrt(k) + 1). At k = 4096 that allows 0.016 against
/// results of typical size 21.
/// \param k the inner dimension: columns of A, rows of B
/// \snippet tests/matmul_cases.hpp tolerance
Tolerance gemm_tolerance(int k);

/// \brief The tolerance for a product on the tensor cores: inputs rounded to a narrower format
/// (TF32, BF16) before they are multiplied, sums in FP32.
///
/// Rounding an input changes it by at most `unit` of itself: 2^-11 for TF32 rounded to nearest
/// (10 bits of mantissa), 2^-10 when the hardware truncates instead, 2^-8 for BF16. A product
/// a·b of inputs in [-1, 1] is then off by at most 2 * unit * |a·b| <= 2 * unit. k such errors:
/// at most k times that, and with random data their signs are random, so Hoeffding's
/// inequality keeps the sum within 9 * sqrt(k) times it but for less than one chance in 10^10
/// over 2^24 outputs. Hence 2 * unit * min(k, 9 * sqrt(k)), plus gemm_tolerance(k) for the FP32
/// sums. At k = 4096 with TF32 that is 0.58 (FP32 alone: 0.016): an FP32 step that quietly
/// rounds its inputs, as the tensor cores do, fails its FP32 tolerance.
/// \param k the inner dimension: columns of A, rows of B
/// \param unit the largest relative change of an input, e.g. 0x1p-11
/// \param rounding how the inputs are rounded, for the failure message, e.g. "TF32, rounded to nearest"
/// \snippet common/gemm_reference.cu tensor tolerance
Tolerance tensor_gemm_tolerance(int k, double unit, const std::string& rounding);

/// \brief What a product multiplies: FP32 inputs, or inputs of 10 bits of mantissa on the tensor
/// cores (TF32), rounded to nearest by the kernel or cut by the hardware, which reads only the top
/// 19 bits of an FP32 value. The sums are FP32 in all.
enum class GemmInputs { fp32, tf32_rounded, tf32_truncated };

/// \brief The tolerance of a product with k terms of these inputs: gemm_tolerance for FP32,
/// tensor_gemm_tolerance with 2^-11 (rounded) or 2^-10 (cut) for TF32.
/// \param k the inner dimension: columns of A, rows of B
/// \param inputs what the product multiplies
/// \snippet tests/matmul_cases.hpp tolerance
Tolerance gemm_tolerance(int k, GemmInputs inputs);

}  // namespace workbook
