// The functions a lab 01 implementation defines (labs/01_vector_add/vector_add.cu).
// Declared weak: a function missing from the student's file costs only the tests that call it
// (see checker.hpp).
#pragma once

/// Launches c[i] = a[i] + b[i] on device arrays of n floats; returns once the kernel is queued.
WORKBOOK_STUDENT_FUNCTION void launch_vector_add(const float* a, const float* b, float* c, int n);

/// The whole round trip from host arrays of n floats: allocate, copy in, add, copy out, free.
WORKBOOK_STUDENT_FUNCTION void vector_add_from_host(const float* a, const float* b, float* c, int n);
