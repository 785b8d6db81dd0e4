// The function lab 05's second going-further step defines (labs/05_tiled_matmul/warp_tiling.cu).
// Declared weak: a function missing from the student's file costs only the tests that call it
// (see checker.hpp).
#pragma once

/// C = A·B on the device: warp tiles, 16-byte loads and double-buffered shared slices.
WORKBOOK_STUDENT_FUNCTION void launch_matmul_warp_tiled(const float* a, const float* b, float* c, int m, int k, int n);
