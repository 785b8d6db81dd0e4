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
    // TODO 2: lab 05's tiled kernel, with `tile` for TILE and [y * tile + x] for [y][x], in steps:
    //   2.1  this thread's element of C: row = blockIdx.y * tile + threadIdx.y and
    //        col = blockIdx.x * tile + threadIdx.x; start a float sum at 0.
    //   2.2  loop over the phases, phase = 0 .. (k + tile - 1) / tile - 1 (the count rounded up:
    //        the last phase may be a partial tile). Steps 2.3 to 2.6 are the loop's body.
    //   2.3  load one cell of each tile into shared memory, with bounds tests:
    //          a_tile cell [threadIdx.y][threadIdx.x] = A[row][phase * tile + threadIdx.x]
    //            if row < m and that column < k, else 0.0f     (A is m x k: A[r][c] is a[r * k + c])
    //          b_tile cell [threadIdx.y][threadIdx.x] = B[phase * tile + threadIdx.y][col]
    //            if that row < k and col < n, else 0.0f        (B is k x n: B[r][c] is b[r * n + c])
    //        The zeros of cells outside A or B add nothing to the sum.
    //   2.4  __syncthreads(): the next step reads cells that other threads loaded, so every
    //        thread of the block waits here until all of them have loaded theirs.
    //   2.5  multiply-accumulate over the tile: for p = 0 .. tile - 1,
    //        sum += a_tile cell [threadIdx.y][p] * b_tile cell [p][threadIdx.x].
    //   2.6  __syncthreads() again: the next phase's step 2.3 overwrites the tiles, so every
    //        thread waits until all have finished reading them.
    //   2.7  after the loop, store with a bounds test: only if row < m and col < n, write sum to
    //        C[row][col], that is c[row * n + col].
    //        Do not return early anywhere, and put no barrier inside an if: every thread of the
    //        block, even one outside C, must load its cells and reach both barriers.
    (void)shared, (void)tile, (void)a, (void)b, (void)c, (void)m, (void)k, (void)n;
}
//! [kernel]

//! [launch]
std::size_t shared_bytes_for(int tile)
{
    // TODO 3: the bytes of shared memory a block needs: two tiles of tile x tile floats, that is
    //         2 * tile * tile * sizeof(float), computed as a std::size_t.
    (void)tile;
    return 0;
}

void launch_matmul_dynamic_tile(const float* a, const float* b, float* c, int m, int k, int n, int tile)
{
    const dim3 block(tile, tile);
    const dim3 grid((n + tile - 1) / tile, (m + tile - 1) / tile);
    // TODO 4: launch with the dynamic shared memory as the third launch argument:
    //         matmul_dynamic_tile_kernel<<<grid, block, shared_bytes_for(tile)>>>(a, b, c, m, k, n),
    //         then check the launch with CUDA_CHECK(cudaGetLastError()). CUDA_CHECK, declared in
    //         common/check.hpp (as in lab 01), throws an error naming the file, the line and the
    //         failing call when the CUDA call inside it does not return cudaSuccess.
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
    // TODO 5: lab 01's launch, with threads_per_block threads per block: the number of blocks
    //         rounded up, (n + threads_per_block - 1) / threads_per_block, then
    //         vector_add_kernel<<<blocks, threads_per_block>>>(a, b, c, n) and
    //         CUDA_CHECK(cudaGetLastError()).
    (void)a, (void)b, (void)c, (void)n, (void)threads_per_block;
}
//! [vector add]

