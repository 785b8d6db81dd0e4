// Buggy variant of lab 05: no barrier at the end of a phase, so fast threads overwrite the tiles
// for the next phase while others still read them.
// expect-fail: no shared-memory race: compute-sanitizer racecheck (100 x 70 x 90)
// expect-message: racecheck found errors|not checked: compute-sanitizer racecheck is measured only on a correct kernel
#include "common/check.hpp"

#include <cuda_runtime.h>

constexpr int TILE = 16;

//! [kernel]
__global__ void matmul_tiled_kernel(const float* a, const float* b, float* c, int m, int k, int n)
{
    __shared__ float a_tile[TILE][TILE];
    __shared__ float b_tile[TILE][TILE];

    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;
    float sum = 0.0f;
    // No thread leaves early: threads outside C still load tile cells and reach both barriers.
    for (int phase = 0; phase < (k + TILE - 1) / TILE; ++phase) {
        // Each thread loads one cell of each tile. Cells past the edge of A or B get 0, so the
        // last, partial phase adds nothing for them.
        const int a_col = phase * TILE + threadIdx.x;
        const int b_row = phase * TILE + threadIdx.y;
        a_tile[threadIdx.y][threadIdx.x] = (row < m && a_col < k) ? a[row * k + a_col] : 0.0f;
        b_tile[threadIdx.y][threadIdx.x] = (b_row < k && col < n) ? b[b_row * n + col] : 0.0f;
        // Barrier 1: the tiles are complete before anyone reads them.
        __syncthreads();

        for (int p = 0; p < TILE; ++p) sum += a_tile[threadIdx.y][p] * b_tile[p][threadIdx.x];
        // BUG: no barrier 2; the next phase may overwrite tiles that others still read
    }
    if (row < m && col < n) c[row * n + col] = sum;
}
//! [kernel]

//! [launch]
void launch_matmul_tiled(const float* a, const float* b, float* c, int m, int k, int n)
{
    const dim3 block(TILE, TILE);
    const dim3 grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE);
    matmul_tiled_kernel<<<grid, block>>>(a, b, c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}
//! [launch]
