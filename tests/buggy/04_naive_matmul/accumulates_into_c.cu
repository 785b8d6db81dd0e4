// Buggy variant of lab 04: the kernel adds into C without setting it first. C happens to hold
// whatever was there; the checker fills it with NaN, so every sum comes out NaN. The output is
// complete (no poison pattern left), but wrong: the sanitizer test gives no credit for it.
// expect-fail: 17 x 33 x 65
// expect-fail: 512 x 512 x 512
// expect-fail: compute-sanitizer memcheck: small sizes
// expect-message: C holds NaN
#include "common/check.hpp"

#include <cuda_runtime.h>

constexpr int BLOCK = 16;  // a block is BLOCK x BLOCK threads

//! [kernel]
__global__ void matmul_naive_kernel(const float* a, const float* b, float* c, int m, int k, int n)
{
    // x runs along the columns of C, y along its rows.
    const int row = blockIdx.y * BLOCK + threadIdx.y;
    const int col = blockIdx.x * BLOCK + threadIdx.x;
    if (row < m && col < n) {
        // Row `row` of A times column `col` of B: two loads from global memory per multiply-add.
        // BUG: accumulates into C, which nobody set to 0
        for (int p = 0; p < k; ++p) c[row * n + col] += a[row * k + p] * b[p * n + col];
    }
}
//! [kernel]

//! [launch]
void launch_matmul_naive(const float* a, const float* b, float* c, int m, int k, int n)
{
    const dim3 block(BLOCK, BLOCK);
    const dim3 grid((n + BLOCK - 1) / BLOCK, (m + BLOCK - 1) / BLOCK);
    matmul_naive_kernel<<<grid, block>>>(a, b, c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}
//! [launch]

//! [one-dimensional]
// Optional exercise (the CIS-750 report's first kernel): 1-D blocks of 256 threads laid along
// C in row-major order, each thread finding its row and column by division.
constexpr int THREADS_1D = 256;

__global__ void matmul_naive_1d_kernel(const float* a, const float* b, float* c, int m, int k, int n)
{
    const int index = blockIdx.x * THREADS_1D + threadIdx.x;
    if (index < m * n) {
        const int row = index / n;
        const int col = index % n;
        float sum = 0.0f;
        for (int p = 0; p < k; ++p) sum += a[row * k + p] * b[p * n + col];
        c[index] = sum;
    }
}

void launch_matmul_naive_1d(const float* a, const float* b, float* c, int m, int k, int n)
{
    const int blocks = (m * n + THREADS_1D - 1) / THREADS_1D;
    matmul_naive_1d_kernel<<<blocks, THREADS_1D>>>(a, b, c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}
//! [one-dimensional]
