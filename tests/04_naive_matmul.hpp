// The functions a lab 04 implementation defines (labs/04_naive_matmul/matmul.cu).
// Declared weak: a function missing from the student's file costs only the tests that call it
// (see checker.hpp).
#pragma once

/// C = A·B on the device: A m x k, B k x n, C m x n, row-major; 16 x 16 blocks.
WORKBOOK_STUDENT_FUNCTION void launch_matmul_naive(const float* a, const float* b, float* c, int m, int k, int n);

/// The same with 1-D blocks of 256 threads (the optional exercise).
WORKBOOK_STUDENT_FUNCTION void launch_matmul_naive_1d(const float* a, const float* b, float* c, int m, int k, int n);
