// The function lab 05's fifth going-further step defines (labs/05_tiled_matmul/persistent.cu).
// Declared weak: a function missing from the student's file costs only the tests that call it
// (see checker.hpp).
#pragma once

/// C = A·B on Hopper's tensor cores: a persistent kernel in clusters of 2 blocks sharing A by TMA
/// multicast, wgmma with its register operand pipelined, sums in FP32 (sm_90a only).
WORKBOOK_STUDENT_FUNCTION void launch_matmul_persistent(const float* a, const float* b, float* c, int m, int k, int n);
