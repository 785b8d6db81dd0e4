// The functions a lab 02 implementation defines (labs/02_naive_transpose/transpose.cu).
// Declared weak: a function missing from the student's file costs only the tests that call it
// (see checker.hpp).
#pragma once

/// out = in^T, where in is rows x cols and out is cols x rows, both row-major, on the device.
WORKBOOK_STUDENT_FUNCTION void launch_transpose_naive(const float* in, float* out, int rows, int cols);
