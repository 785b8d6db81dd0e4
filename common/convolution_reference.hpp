/// \file convolution_reference.hpp
/// \brief The float64 reference for 2-D convolutions, fast enough for 8192 x 8192 with a 15 x 15 mask.
///
/// The workbook's convolution is a *correlation* with zero padding: for an odd k x k mask and
/// r = (k - 1) / 2,
///
///     out[y][x] = sum over i, j in [0, k) of mask[i][j] * in[y * stride + i - r][x * stride + j - r]
///
/// where input cells outside the image count as zero. With stride 1 the output has the size of
/// the input; with stride s it is ceil(height / s) x ceil(width / s).
///
/// A float64 loop on the CPU is the plainest reference, and the workbook uses it for small cases.
/// At 8192 x 8192 with k = 15 it would be 15 billion multiply-adds, minutes on a two-core machine,
/// so larger cases are computed by a simple float64 kernel on the GPU, from the same float inputs,
/// and stay there for the judge's comparison; that result is itself checked against the CPU loop at the four corners and at random
/// outputs before any student's output is compared with it.
#pragma once

#include "compare.hpp"

#include <vector>

namespace workbook {

/// \brief The whole output of a 2-D correlation with zero padding, in float64.
/// \param image height * width floats, row-major
/// \param height rows of the image
/// \param width columns of the image
/// \param mask k * k floats, row-major: mask[i * k + j]
/// \param k the mask's side, odd, from 1 up
/// \param stride the step between output pixels, in input pixels (1: the output is the image's size)
/// \return ceil(height / stride) * ceil(width / stride) values, row-major, on the host (small
///         cases) or on the GPU (large ones); throws
///         std::invalid_argument for inconsistent sizes and std::runtime_error if the GPU and
///         the CPU disagree
/// \snippet tests/convolution_cases.hpp reference
Reference convolution_reference(const std::vector<float>& image, int height, int width,
                                const std::vector<float>& mask, int k, int stride = 1);

/// \brief One output of the same correlation, computed on the CPU in float64.
/// \param image height * width floats, row-major
/// \param height rows of the image
/// \param width columns of the image
/// \param mask k * k floats, row-major
/// \param k the mask's side, odd
/// \param stride the step between output pixels
/// \param y the output's row
/// \param x the output's column
/// \param magnitude when not null, receives the sum of |mask[i][j] * in[..][..]|, the size of the
///        terms (for judging rounding)
/// \snippet common/tests/test_common.cpp convolution
double convolution_reference_at(const std::vector<float>& image, int height, int width,
                                const std::vector<float>& mask, int k, int stride, int y, int x,
                                double* magnitude = nullptr);

/// \brief The tolerance for a float convolution with a k x k mask against its float64 reference.
///
/// Each output sums k^2 products of values in [-1, 1]. As for a matrix product, each
/// multiply-add rounds once, by at most 2^-24 of a running sum that stays below about
/// sqrt(k^2) = k with random signs, and the product adds the 1: |got - ref| <= 2^-24 * k^2 * (k + 1).
/// At k = 15 that allows 2.1e-4 against outputs of typical size 5.
/// \param k the mask's side
/// \snippet tests/convolution_cases.hpp tolerance
Tolerance convolution_tolerance(int k);

}  // namespace workbook
