// Lab 07, 2-D convolution: your code goes here.
//
// out = in ⊛ mask for a height x width float image and an odd k x k mask, 1 <= k <= MAX_K.
// The definition is a correlation (the mask is not flipped), with zero padding:
//   out[y][x] = sum over i, j in [0, k) of mask[i][j] * in[y + i - r][x + j - r],  r = (k - 1) / 2
// where input cells outside the image count as 0. out has the size of in.
// Step 1: one thread per output, reading in from global memory and the mask from constant memory.
// Step 2: a block of 32 x 8 threads stages its input tile and the r-wide halo around it in
// shared memory, and computes its 32 x 8 outputs from there.
// Read README.md beside this file first. Check your work with:   make check LAB=07
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
    // TODO 1: copy the k * k floats at `mask` (host memory, row-major) into c_mask with
    //         cudaMemcpyToSymbol(c_mask, mask, bytes), wrapped in CUDA_CHECK(...).
    (void)mask, (void)k;
}
//! [mask]

//! [direct]
__global__ void convolution_direct_kernel(const float* in, float* out, int height, int width, int k)
{
    // TODO 2: this thread's output: x = blockIdx.x * BLOCK_W + threadIdx.x (the column) and
    //         y = blockIdx.y * BLOCK_H + threadIdx.y (the row). Only when x < width and
    //         y < height, go on.
    // TODO 3: with r = (k - 1) / 2, sum c_mask[i * k + j] * in[row * width + col] over
    //         i, j in [0, k), where row = y + i - r and col = x + j - r, in a local float.
    //         Skip the terms whose row or col falls outside the image: they count as 0.
    //         Then write the sum once to out[y * width + x].
    (void)in, (void)out, (void)height, (void)width, (void)k;
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

    // TODO 4: load the tile: tile[ty][tx] = in[y0 - r + ty][x0 - r + tx] for every ty < tile_h
    //         and tx < tile_w, and 0.0f where that cell lies outside the image (test its row and
    //         its column separately). The tile has more cells than the block has threads: let
    //         thread t = threadIdx.y * BLOCK_W + threadIdx.x take cells t, t + 256, t + 512, ...
    //         of the tile counted row by row (ty = cell / tile_w, tx = cell % tile_w).
    // TODO 5: every thread is about to read cells that other threads loaded: wait for them
    //         with __syncthreads(), the block's barrier (lab 03).
    // TODO 6: output (y, x) = (y0 + threadIdx.y, x0 + threadIdx.x). Only when it is inside the
    //         image, sum c_mask[i * k + j] * tile[threadIdx.y + i][threadIdx.x + j] over
    //         i, j in [0, k) and write it to out[y * width + x]. No bounds tests on the tile: the
    //         load put zeros where the image ends.
    // Do not return early before the barrier: every thread must load its cells and reach it.
    (void)&tile, (void)in, (void)out, (void)height, (void)width, (void)tile_h, (void)tile_w, (void)x0, (void)y0;
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
// Optional exercise, for bonus points (the source post's CNN-style convolution): output (y, x)
// is centred on input (y * stride, x * stride); the output is
// ceil(height / stride) x ceil(width / stride).
__global__ void convolution_strided_kernel(const float* in, float* out, int height, int width, int k,
                                           int stride, int out_height, int out_width)
{
    // TODO (optional): as the direct kernel, for an output of out_height x out_width, with
    //         row = y * stride + i - r and col = x * stride + j - r; write out[y * out_width + x].
    (void)in, (void)out, (void)height, (void)width, (void)k, (void)stride, (void)out_height, (void)out_width;
}

void launch_convolution_strided(const float* in, float* out, int height, int width, int k, int stride)
{
    // TODO (optional): out_height = (height + stride - 1) / stride, the same for out_width; a grid
    //         of BLOCK_W x BLOCK_H blocks that covers the output; launch the kernel and check it.
    (void)in, (void)out, (void)height, (void)width, (void)k, (void)stride;
}
//! [strided]
