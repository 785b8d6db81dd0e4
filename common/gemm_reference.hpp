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

}  // namespace workbook
