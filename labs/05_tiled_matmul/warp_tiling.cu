// Lab 05, going further, step 2: warp tiling. Your code goes here (bonus points).
//
// C = A·B with A m x k, B k x n and C m x n, all float and row-major.
// Step 1 (register_blocking.cu) gave each thread an 8 x 8 block of C in registers. This step
// keeps the 64 accumulators and changes what surrounds them, so that the multiply-adds are
// almost the only instructions left, and the warps seldom wait:
//   1. Warp tiling. The 32 threads of a warp own one 32 x 64 patch of C, and a thread's 8 x 8
//      block is four 4 x 4 pieces spread over that patch. At each step of k the warp reads only
//      4 different float4 of A and 8 of B from shared memory; threads that want the same float4
//      get it in the same transaction (a broadcast).
//   2. 16 bytes at a time everywhere: float4 loads from global memory, float4 reads from shared
//      memory, float4 stores to C.
//   3. Double buffering. Two copies of each slice in shared memory. The next slice's global
//      loads are issued before this slice's 1024 multiply-adds per thread and land while those
//      run, so no warp waits for device memory; and one barrier per slice instead of two.
// Read warp_tiling.md first (going further, step 2). Check your work with:
//   make check LAB=05
#include "common/check.hpp"

#include <cuda_runtime.h>

constexpr int BK = 16;  // steps of k per slice
constexpr int PAD = 4;  // floats of padding at the end of each row of A's transposed slice

//! [load]
// Four consecutive floats of a row, or zeros where they fall outside the matrix. With VECTOR
// (cols a multiple of 4, so every row starts on a 16-byte boundary, and col a multiple of 4)
// the four are wholly inside the matrix or wholly outside it: one 16-byte load, or zeros.
template <bool VECTOR>
__device__ float4 load4_or_zero(const float* __restrict__ matrix, int rows, int cols, int row, int col)
{
    if (VECTOR)
        return (row < rows && col < cols) ? *reinterpret_cast<const float4*>(&matrix[row * cols + col])
                                          : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float4 v;
    v.x = (row < rows && col + 0 < cols) ? matrix[row * cols + col + 0] : 0.0f;
    v.y = (row < rows && col + 1 < cols) ? matrix[row * cols + col + 1] : 0.0f;
    v.z = (row < rows && col + 2 < cols) ? matrix[row * cols + col + 2] : 0.0f;
    v.w = (row < rows && col + 3 < cols) ? matrix[row * cols + col + 3] : 0.0f;
    return v;
}
//! [load]

// Threads in a block that computes a BM x BN tile of C with warps of WM x WN each.
__host__ __device__ constexpr int warp_tiled_threads(int bm, int bn, int wm, int wn) { return bm / wm * (bn / wn) * 32; }

