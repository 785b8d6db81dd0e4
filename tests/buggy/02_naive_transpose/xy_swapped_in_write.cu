// Buggy variant of lab 02: the write index swaps row and column, so `out` is `in` copied as it is
// on a square matrix (right only on the diagonal) and scrambled on other shapes.
// expect-fail: 8192 x 8192
// expect-fail: 31 x 33
// expect-message: (copied as it is|check the write index)
#include "common/check.hpp"

#include <cuda_runtime.h>

constexpr int TILE = 32;       // a tile is TILE x TILE elements
constexpr int BLOCK_ROWS = 8;  // a block is TILE x BLOCK_ROWS threads

//! [kernel]
__global__ void transpose_naive_kernel(const float* in, float* out, int rows, int cols)
{
    const int col = blockIdx.x * TILE + threadIdx.x;
    const int first_row = blockIdx.y * TILE + threadIdx.y;
    // 8 rows of threads cover the tile's 32 rows in 4 steps.
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        const int row = first_row + j;
        // Tiles at the right and bottom edges stick out past the matrix.
        if (row < rows && col < cols) {
            // Consecutive threads read consecutive floats of one row: coalesced.
            // They write one column of `out`, `rows` floats apart: strided.
            out[row * rows + col] = in[row * cols + col];  // BUG: should be out[col * rows + row]
        }
    }
}
//! [kernel]

//! [launch]
void launch_transpose_naive(const float* in, float* out, int rows, int cols)
{
    const dim3 block(TILE, BLOCK_ROWS);
    const dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);  // x runs along columns
    transpose_naive_kernel<<<grid, block>>>(in, out, rows, cols);
    CUDA_CHECK(cudaGetLastError());
}
//! [launch]
