// Lab 05, tiled matrix multiplication: your code goes here.
//
// C = A·B with A m x k, B k x n and C m x n, all float and row-major.
// A block of TILE x TILE threads computes a TILE x TILE tile of C. It walks along k in phases;
// in each phase it stages one tile of A and one of B in shared memory.
// Read README.md beside this file first. Check your work with:   make check LAB=05
#include "common/check.hpp"

#include <cuda_runtime.h>

constexpr int TILE = 16;

//! [kernel]
__global__ void matmul_tiled_kernel(const float* a, const float* b, float* c, int m, int k, int n)
{
    __shared__ float a_tile[TILE][TILE];
    __shared__ float b_tile[TILE][TILE];

    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;
    float sum = 0.0f;
    for (int phase = 0; phase < (k + TILE - 1) / TILE; ++phase) {
        // TODO 1: load one cell of each tile:
        //           a_tile[threadIdx.y][threadIdx.x] = A[row][phase * TILE + threadIdx.x]
        //           b_tile[threadIdx.y][threadIdx.x] = B[phase * TILE + threadIdx.y][col]
        //         A cell past the edge of A or B (the last phase sticks out when k is not a
        //         multiple of TILE, and edge blocks stick out past m and n) must be 0.
        // TODO 2: wait until both tiles are complete: __syncthreads(), as in lab 03.
        // TODO 3: add this phase's part of the inner product: a_tile row threadIdx.y times
        //         b_tile column threadIdx.x, over p = 0 .. TILE-1.
        // TODO 4: wait until everyone has finished reading, before the next phase overwrites
        //         the tiles: __syncthreads() again.
        // Do not return early anywhere: every thread must load its cells and reach both barriers.
    }
    // TODO 5: only when row < m and col < n, write sum to C[row][col].
    (void)&a_tile, (void)&b_tile, (void)a, (void)b, (void)c, (void)m, (void)n, (void)row, (void)col, (void)&sum;
}
//! [kernel]

//! [launch]
void launch_matmul_tiled(const float* a, const float* b, float* c, int m, int k, int n)
{
    const dim3 block(TILE, TILE);
    const dim3 grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE);
    matmul_tiled_kernel<<<grid, block>>>(a, b, c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}
//! [launch]
