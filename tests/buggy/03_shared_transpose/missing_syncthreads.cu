// Buggy variant of lab 03: no barrier between loading the tile and reading it back, so threads
// read tile elements that other warps have not loaded yet.
// expect-fail: no shared-memory race: compute-sanitizer racecheck (100 x 70)
// expect-message: racecheck found errors|not checked: compute-sanitizer racecheck is measured only on a correct kernel
#include "common/check.hpp"

#include <cuda_runtime.h>

constexpr int TILE = 32;
constexpr int BLOCK_ROWS = 8;

//! [kernel]
template <int PADDING>
__global__ void transpose_shared_kernel(const float* in, float* out, int rows, int cols)
{
    // PADDING = 1 gives each tile row 33 floats, so a tile column falls in 32 different banks.
    __shared__ float tile[TILE][TILE + PADDING];

    // Phase 1: read a tile of `in` along its rows (coalesced) into the tile, as it is.
    const int col = blockIdx.x * TILE + threadIdx.x;
    const int first_row = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        const int row = first_row + j;
        if (row < rows && col < cols) tile[threadIdx.y + j][threadIdx.x] = in[row * cols + col];
    }

    // Each thread is about to read elements that other threads loaded: wait for all of them.
    // BUG: no __syncthreads() here

    // Phase 2: this block's tile lands at the mirrored tile position of `out`. Consecutive
    // threads write consecutive floats of an `out` row (coalesced) and read a tile column.
    const int out_col = blockIdx.y * TILE + threadIdx.x;
    const int first_out_row = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        const int out_row = first_out_row + j;
        if (out_row < cols && out_col < rows)
            out[out_row * rows + out_col] = tile[threadIdx.x][threadIdx.y + j];
    }
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
// Step 2: one spare float per tile row moves each row's start one bank further along.
constexpr int kTilePadding = 1;

void launch_transpose_padded(const float* in, float* out, int rows, int cols)
{
    launch_transpose_shared<kTilePadding>(in, out, rows, cols);
}
//! [padding]
