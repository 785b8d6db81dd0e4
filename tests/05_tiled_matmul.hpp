// The functions a lab 05 implementation defines (labs/05_tiled_matmul/matmul.cu).
// No include guard on purpose: the checker includes it twice, the second time inside namespace
// reference for the reference solution. Declared weak: a function missing from the student's file
// costs only the tests that call it (see checker.hpp).

/// C = A·B on the device through TILE x TILE shared-memory tiles.
WORKBOOK_STUDENT_FUNCTION void launch_matmul_tiled(const float* a, const float* b, float* c, int m, int k, int n);
