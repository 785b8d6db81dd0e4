// The functions a lab 06 implementation defines (labs/06_thread_sweep/sweep.cu).
// Declared weak: a function missing from the student's file costs only the tests that call it
// (see checker.hpp).
#pragma once

/// C = A·B through tile x tile shared tiles, with blocks of tile x tile threads (tile 1 to 32).
WORKBOOK_STUDENT_FUNCTION void launch_matmul_dynamic_tile(const float* a, const float* b, float* c, int m, int k, int n, int tile);

/// c = a + b with blocks of threads_per_block threads.
WORKBOOK_STUDENT_FUNCTION void launch_vector_add_blocks(const float* a, const float* b, float* c, int n, int threads_per_block);

/// Active warps per SM over the maximum that the runtime predicts for the matmul at this tile.
WORKBOOK_STUDENT_FUNCTION double predicted_occupancy_matmul(int tile);

/// The same for vector add with blocks of threads_per_block threads.
WORKBOOK_STUDENT_FUNCTION double predicted_occupancy_vector_add(int threads_per_block);

/// The block size cudaOccupancyMaxPotentialBlockSize suggests for vector add.
WORKBOOK_STUDENT_FUNCTION int suggested_vector_add_block_size();

/// The matmul, size x size x size, timed with tiles of 1, 2, 4, 8, 16 and 32: six points.
WORKBOOK_STUDENT_FUNCTION std::vector<workbook::SweepPoint> sweep_matmul(const float* a, const float* b, float* c, int size);

/// Vector add of n elements, timed with blocks of 32, 64, ..., 1024 threads: six points.
WORKBOOK_STUDENT_FUNCTION std::vector<workbook::SweepPoint> sweep_vector_add(const float* a, const float* b, float* c, int n);
