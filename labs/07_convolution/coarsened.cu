// Lab 07, going further: thread coarsening. Your code goes here (bonus points).
//
// The same convolution as convolution.cu (a correlation with zero padding, odd k up to MAX_K).
// A block of 32 x 8 threads computes a 128 x 8 tile of outputs: each thread computes 4
// neighbouring outputs of a row. For each row of the mask it reads the 4 + 2r inputs those outputs
// need from the shared tile into registers, with 16-byte loads, and uses every one of them for
// up to 4 outputs: about k * (4 + 2r) / 4 shared loads per output instead of k * k.
// The kernel is a template on k, so that every loop over the mask unrolls, the window stays in
// registers, and each mask value is an operand that the multiply-add reads straight from
// constant memory.
// Read the last section of README.md first. Check your work with:   make check LAB=07
#include "common/check.hpp"

#include <cuda_runtime.h>

constexpr int MAX_K = 15;
constexpr int THREADS_X = 32;
constexpr int THREADS_Y = 8;
constexpr int OUTPUTS = 4;                       // outputs per thread, along a row
constexpr int TILE_W = THREADS_X * OUTPUTS;      // 128 output columns per block
constexpr int TILE_H = THREADS_Y;                // 8 output rows per block

//! [mask]
// This file has a constant-memory mask of its own, so it needs its own set_mask.
__constant__ float c_mask[MAX_K * MAX_K];

void set_mask(const float* mask, int k)
{
    // TODO 1: as in convolution.cu: copy the k * k floats into c_mask, checked.
    (void)mask, (void)k;
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

    // Rows of a multiple of 4 floats, 16-byte aligned: every float4 read of the tile is aligned.
    __shared__ __align__(16) float tile[ROWS][PITCH];

    const int x0 = blockIdx.x * TILE_W;
    const int y0 = blockIdx.y * TILE_H;
    const int thread = threadIdx.y * THREADS_X + threadIdx.x;

    // TODO 2: load the tile as in step 2, but ROWS x PITCH cells (the columns past TILE_W + 2R
    //         are read by the last thread's 16-byte loads and never used):
    //         tile[ty][tx] = in[y0 - R + ty][x0 - R + tx], 0.0f outside the image. Use a loop
    //         with a fixed number of rounds, (ROWS * PITCH + THREADS - 1) / THREADS, and
    //         #pragma unroll, cell t = thread + n * THREADS when t < ROWS * PITCH: the compiler
    //         can then issue all of a thread's loads before the first one returns.
    // TODO 3: wait for the whole tile.
    // TODO 4: float sum[OUTPUTS] = {}; for each mask row i (#pragma unroll on every loop here):
    //           - copy tile row threadIdx.y + i, columns OUTPUTS * threadIdx.x + 4 * v for
    //             v < VECTORS, into a register array window[4 * VECTORS], one float4 each
    //             (*reinterpret_cast<const float4*>(&tile[..][..]));
    //           - for j < K and c < OUTPUTS: sum[c] += c_mask[i * K + j] * window[c + j].
    //         Index window and sum only with loop counters of unrolled loops, so they stay in
    //         registers.
    // TODO 5: write sum[c] to out[y][x + c], y = y0 + threadIdx.y, x = x0 + OUTPUTS * threadIdx.x,
    //         only where that output exists. When width % 4 == 0 and all four exist, one float4
    //         store does it (rows then start on 16-byte boundaries).
    (void)tile, (void)in, (void)out, (void)height, (void)width, (void)x0, (void)y0, (void)thread, (void)THREADS;
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
