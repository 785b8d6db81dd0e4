// The functions a lab 03 implementation defines (labs/03_shared_transpose/transpose.cu).
// Declared weak: a function missing from the student's file costs only the tests that call it
// (see checker.hpp).
#pragma once

/// out = in^T through a 32 x 32 shared tile without padding (step 1).
WORKBOOK_STUDENT_FUNCTION void launch_transpose_unpadded(const float* in, float* out, int rows, int cols);

/// out = in^T through a shared tile with kTilePadding spare floats per row (step 2).
WORKBOOK_STUDENT_FUNCTION void launch_transpose_padded(const float* in, float* out, int rows, int cols);
