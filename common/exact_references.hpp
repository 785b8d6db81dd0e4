/// \file exact_references.hpp
/// \brief The float64 references whose every value is exact: a sum of two floats, a transpose,
/// and floats widened to double.
///
/// Small cases are computed on the CPU. Large ones (a 2^26-element vector, an 8192 x 8192
/// matrix) would take the grader a second of host time each, for every student, to build and
/// then copy to the GPU, where the judge compares; they are computed on the GPU instead, and
/// spot-checked against the CPU (spot_check: the corners and random elements) before any
/// output is compared with them.
#pragma once

#include "buffers.hpp"
#include "compare.hpp"

#include <vector>

namespace workbook {

/// \brief Floats widened to float64 on the device (exact: every float is a double).
/// \param values the floats, on the host
/// \return a device buffer of values.size() doubles
DeviceBuffer<double> widened_on_device(const std::vector<float>& values);

/// \brief The float64 sum c[i] = a[i] + b[i]: exact for floats within 2^29 of each other in
/// magnitude, as the workbook's random data in [-1, 1) always are.
/// \param a the first vector
/// \param b the second vector, of the same length
/// \return the reference, on the host or the GPU; throws std::invalid_argument for different lengths
/// \snippet tests/check_01_vector_add.cpp inputs
Reference sum_reference(const std::vector<float>& a, const std::vector<float>& b);

/// \brief The transpose out[c][r] = in[r][c] of a rows x cols row-major matrix, in float64.
/// \param in rows * cols floats, row-major
/// \param rows its rows
/// \param cols its columns
/// \return cols * rows values, row-major; throws std::invalid_argument for a wrong size
/// \snippet tests/transpose_cases.hpp reference
Reference transpose_reference(const std::vector<float>& in, int rows, int cols);

}  // namespace workbook
