// Lab 05, going further: register blocking. Your code goes here (bonus points).
//
// C = A·B with A m x k, B k x n and C m x n, all float and row-major.
// A block of 256 threads computes a 128 x 128 tile of C, stepping along k by 8. Each thread
// keeps an 8 x 8 block of C in registers: per step it reads 8 values of A and 8 of B from shared
// memory and does 64 multiply-adds with them, where lab 05's kernel did one per two reads.
// Read register_blocking.md first (going further, step 1). Check your work with:
//   make check LAB=05
#include "common/check.hpp"

#include <cuda_runtime.h>

constexpr int BM = 128;  // rows of C per block
constexpr int BN = 128;  // columns of C per block
constexpr int BK = 8;    // steps of k per slice
constexpr int TM = 8;    // rows of C per thread
constexpr int TN = 8;    // columns of C per thread
constexpr int THREADS = (BM / TM) * (BN / TN);  // 256

//! [load]
// Four consecutive floats of a row, or zeros where they fall outside the matrix. With VECTOR,
// one 16-byte load when all four exist (the caller guarantees 16-byte alignment).
template <bool VECTOR>
__device__ float4 load4(const float* matrix, int rows, int cols, int row, int col)
{
    if (VECTOR && row < rows && col + 3 < cols)
        return *reinterpret_cast<const float4*>(&matrix[row * cols + col]);
    float4 v;
    v.x = (row < rows && col + 0 < cols) ? matrix[row * cols + col + 0] : 0.0f;
    v.y = (row < rows && col + 1 < cols) ? matrix[row * cols + col + 1] : 0.0f;
    v.z = (row < rows && col + 2 < cols) ? matrix[row * cols + col + 2] : 0.0f;
    v.w = (row < rows && col + 3 < cols) ? matrix[row * cols + col + 3] : 0.0f;
    return v;
}
//! [load]

//! [kernel]
template <bool VECTOR>
__global__ void __launch_bounds__(THREADS)
    matmul_register_blocked_kernel(const float* a, const float* b, float* c, int m, int k, int n)
{
    // A's slice is stored transposed, k-major, so that a thread's 8 rows of it are contiguous.
    __shared__ float a_slice[BK][BM];
    __shared__ float b_slice[BK][BN];

    const int block_row = blockIdx.y * BM;
    const int block_col = blockIdx.x * BN;
    const int thread_row = threadIdx.x / (BN / TN) * TM;  // first of this thread's 8 rows in the tile
    const int thread_col = threadIdx.x % (BN / TN) * TN;  // first of its 8 columns

    // Which 4 floats of each slice this thread loads: A's 128 x 8 and B's 8 x 128 slices are
    // 1024 floats each, 4 per thread.
    const int a_load_row = threadIdx.x / (BK / 4), a_load_col = threadIdx.x % (BK / 4) * 4;
    const int b_load_row = threadIdx.x / (BN / 4), b_load_col = threadIdx.x % (BN / 4) * 4;

    float sum[TM][TN] = {};
    for (int k0 = 0; k0 < k; k0 += BK) {
        // TODO 1: load this thread's 4 floats of A's slice with load4<VECTOR>(a, m, k, row, col)
        //         (row block_row + a_load_row, column k0 + a_load_col) and store them
        //         transposed: a_slice[a_load_col + q][a_load_row] for q = 0..3.
        // TODO 2: load this thread's 4 floats of B's slice with load4<VECTOR>(b, k, n, row, col)
        //         (row k0 + b_load_row, column block_col + b_load_col) into
        //         b_slice[b_load_row][b_load_col ..], one float4 store:
        //         *reinterpret_cast<float4*>(&b_slice[b_load_row][b_load_col]) = the float4.
        // TODO 3: wait for the slices: __syncthreads().
        // TODO 4: for each p < BK: copy a_slice[p][thread_row + i] (i < TM) and
        //         b_slice[p][thread_col + j] (j < TN) into two small register arrays, then
        //         sum[i][j] += a[i] * b[j] for all 64 pairs.
        // TODO 5: wait before the next slice overwrites these: __syncthreads().
    }
    // TODO 6: write sum[i][j] to C[block_row + thread_row + i][block_col + thread_col + j],
    //         only where that element exists.
    (void)a_slice, (void)b_slice, (void)block_row, (void)block_col, (void)thread_row, (void)thread_col,
        (void)a_load_row, (void)a_load_col, (void)b_load_row, (void)b_load_col, (void)sum, (void)c;
}
//! [kernel]

//! [launch]
void launch_matmul_register_blocked(const float* a, const float* b, float* c, int m, int k, int n)
{
    const dim3 grid((n + BN - 1) / BN, (m + BM - 1) / BM);
    // 16-byte loads need every row of A and of B to start on a 16-byte boundary.
    if (k % 4 == 0 && n % 4 == 0)
        matmul_register_blocked_kernel<true><<<grid, THREADS>>>(a, b, c, m, k, n);
    else
        matmul_register_blocked_kernel<false><<<grid, THREADS>>>(a, b, c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}
//! [launch]
