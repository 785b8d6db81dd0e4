// Lab 04, naive matrix multiplication: your code goes here.
//
// C = A·B with A m x k, B k x n and C m x n, all float and row-major.
// One thread computes one element of C; blocks of 16 x 16 threads tile C.
// Read README.md beside this file first. Check your work with:   make check LAB=04
#include "common/check.hpp"

#include <cuda_runtime.h>

constexpr int BLOCK = 16;  // a block is BLOCK x BLOCK threads

//! [kernel]
__global__ void matmul_naive_kernel(const float* a, const float* b, float* c, int m, int k, int n)
{
    // TODO 1: this thread's element of C. x runs along the columns of C, y along its rows:
    //           row = blockIdx.y * BLOCK + threadIdx.y,  col = blockIdx.x * BLOCK + threadIdx.x
    // TODO 2: blocks at the right and bottom edges stick out past C: only when row < m and
    //         col < n, go on.
    // TODO 3: the inner product of row `row` of A and column `col` of B, summed in a local
    //         float over p = 0 .. k-1 (A[row][p] is a[row * k + p], B[p][col] is b[p * n + col]),
    //         then written once to C[row][col], c[row * n + col].
}
//! [kernel]

//! [launch]
void launch_matmul_naive(const float* a, const float* b, float* c, int m, int k, int n)
{
    const dim3 block(BLOCK, BLOCK);
    // TODO 4: a grid that covers C, rounded up: grid.x along the n columns, grid.y along the m rows.
    // TODO 5: launch matmul_naive_kernel<<<grid, block>>>(a, b, c, m, k, n) and check it with
    //         CUDA_CHECK(cudaGetLastError()).
    (void)a, (void)b, (void)c, (void)m, (void)k, (void)n, (void)block;
}
//! [launch]

//! [one-dimensional]
// Optional exercise, for bonus points (the CIS-750 report's first kernel): 1-D blocks of 256
// threads laid along C in row-major order.
constexpr int THREADS_1D = 256;

__global__ void matmul_naive_1d_kernel(const float* a, const float* b, float* c, int m, int k, int n)
{
    // TODO (optional): index = blockIdx.x * THREADS_1D + threadIdx.x; when index < m * n,
    //         row = index / n and col = index % n; then the same inner product as above.
}

void launch_matmul_naive_1d(const float* a, const float* b, float* c, int m, int k, int n)
{
    // TODO (optional): enough blocks of THREADS_1D threads to cover all m * n elements of C,
    //         then launch matmul_naive_1d_kernel<<<blocks, THREADS_1D>>> and check it.
    (void)a, (void)b, (void)c, (void)m, (void)k, (void)n, (void)THREADS_1D;
}
//! [one-dimensional]
