// Lab 07, going further: thread coarsening. Your code goes here (bonus points).
//
// The same convolution as convolution.cu (a correlation with zero padding, odd k up to MAX_K).
// Each thread computes a block of 8 rows x 4 columns of outputs, and a block of 32 x 4 threads a
// tile of 32 rows x 128 columns. A thread walks down the 8 + 2r input rows its outputs need, one row at a time:
// it loads the 4 + 2r inputs of that row into registers, with 16-byte loads straight from
// global memory, and uses each of them for every output of its block that needs it, up to k
// rows x 4 columns of them. So each input row is read once per thread instead of once per mask
// row, and no shared-memory tile, no barrier and no second copy of the data are needed: the
// loads that neighbouring threads share (the halo) hit the L1 cache.
// The kernel is a template on k, so that every loop over the mask unrolls, the window and the
// sums stay in registers, and each mask value is an operand that the multiply-add reads straight
// from constant memory.
// Read coarsened.md first (going further). Check your work with:   make check LAB=07
#include "common/check.hpp"

#include <cuda_runtime.h>

#include <cstddef>

constexpr int MAX_K = 15;
constexpr int THREADS_X = 32;
constexpr int THREADS_Y = 4;
constexpr int OUTPUTS_X = 4;                    // outputs per thread along a row: one float4
constexpr int OUTPUTS_Y = 8;                    // and down a column
constexpr int TILE_W = THREADS_X * OUTPUTS_X;   // 128 output columns per block
constexpr int TILE_H = THREADS_Y * OUTPUTS_Y;   // 32 output rows per block

//! [mask]
// This file has a constant-memory mask of its own, so it needs its own set_mask.
__constant__ float c_mask[MAX_K * MAX_K];

void set_mask(const float* mask, int k)
{
    // TODO 1: as in convolution.cu: copy the k * k floats into c_mask, checked.
    (void)mask, (void)k;
}
//! [mask]

//! [load]
// window[q] = in[row][col + q] for q < WINDOW, 0 outside the image. col is a multiple of 4.
// With VECTOR (width a multiple of 4, so every row starts on a 16-byte boundary) each group of
// 4 is one 16-byte load, and lies either wholly inside the image or wholly outside it.
template <int WINDOW, bool VECTOR>
__device__ void load_row(const float* __restrict__ in, int height, int width, int row, int col, float (&window)[WINDOW])
{
    // TODO 2: for v < WINDOW / 4 (#pragma unroll), the 4 floats at x = col + 4 * v:
    //         - with VECTOR: one float4, *reinterpret_cast<const float4*>(&in[row * width + x])
    //           (index in size_t), when the row is inside the image and 0 <= x < width; else
    //           four zeros. Copy its x, y, z, w into window[4 * v + 0 .. 3].
    //         - without: float by float, window[4 * v + e] = in[row][x + e] when both the row and
    //           the column x + e are inside the image, 0.0f otherwise.
    for (int q = 0; q < WINDOW; ++q) window[q] = 0.0f;  // replace this line
    (void)in, (void)height, (void)width, (void)row, (void)col;
}
//! [load]

//! [kernel]
template <int K, bool VECTOR>
__global__ void __launch_bounds__(THREADS_X * THREADS_Y)
    convolution_coarsened_kernel(const float* __restrict__ in, float* __restrict__ out, int height, int width)
{
    constexpr int R = (K - 1) / 2;
    constexpr int HALO = (R + 3) / 4 * 4;               // R rounded up to whole float4s
    constexpr int WINDOW = HALO + OUTPUTS_X + HALO;     // the inputs of one row, in registers

    // This thread's outputs: rows y .. y + 7, columns x .. x + 3. No barrier in this kernel, so
    // a thread with nothing to compute may leave at once.
    const int x = (blockIdx.x * THREADS_X + threadIdx.x) * OUTPUTS_X;
    const int y = (blockIdx.y * THREADS_Y + threadIdx.y) * OUTPUTS_Y;
    if (x >= width || y >= height) return;

    float sum[OUTPUTS_Y][OUTPUTS_X] = {};
    // TODO 3: for each input row t < OUTPUTS_Y + 2 * R (#pragma unroll on this loop and every
    //         loop inside it):
    //           - float window[WINDOW]; load_row<WINDOW, VECTOR>(in, height, width, y - R + t, x - HALO, window);
    //           - for each mask row i < K: the output row it serves is o = t - i; skip it unless
    //             0 <= o < OUTPUTS_Y. Then for j < K and c < OUTPUTS_X:
    //             sum[o][c] += c_mask[i * K + j] * window[HALO - R + c + j].
    //         Index window and sum only with counters of unrolled loops, so they stay in registers.
    // TODO 4: write sum[o][c] to out[y + o][x + c] (index in size_t) for o < OUTPUTS_Y, only
    //         where y + o < height; with VECTOR as one float4 per row (x + 3 < width then holds),
    //         without, float by float where x + c < width.
    (void)sum, (void)out, (void)WINDOW;
}
//! [kernel]

//! [launch]
namespace {
template <int K>
void launch_coarsened(const float* in, float* out, int height, int width)
{
    const dim3 block(THREADS_X, THREADS_Y);
    const dim3 grid((width + TILE_W - 1) / TILE_W, (height + TILE_H - 1) / TILE_H);
    // 16-byte loads and stores need every row to start on a 16-byte boundary.
    if (width % 4 == 0)
        convolution_coarsened_kernel<K, true><<<grid, block>>>(in, out, height, width);
    else
        convolution_coarsened_kernel<K, false><<<grid, block>>>(in, out, height, width);
    CUDA_CHECK(cudaGetLastError());
}
}  // namespace

// k is a run-time value; each odd k has its own compiled kernels.
void launch_convolution_coarsened(const float* in, float* out, int height, int width, int k)
{
    switch (k) {
    case 1: launch_coarsened<1>(in, out, height, width); break;
    case 3: launch_coarsened<3>(in, out, height, width); break;
    case 5: launch_coarsened<5>(in, out, height, width); break;
    case 7: launch_coarsened<7>(in, out, height, width); break;
    case 9: launch_coarsened<9>(in, out, height, width); break;
    case 11: launch_coarsened<11>(in, out, height, width); break;
    case 13: launch_coarsened<13>(in, out, height, width); break;
    case 15: launch_coarsened<15>(in, out, height, width); break;
    default: throw std::invalid_argument("launch_convolution_coarsened: k must be odd, from 1 to 15");
    }
}
//! [launch]
