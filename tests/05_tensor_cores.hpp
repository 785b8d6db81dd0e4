// The function lab 05's third going-further step defines (labs/05_tiled_matmul/tensor_cores.cu).
// Declared weak: a function missing from the student's file costs only the tests that call it
// (see checker.hpp).
#pragma once

/// C = A·B on the device's tensor cores: inputs rounded to TF32, sums in FP32 (mma.sync).
WORKBOOK_STUDENT_FUNCTION void launch_matmul_tensor_cores(const float* a, const float* b, float* c, int m, int k, int n);
