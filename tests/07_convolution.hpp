// The functions a lab 07 implementation defines (labs/07_convolution/convolution.cu).
// Declared weak: a function missing from the student's file costs only the tests that call it
// (see checker.hpp).
#pragma once

/// Copies the k x k mask (host memory, row-major) into the file's constant memory, c_mask.
WORKBOOK_STUDENT_FUNCTION void set_mask(const float* mask, int k);

/// out = in ⊛ mask (correlation, zero padding, same size), one thread per output (step 1).
WORKBOOK_STUDENT_FUNCTION void launch_convolution_direct(const float* in, float* out, int height, int width, int k);

/// The same through a 32 x 8 shared-memory tile with its halo (step 2).
WORKBOOK_STUDENT_FUNCTION void launch_convolution_tiled(const float* in, float* out, int height, int width, int k);

/// The same with a stride: out is ceil(height / stride) x ceil(width / stride) (optional exercise).
WORKBOOK_STUDENT_FUNCTION void launch_convolution_strided(const float* in, float* out, int height, int width, int k, int stride);
