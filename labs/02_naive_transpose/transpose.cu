// Lab 02, naive transpose: your code goes here.
//
// out = in^T: `in` is rows x cols and `out` is cols x rows, both row-major.
// Each block of 32 x 8 threads moves one 32 x 32 tile; each thread moves 4 elements.
// Read README.md beside this file first. Check your work with:   make check LAB=02
#include "common/check.hpp"

#include <cuda_runtime.h>

constexpr int TILE = 32;       // a tile is TILE x TILE elements
constexpr int BLOCK_ROWS = 8;  // a block is TILE x BLOCK_ROWS threads

//! [kernel]
__global__ void transpose_naive_kernel(const float* in, float* out, int rows, int cols)
{
    // TODO 1: this thread's column, and the first of its 4 rows:
    //           col       = blockIdx.x * TILE + threadIdx.x
    //           first_row = blockIdx.y * TILE + threadIdx.y
    // TODO 2: loop j = 0, 8, 16, 24 (step BLOCK_ROWS); row = first_row + j.
    // TODO 3: tiles at the right and bottom edges stick out past the matrix: only when
    //         row < rows and col < cols, copy in[row][col] to out[col][row].
    //         Row-major: in[row][col] is in[row * cols + col]; out has `rows` columns.
}
//! [kernel]

//! [launch]
void launch_transpose_naive(const float* in, float* out, int rows, int cols)
{
    const dim3 block(TILE, BLOCK_ROWS);
    // TODO 4: a grid of tiles, rounded up in both directions: grid.x counts tiles along the
    //         columns, grid.y along the rows. A dim3 holds a 2-D (or 3-D) size, x first, as
    //         `block` above does: const dim3 grid(tiles along the columns, tiles along the rows).
    // TODO 5: launch transpose_naive_kernel<<<grid, block>>>(in, out, rows, cols) and check it
    //         with CUDA_CHECK(cudaGetLastError()).
    (void)in, (void)out, (void)rows, (void)cols, (void)block;
}
//! [launch]