//! [kernel]
// A block computes a BM x BN tile of C, each of its warps a WM x WN patch of that tile. In a
// patch, the lanes form a 4 x 8 grid that covers a 16 x 32 sub-patch, a 4 x 4 piece per lane,
// and that grid is repeated (WM / 16) x (WN / 32) times. For the 32 x 64 patch:
//
//           columns 0-31          32-63            lane L owns, in each of the four
//   rows  0-15 [ sub-patch ]   [ sub-patch ]       sub-patches, rows 4 * (L / 8) + 0..3
//   rows 16-31 [ sub-patch ]   [ sub-patch ]       and columns 4 * (L % 8) + 0..3
//
// The launch bounds cap a thread at 128 registers (65536 / 512): 512 threads, 16 warps, per SM.
template <int BM, int BN, int WM, int WN, bool VECTOR>
__global__ void __launch_bounds__(warp_tiled_threads(BM, BN, WM, WN), 512 / warp_tiled_threads(BM, BN, WM, WN))
    matmul_warp_tiled_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                             int m, int k, int n)
{
    constexpr int THREADS = warp_tiled_threads(BM, BN, WM, WN);
    constexpr int M_PIECES = WM / 16;               // 4 x 4 pieces per lane along m ...
    constexpr int N_PIECES = WN / 32;               // ... and along n
    constexpr int A_LOADS = BM * BK / 4 / THREADS;  // float4 loads of A per thread per slice
    constexpr int B_LOADS = BK * BN / 4 / THREADS;  // and of B
    static_assert(A_LOADS * 4 * THREADS == BM * BK && B_LOADS * 4 * THREADS == BK * BN, "slices split evenly");

    // Two buffers of each slice. A's slice is stored transposed, k-major, as in step 1, so that
    // a lane's 4 rows of A at one step of k are one float4.
    __shared__ __align__(16) float a_slice[2][BK][BM + PAD];
    __shared__ __align__(16) float b_slice[2][BK][BN];

    const int block_row = blockIdx.y * BM;
    const int block_col = blockIdx.x * BN;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_row = warp / (BN / WN) * WM;  // the warp's patch within the block's tile
    const int warp_col = warp % (BN / WN) * WN;
    const int lane_row = lane / 8 * 4;           // the lane's piece within each sub-patch
    const int lane_col = lane % 8 * 4;

    // Global memory -> registers: this thread's float4s of the slice that starts at column k0
    // of A and row k0 of B. Consecutive threads take consecutive float4s of a row: coalesced.
    float4 a_next[A_LOADS], b_next[B_LOADS];
    auto load_slice = [&](int k0) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int f = threadIdx.x + l * THREADS;
            a_next[l] = load4_or_zero<VECTOR>(a, m, k, block_row + f / (BK / 4), k0 + f % (BK / 4) * 4);
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            const int f = threadIdx.x + l * THREADS;
            b_next[l] = load4_or_zero<VECTOR>(b, k, n, k0 + f / (BN / 4), block_col + f % (BN / 4) * 4);
        }
    };
    // Registers -> shared buffer `buf`; A's 4 floats go down a column of the transposed slice.
    // A warp stores 8 rows of A x 4 groups of 4 columns at once. Without PAD, the 4 groups'
    // addresses would be a multiple of 32 floats apart, all in one bank: a 4-way conflict;
    // PAD moves each row of the slice 4 banks on, which halves it.
    auto store_slice = [&](int buf) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int f = threadIdx.x + l * THREADS;
            const int row = f / (BK / 4), col = f % (BK / 4) * 4;
            a_slice[buf][col + 0][row] = a_next[l].x;
            a_slice[buf][col + 1][row] = a_next[l].y;
            a_slice[buf][col + 2][row] = a_next[l].z;
            a_slice[buf][col + 3][row] = a_next[l].w;
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            const int f = threadIdx.x + l * THREADS;
            *reinterpret_cast<float4*>(&b_slice[buf][f / (BN / 4)][f % (BN / 4) * 4]) = b_next[l];
        }
    };

    float sum[M_PIECES][4][N_PIECES][4] = {};
    const int slices = (k + BK - 1) / BK;
    // TODO 1: fill buffer 0 before the loop: load_slice(0), store_slice(0), then wait until every
    //         thread's part of it is in shared memory (__syncthreads()).
    for (int s = 0; s < slices; ++s) {
        const int buf = s % 2;
        // TODO 2: if there is a next slice (s + 1 < slices), issue its global loads now:
        //         load_slice((s + 1) * BK). Nothing waits for them until TODO 4.
        // TODO 3: for each step p < BK (#pragma unroll on this loop and every loop inside it):
        //           - for i < M_PIECES: one float4 of A, a_slice[buf][p][warp_row + i * 16 + lane_row],
        //             into a register array a_regs[i][0..3];
        //           - for j < N_PIECES: one float4 of B, b_slice[buf][p][warp_col + j * 32 + lane_col],
        //             into b_regs[j][0..3];
        //           - sum[i][ii][j][jj] += a_regs[i][ii] * b_regs[j][jj] for every i, ii < 4, j, jj < 4.
        // TODO 4: if there is a next slice, store_slice(1 - buf): the loads of TODO 2 into the other
        //         buffer. Then one barrier, __syncthreads(), reached by every thread.
        (void)buf;
    }
    // TODO 5: write the pieces. Lane piece (i, j), row ii holds C[row][col .. col + 3] with
    //         row = block_row + warp_row + i * 16 + lane_row + ii and
    //         col = block_col + warp_col + j * 32 + lane_col. Skip rows >= m. With VECTOR, one
    //         float4 store when col < n (n is then a multiple of 4: all four columns exist);
    //         without, float by float where col + jj < n.
    (void)load_slice, (void)store_slice, (void)sum, (void)c, (void)lane_row, (void)lane_col, (void)warp_row,
        (void)warp_col, (void)block_row, (void)block_col, (void)M_PIECES, (void)N_PIECES;
}
//! [kernel]

//! [launch]
template <int BM, int BN, int WM, int WN>
void launch_warp_tiled(const float* a, const float* b, float* c, int m, int k, int n)
{
    const dim3 grid((n + BN - 1) / BN, (m + BM - 1) / BM);
    constexpr int threads = warp_tiled_threads(BM, BN, WM, WN);
    // 16-byte loads and stores need every row of A, B and C to start on a 16-byte boundary.
    if (k % 4 == 0 && n % 4 == 0)
        matmul_warp_tiled_kernel<BM, BN, WM, WN, true><<<grid, threads>>>(a, b, c, m, k, n);
    else
        matmul_warp_tiled_kernel<BM, BN, WM, WN, false><<<grid, threads>>>(a, b, c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}

void launch_matmul_warp_tiled(const float* a, const float* b, float* c, int m, int k, int n)
{
    int device = 0, sms = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    // 128 x 128 tiles (8 warps of 32 x 64, 8 x 8 outputs a thread) when there are enough of them
    // to give every SM one. Otherwise (1024 x 1024 makes only 64) 64 x 64 tiles (4 warps of
    // 32 x 32, 8 x 4 outputs a thread): four times as many blocks, so no SM sits idle.
    const long long big_tiles = static_cast<long long>((m + 127) / 128) * ((n + 127) / 128);
    if (big_tiles >= sms)
        launch_warp_tiled<128, 128, 32, 64>(a, b, c, m, k, n);
    else
        launch_warp_tiled<64, 64, 32, 32>(a, b, c, m, k, n);
}
//! [launch]
