// The functions a lab 05 implementation defines (labs/05_tiled_matmul/matmul.cu).
// Declared weak: a function missing from the student's file costs only the tests that call it
// (see checker.hpp).
#pragma once

/// C = A·B on the device through TILE x TILE shared-memory tiles.
WORKBOOK_STUDENT_FUNCTION void launch_matmul_tiled(const float* a, const float* b, float* c, int m, int k, int n);
