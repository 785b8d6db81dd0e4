// The function lab 05's sixth going-further step defines (labs/05_tiled_matmul/split_tf32.cu).
// Declared weak: a function missing from the student's file costs only the tests that call it
// (see checker.hpp).
#pragma once

/// C = A·B within FP32's tolerance on Hopper's TF32 tensor cores: each input split into a TF32
/// head and tail, and three of their products summed as one product of 3k terms by step 5's kernel
/// (sm_90a only).
WORKBOOK_STUDENT_FUNCTION void launch_matmul_split_tf32(const float* a, const float* b, float* c, int m, int k, int n);
