// Lab 07, going further: thread coarsening. The reference solution.
//
// The same convolution as convolution.cu (a correlation with zero padding, odd k up to MAX_K).
// A block of 32 x 8 threads computes a 128 x 8 tile of outputs: each thread computes 4
// neighbouring outputs of a row. For each row of the mask it reads the 4 + 2r inputs those outputs
// need from the shared tile into registers, with 16-byte loads, and uses every one of them for
// up to 4 outputs: about k * (4 + 2r) / 4 shared loads per output instead of k * k.
// The kernel is a template on k, so that every loop over the mask unrolls, the window stays in
// registers, and each mask value is an operand that the multiply-add reads straight from
// constant memory.
#include "common/check.hpp"

#include <cuda_runtime.h>

constexpr int MAX_K = 15;
constexpr int THREADS_X = 32;
constexpr int THREADS_Y = 8;
constexpr int OUTPUTS = 4;                       // outputs per thread, along a row
constexpr int TILE_W = THREADS_X * OUTPUTS;      // 128 output columns per block
constexpr int TILE_H = THREADS_Y;                // 8 output rows per block

//! [mask]
__constant__ float c_mask[MAX_K * MAX_K];

void set_mask(const float* mask, int k)
{
    CUDA_CHECK(cudaMemcpyToSymbol(c_mask, mask, static_cast<size_t>(k) * k * sizeof(float)));
}
//! [mask]

//! [kernel]
template <int K>
__global__ void __launch_bounds__(THREADS_X * THREADS_Y)
    convolution_coarsened_kernel(const float* in, float* out, int height, int width)
{
    constexpr int R = (K - 1) / 2;
    constexpr int ROWS = TILE_H + 2 * R;                 // tile rows: the outputs' and the halo
    constexpr int WINDOW = OUTPUTS + 2 * R;              // inputs of one mask row for 4 outputs
    constexpr int VECTORS = (WINDOW + 3) / 4;            // 16-byte loads that cover them
    constexpr int PITCH = TILE_W + 4 * (VECTORS - 1);    // >= TILE_W + 2R, a multiple of 4
    constexpr int THREADS = THREADS_X * THREADS_Y;

    // Rows of a multiple of 4 floats, 16-byte aligned: every float4 read below is aligned.
    __shared__ __align__(16) float tile[ROWS][PITCH];

    const int x0 = blockIdx.x * TILE_W;
    const int y0 = blockIdx.y * TILE_H;
    const int thread = threadIdx.y * THREADS_X + threadIdx.x;

    // Load, as in step 2: tile[ty][tx] = in[y0 - R + ty][x0 - R + tx], 0 outside the image. The
    // last few columns (up to PITCH) are read by the last thread's 16-byte loads and never used.
    // A fixed number of rounds, unrolled: all of a thread's loads are in flight at once.
    constexpr int ROUNDS = (ROWS * PITCH + THREADS - 1) / THREADS;
#pragma unroll
    for (int n = 0; n < ROUNDS; ++n) {
        const int t = thread + n * THREADS;
        if (t < ROWS * PITCH) {
            const int ty = t / PITCH, tx = t % PITCH;
            const int row = y0 - R + ty, col = x0 - R + tx;
            const bool inside = row >= 0 && row < height && col >= 0 && col < width;
            tile[ty][tx] = inside ? in[row * width + col] : 0.0f;
        }
    }
    __syncthreads();

    // This thread's outputs are (y, x .. x + 3). For mask row i they need tile row
    // threadIdx.y + i, columns 4 * threadIdx.x .. 4 * threadIdx.x + WINDOW - 1. A quarter warp's
    // eight 16-byte loads cover 128 consecutive bytes: all 32 banks, no conflict.
    float sum[OUTPUTS] = {};
#pragma unroll
    for (int i = 0; i < K; ++i) {
        float window[4 * VECTORS];
#pragma unroll
        for (int v = 0; v < VECTORS; ++v) {
            const float4 q = *reinterpret_cast<const float4*>(&tile[threadIdx.y + i][OUTPUTS * threadIdx.x + 4 * v]);
            window[4 * v + 0] = q.x;
            window[4 * v + 1] = q.y;
            window[4 * v + 2] = q.z;
            window[4 * v + 3] = q.w;
        }
#pragma unroll
        for (int j = 0; j < K; ++j) {
            const float m = c_mask[i * K + j];  // a constant address: no load instruction
#pragma unroll
            for (int c = 0; c < OUTPUTS; ++c) sum[c] += m * window[c + j];
        }
    }

    const int y = y0 + threadIdx.y;
    const int x = x0 + OUTPUTS * threadIdx.x;
    if (y >= height) return;
    float* const out_row = out + static_cast<size_t>(y) * width;
    if (width % 4 == 0 && x + OUTPUTS <= width) {
        // Rows start on 16-byte boundaries: one 16-byte store, 512 consecutive bytes a warp.
        *reinterpret_cast<float4*>(&out_row[x]) = make_float4(sum[0], sum[1], sum[2], sum[3]);
    } else {
#pragma unroll
        for (int c = 0; c < OUTPUTS; ++c)
            if (x + c < width) out_row[x + c] = sum[c];
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
    convolution_coarsened_kernel<K><<<grid, block>>>(in, out, height, width);
    CUDA_CHECK(cudaGetLastError());
}
}  // namespace

// k is a run-time value; each odd k has its own compiled kernel.
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
