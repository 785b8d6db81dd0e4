// Lab 07, going further: thread coarsening. The reference solution.
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
__constant__ float c_mask[MAX_K * MAX_K];

void set_mask(const float* mask, int k)
{
    CUDA_CHECK(cudaMemcpyToSymbol(c_mask, mask, static_cast<size_t>(k) * k * sizeof(float)));
}
//! [mask]

//! [load]
// window[q] = in[row][col + q] for q < WINDOW, 0 outside the image. col is a multiple of 4.
// With VECTOR (width a multiple of 4, so every row starts on a 16-byte boundary) each group of
// 4 is one 16-byte load, and lies either wholly inside the image or wholly outside it.
template <int WINDOW, bool VECTOR>
__device__ void load_row(const float* __restrict__ in, int height, int width, int row, int col, float (&window)[WINDOW])
{
    const bool row_inside = row >= 0 && row < height;
#pragma unroll
    for (int v = 0; v < WINDOW / 4; ++v) {
        const int x = col + 4 * v;
        if (VECTOR) {
            float4 q = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (row_inside && x >= 0 && x < width)
                q = *reinterpret_cast<const float4*>(&in[static_cast<size_t>(row) * width + x]);
            window[4 * v + 0] = q.x;
            window[4 * v + 1] = q.y;
            window[4 * v + 2] = q.z;
            window[4 * v + 3] = q.w;
        } else {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const bool inside = row_inside && x + e >= 0 && x + e < width;
                window[4 * v + e] = inside ? in[static_cast<size_t>(row) * width + x + e] : 0.0f;
            }
        }
    }
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
    // Input row y - R + t is row i of the mask for output row o = t - i. Every loop here
    // unrolls, so the test on o costs nothing at run time: it only decides which multiply-adds
    // the compiler emits.
#pragma unroll
    for (int t = 0; t < OUTPUTS_Y + 2 * R; ++t) {
        float window[WINDOW];  // window[q] = in[y - R + t][x - HALO + q]
        load_row<WINDOW, VECTOR>(in, height, width, y - R + t, x - HALO, window);
#pragma unroll
        for (int i = 0; i < K; ++i) {
            const int o = t - i;
            if (o < 0 || o >= OUTPUTS_Y) continue;
#pragma unroll
            for (int j = 0; j < K; ++j) {
                const float m = c_mask[i * K + j];  // a constant address: no load instruction
#pragma unroll
                for (int c = 0; c < OUTPUTS_X; ++c) sum[o][c] += m * window[HALO - R + c + j];
            }
        }
    }

#pragma unroll
    for (int o = 0; o < OUTPUTS_Y; ++o) {
        if (y + o >= height) break;
        float* const out_row = out + static_cast<size_t>(y + o) * width;
        if (VECTOR) {
            // x + 3 < width too: one 16-byte store, 512 consecutive bytes a warp.
            *reinterpret_cast<float4*>(&out_row[x]) = make_float4(sum[o][0], sum[o][1], sum[o][2], sum[o][3]);
        } else {
#pragma unroll
            for (int c = 0; c < OUTPUTS_X; ++c)
                if (x + c < width) out_row[x + c] = sum[o][c];
        }
    }
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
