// Lab 03, shared-memory transpose: your code goes here.
//
// out = in^T: `in` is rows x cols and `out` is cols x rows, both row-major.
// A block of 32 x 8 threads stages one 32 x 32 tile in shared memory, so that both the read
// from `in` and the write to `out` go along rows, coalesced.
// Read README.md beside this file first. Check your work with:   make check LAB=03
#include "common/check.hpp"

#include <cuda_runtime.h>

constexpr int TILE = 32;
constexpr int BLOCK_ROWS = 8;

//! [kernel]
template <int PADDING>
__global__ void transpose_shared_kernel(const float* in, float* out, int rows, int cols)
{
    __shared__ float tile[TILE][TILE + PADDING];

    // TODO 1 (phase 1): as in lab 02, col = blockIdx.x * TILE + threadIdx.x and
    //         first_row = blockIdx.y * TILE + threadIdx.y. For j = 0, 8, 16, 24 and
    //         row = first_row + j, when row < rows and col < cols, copy in[row][col] into
    //         tile[threadIdx.y + j][threadIdx.x].

    // TODO 2: phase 2 reads elements that other threads loaded. Make every thread wait here
    //         until the whole tile is loaded: __syncthreads(), the block's barrier. Every thread
    //         of the block must reach it: never inside an if, nor after an early return.

    // TODO 3 (phase 2): this tile lands at the mirrored tile of `out`:
    //           out_col = blockIdx.y * TILE + threadIdx.x
    //           first_out_row = blockIdx.x * TILE + threadIdx.y
    //         For j = 0, 8, 16, 24 and out_row = first_out_row + j, when out_row < cols and
    //         out_col < rows, write out[out_row][out_col] (out has `rows` columns) from
    //         tile[threadIdx.x][threadIdx.y + j]: a column of the tile.
    (void)&tile, (void)in, (void)out, (void)rows, (void)cols;
}
//! [kernel]

//! [launch]
namespace {
template <int PADDING>
void launch_transpose_shared(const float* in, float* out, int rows, int cols)
{
    const dim3 block(TILE, BLOCK_ROWS);
    const dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    transpose_shared_kernel<PADDING><<<grid, block>>>(in, out, rows, cols);
    CUDA_CHECK(cudaGetLastError());
}
}  // namespace

// Step 1: the tile as it comes, 32 x 32. Reading its columns hits one bank 32 times.
void launch_transpose_unpadded(const float* in, float* out, int rows, int cols)
{
    launch_transpose_shared<0>(in, out, rows, cols);
}
//! [launch]

//! [padding]
// TODO 4: run `make check LAB=03` and read the bank-conflict figures of the padded kernel.
//         Then give each tile row one spare float, so that a tile column spreads over all 32
//         banks: set kTilePadding to 1, and check again.
constexpr int kTilePadding = 0;

void launch_transpose_padded(const float* in, float* out, int rows, int cols)
{
    launch_transpose_shared<kTilePadding>(in, out, rows, cols);
}
//! [padding]