//! [occupancy]
double predicted_occupancy_matmul(int tile)
{
    // TODO 6: the occupancy the runtime predicts for the matmul with tiles of tile x tile, in steps
    //         (wrap each CUDA call in CUDA_CHECK):
    //   6.1  ask how many blocks of tile * tile threads, each with shared_bytes_for(tile) bytes of
    //        shared memory, fit on one SM at once (into an int blocks):
    //          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, matmul_dynamic_tile_kernel,
    //                                                        tile * tile, shared_bytes_for(tile))
    //   6.2  read the most threads an SM holds: cudaGetDevice(&device) gives the current device,
    //        then cudaDeviceGetAttribute(&max_threads, cudaDevAttrMaxThreadsPerMultiProcessor,
    //        device) (2048 on an H100). The most warps an SM holds is max_threads / 32.
    //   6.3  a block of fewer than 32 threads still takes a whole warp:
    //        warps per block = (threads + 31) / 32.
    //   6.4  return blocks * warps per block over the most warps, divided as a double: with ints
    //        alone the division rounds down, and 32 warps of 64 gives an occupancy of 0, not 0.5.
    //        Cast first, e.g. static_cast<double>(blocks * warps_per_block) / (max_threads / 32).
    //        Steps 6.2 to 6.4 serve TODO 7 too: you may write them once as a helper function
    //        above, taking the blocks and the threads per block.
    (void)tile;
    return 0;
}

double predicted_occupancy_vector_add(int threads_per_block)
{
    // TODO 7: the same for vector_add_kernel with blocks of threads_per_block threads and no
    //         shared memory: cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks,
    //         vector_add_kernel, threads_per_block, 0), then steps 6.2 to 6.4.
    (void)threads_per_block;
    return 0;
}

int suggested_vector_add_block_size()
{
    // TODO 8: the block size that cudaOccupancyMaxPotentialBlockSize(&min_grid, &block,
    //         vector_add_kernel, 0, 0) suggests (two ints; wrap the call in CUDA_CHECK): return
    //         block. min_grid, the smallest grid that fills every SM, is not needed here.
    return 0;
}
//! [occupancy]

//! [sweep]
std::vector<workbook::SweepPoint> sweep_matmul(const float* a, const float* b, float* c, int size)
{
    std::vector<workbook::SweepPoint> points;
    // TODO 9: one timed point per tile, for tile = 1, 2, 4, 8, 16 and 32 (a loop doubling tile).
    //         For each tile, in steps:
    //   9.1  print a progress line with workbook::progress(step, 6, what), declared in
    //        common/sweep.hpp: it prints "[step/6] what" so the user sees how far the sweep is.
    //        step is this point's number, 1 for tile 1 up to 6 for tile 32 (points.size() + 1
    //        before the point is added); what says what is measured, e.g.
    //        std::to_string(tile * tile) + " threads per block (tile " + std::to_string(tile) + ")".
    //   9.2  time the launch with workbook::time_gpu, declared in common/timing.hpp: it runs the
    //        function it is given (here a lambda, [&] { launch_matmul_dynamic_tile(a, b, c, size,
    //        size, size, tile); }) a few times untimed, then times each further run with CUDA
    //        events, and returns a workbook::Timing t: t.ms.median is the median milliseconds per
    //        run, and t.giga_per_second(work) is work / seconds per run / 1e9. Its second argument,
    //        a workbook::TimingOptions (common/timing.hpp), says how: {1, 5, true} is 1 untimed
    //        warm-up run, at most 5 timed runs, and the L2 cache flushed before each (the default,
    //        {}, is 2 warm-ups and up to 15 runs). A block of 1 thread is slow: few runs.
    //   9.3  add a point, a workbook::SweepPoint (common/sweep.hpp: threads per block, median ms,
    //        rate, predicted occupancy), to points:
    //          {tile * tile, t.ms.median, t.giga_per_second(2.0 * size * size * size),
    //           predicted_occupancy_matmul(tile)}
    //        (2 * size^3 floating-point operations, so the rate is GFLOP/s).
    (void)a, (void)b, (void)c, (void)size;
    return points;
}

std::vector<workbook::SweepPoint> sweep_vector_add(const float* a, const float* b, float* c, int n)
{
    std::vector<workbook::SweepPoint> points;
    // TODO 10: the same for threads = 32, 64, ..., 1024 (six points, step 1 to 6), timing
    //          launch_vector_add_blocks(a, b, c, n, threads) with the default timing options
    //          (time_gpu with no second argument), a progress line such as "256 threads per
    //          block", predicted_occupancy_vector_add(threads), and for the rate (GB/s) the bytes
    //          moved, 3.0 * n * sizeof(float): a and b read, c written.
    (void)a, (void)b, (void)c, (void)n;
    return points;
}
//! [sweep]
