// Lab 06, the thread-count sweep: your code goes here.
//
// How many threads per block? This lab measures it: a tiled matmul whose tile edge (and so its
// block of tile x tile threads) is chosen at run time, and vector add with a chosen block size,
// each swept over block sizes and set beside the occupancy the CUDA runtime predicts.
// Read README.md beside this file first. Check your work with:   make check LAB=06
#include "common/check.hpp"
#include "common/sweep.hpp"
#include "common/timing.hpp"

#include <cuda_runtime.h>

#include <string>
#include <vector>

//! [kernel]
// C = A·B (A m x k, B k x n, row-major) through shared tiles whose edge is blockDim.x, known only
// at run time: the launch sizes the shared memory, and the kernel finds its two tiles in it.
__global__ void matmul_dynamic_tile_kernel(const float* a, const float* b, float* c, int m, int k, int n)
{
    extern __shared__ float shared[];
    const int tile = blockDim.x;  // the block is tile x tile threads
    // TODO 1: the shared memory holds two tiles of tile * tile floats, one after the other:
    //         a_tile starts at shared, b_tile at shared + tile * tile. With a size known only now,
    //         they are 1-D arrays: cell [y][x] of a tile is [y * tile + x].
    // TODO 2: lab 05's kernel with `tile` for TILE: row, col, the phase loop loading both tiles
    //         with zero-fill, the two barriers, the inner product, and the guarded write.
    (void)shared, (void)tile, (void)a, (void)b, (void)c, (void)m, (void)k, (void)n;
}
//! [kernel]

//! [launch]
std::size_t shared_bytes_for(int tile)
{
    // TODO 3: the bytes of shared memory a block needs: two tiles of tile x tile floats.
    (void)tile;
    return 0;
}

void launch_matmul_dynamic_tile(const float* a, const float* b, float* c, int m, int k, int n, int tile)
{
    const dim3 block(tile, tile);
    const dim3 grid((n + tile - 1) / tile, (m + tile - 1) / tile);
    // TODO 4: launch with the dynamic shared memory as the third launch argument:
    //         matmul_dynamic_tile_kernel<<<grid, block, shared_bytes_for(tile)>>>(...), then check it.
    (void)a, (void)b, (void)c, (void)m, (void)k, (void)n, (void)block, (void)grid;
}
//! [launch]

//! [vector add]
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

void launch_vector_add_blocks(const float* a, const float* b, float* c, int n, int threads_per_block)
{
    // TODO 5: lab 01's launch, with threads_per_block threads per block.
    (void)a, (void)b, (void)c, (void)n, (void)threads_per_block;
}
//! [vector add]

//! [occupancy]
double predicted_occupancy_matmul(int tile)
{
    // TODO 6: ask the runtime how many blocks of tile * tile threads, each with
    //         shared_bytes_for(tile) bytes of shared memory, fit on one SM at once:
    //           cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, matmul_dynamic_tile_kernel,
    //                                                        threads, shared_bytes)
    //         Occupancy is the active warps per SM over the most an SM holds
    //         (cudaDevAttrMaxThreadsPerMultiProcessor / 32). A block of fewer than 32 threads
    //         still takes a whole warp: warps per block = (threads + 31) / 32.
    (void)tile;
    return 0;
}

double predicted_occupancy_vector_add(int threads_per_block)
{
    // TODO 7: the same for vector_add_kernel with blocks of threads_per_block threads and no
    //         shared memory.
    (void)threads_per_block;
    return 0;
}

int suggested_vector_add_block_size()
{
    // TODO 8: the block size that cudaOccupancyMaxPotentialBlockSize(&min_grid, &block,
    //         vector_add_kernel, 0, 0) suggests.
    return 0;
}
//! [occupancy]

//! [sweep]
std::vector<workbook::SweepPoint> sweep_matmul(const float* a, const float* b, float* c, int size)
{
    std::vector<workbook::SweepPoint> points;
    // TODO 9: for tile = 1, 2, 4, 8, 16 and 32: call workbook::progress(step, 6, "...") so the
    //         user sees how far the sweep is, time launch_matmul_dynamic_tile on the size x size
    //         matrices with workbook::time_gpu([&] { ... }, workbook::TimingOptions{1, 5, true})
    //         (a block of 1 thread is slow: few runs), and add a point
    //         {tile * tile, t.ms.median, t.giga_per_second(2.0 * size * size * size),
    //          predicted_occupancy_matmul(tile)}.
    (void)a, (void)b, (void)c, (void)size;
    return points;
}

std::vector<workbook::SweepPoint> sweep_vector_add(const float* a, const float* b, float* c, int n)
{
    std::vector<workbook::SweepPoint> points;
    // TODO 10: the same for threads = 32, 64, ..., 1024, with the default timing options and
    //          bytes = 3 * n * sizeof(float) for the rate.
    (void)a, (void)b, (void)c, (void)n;
    return points;
}
//! [sweep]
