// The functions lab 07's going-further part defines (labs/07_convolution/coarsened.cu).
// Declared weak: a function missing from the student's file costs only the tests that call it
// (see checker.hpp).
#pragma once

/// Copies the k x k mask (host memory, row-major) into this file's own constant memory.
WORKBOOK_STUDENT_FUNCTION void set_mask(const float* mask, int k);

/// out = in ⊛ mask (correlation, zero padding, same size), 8 rows x 4 columns of outputs per thread,
/// a tile of 32 rows x 128 columns per block of 32 x 4 threads.
WORKBOOK_STUDENT_FUNCTION void launch_convolution_coarsened(const float* in, float* out, int height, int width, int k);
