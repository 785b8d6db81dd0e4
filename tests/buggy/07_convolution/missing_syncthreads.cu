// Buggy variant of lab 07: no barrier between loading the tile and computing from it, so threads
// read tile cells that other warps have not loaded yet.
// expect-fail: no shared-memory race: compute-sanitizer racecheck (100 x 70)
// expect-message: racecheck found errors|not checked: compute-sanitizer racecheck is measured only on a correct kernel
#include "common/check.hpp"

#include <cuda_runtime.h>

constexpr int MAX_K = 15;
constexpr int BLOCK_W = 32;  // threads per block along a row, and outputs per block along a row
constexpr int BLOCK_H = 8;   // threads per block along a column, and outputs per block along a column

//! [mask]
// Every thread of a warp reads the same mask element at the same time: constant memory serves
// such a read to the whole warp at once, from a cache of its own.
__constant__ float c_mask[MAX_K * MAX_K];

void set_mask(const float* mask, int k)
{
    CUDA_CHECK(cudaMemcpyToSymbol(c_mask, mask, static_cast<size_t>(k) * k * sizeof(float)));
}
//! [mask]

//! [direct]
__global__ void convolution_direct_kernel(const float* in, float* out, int height, int width, int k)
{
    const int x = blockIdx.x * BLOCK_W + threadIdx.x;
    const int y = blockIdx.y * BLOCK_H + threadIdx.y;
    if (x >= width || y >= height) return;
    const int r = (k - 1) / 2;
    float sum = 0.0f;
    for (int i = 0; i < k; ++i) {
        const int row = y + i - r;
        if (row < 0 || row >= height) continue;  // a whole mask row above or below the image
        for (int j = 0; j < k; ++j) {
            const int col = x + j - r;
            if (col >= 0 && col < width) sum += c_mask[i * k + j] * in[row * width + col];
        }
    }
    out[y * width + x] = sum;
}

void launch_convolution_direct(const float* in, float* out, int height, int width, int k)
{
    const dim3 block(BLOCK_W, BLOCK_H);
    const dim3 grid((width + BLOCK_W - 1) / BLOCK_W, (height + BLOCK_H - 1) / BLOCK_H);
    convolution_direct_kernel<<<grid, block>>>(in, out, height, width, k);
    CUDA_CHECK(cudaGetLastError());
}
//! [direct]

//! [tiled]
__global__ void convolution_tiled_kernel(const float* in, float* out, int height, int width, int k)
{
    // Sized for the largest mask; a smaller one uses the top-left (8 + 2r) x (32 + 2r) cells.
    __shared__ float tile[BLOCK_H + MAX_K - 1][BLOCK_W + MAX_K - 1];

    const int r = (k - 1) / 2;
    const int tile_h = BLOCK_H + 2 * r;
    const int tile_w = BLOCK_W + 2 * r;
    const int x0 = blockIdx.x * BLOCK_W;  // the block's first output column
    const int y0 = blockIdx.y * BLOCK_H;  // and row

    // Load: tile[ty][tx] = in[y0 - r + ty][x0 - r + tx], 0 where that cell is outside the image.
    // The tile has more cells than the block has threads, so the 256 threads walk over it in
    // steps of 256; consecutive threads take consecutive cells of a row, so the reads coalesce.
    for (int t = threadIdx.y * BLOCK_W + threadIdx.x; t < tile_h * tile_w; t += BLOCK_W * BLOCK_H) {
        const int ty = t / tile_w, tx = t % tile_w;
        const int row = y0 - r + ty, col = x0 - r + tx;
        const bool inside = row >= 0 && row < height && col >= 0 && col < width;
        tile[ty][tx] = inside ? in[row * width + col] : 0.0f;
    }

    // Every thread reads cells that other threads loaded: wait until the whole tile is there.
    // BUG: no __syncthreads() here

    // Output (y, x) needs the k x k cells whose top-left corner is tile[threadIdx.y][threadIdx.x].
    const int x = x0 + threadIdx.x, y = y0 + threadIdx.y;
    if (x < width && y < height) {
        float sum = 0.0f;
        for (int i = 0; i < k; ++i)
            for (int j = 0; j < k; ++j) sum += c_mask[i * k + j] * tile[threadIdx.y + i][threadIdx.x + j];
        out[y * width + x] = sum;
    }
}

void launch_convolution_tiled(const float* in, float* out, int height, int width, int k)
{
    const dim3 block(BLOCK_W, BLOCK_H);
    const dim3 grid((width + BLOCK_W - 1) / BLOCK_W, (height + BLOCK_H - 1) / BLOCK_H);
    convolution_tiled_kernel<<<grid, block>>>(in, out, height, width, k);
    CUDA_CHECK(cudaGetLastError());
}
//! [tiled]

//! [strided]
// Optional exercise (the source post's CNN-style convolution): output (y, x) is centred on input
// (y * stride, x * stride); the output is ceil(height / stride) x ceil(width / stride).
__global__ void convolution_strided_kernel(const float* in, float* out, int height, int width, int k,
                                           int stride, int out_height, int out_width)
{
    const int x = blockIdx.x * BLOCK_W + threadIdx.x;
    const int y = blockIdx.y * BLOCK_H + threadIdx.y;
    if (x >= out_width || y >= out_height) return;
    const int r = (k - 1) / 2;
    float sum = 0.0f;
    for (int i = 0; i < k; ++i) {
        const int row = y * stride + i - r;
        if (row < 0 || row >= height) continue;
        for (int j = 0; j < k; ++j) {
            const int col = x * stride + j - r;
            if (col >= 0 && col < width) sum += c_mask[i * k + j] * in[row * width + col];
        }
    }
    out[y * out_width + x] = sum;
}

void launch_convolution_strided(const float* in, float* out, int height, int width, int k, int stride)
{
    const int out_height = (height + stride - 1) / stride;
    const int out_width = (width + stride - 1) / stride;
    const dim3 block(BLOCK_W, BLOCK_H);
    const dim3 grid((out_width + BLOCK_W - 1) / BLOCK_W, (out_height + BLOCK_H - 1) / BLOCK_H);
    convolution_strided_kernel<<<grid, block>>>(in, out, height, width, k, stride, out_height, out_width);
    CUDA_CHECK(cudaGetLastError());
}
//! [strided]
