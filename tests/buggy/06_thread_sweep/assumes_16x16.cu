// Buggy variant of lab 06: the kernel assumes blocks of 16 x 16 instead of reading blockDim, so
// every other tile size computes the wrong elements.
// expect-fail: tile 8 x 8: 100 x 70 x 90
// expect-fail: tile 32 x 32: 100 x 70 x 90
// expect-message: (illegal memory access|never written|tile edge from blockDim.x)
// expect-pass: tile 16 x 16: 100 x 70 x 90
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
    const int tile = 16;  // BUG: should be blockDim.x
    float* a_tile = shared;       // tile x tile floats
    float* b_tile = shared + tile * tile;

    const int row = blockIdx.y * tile + threadIdx.y;
    const int col = blockIdx.x * tile + threadIdx.x;
    float sum = 0.0f;
    for (int phase = 0; phase < (k + tile - 1) / tile; ++phase) {
        const int a_col = phase * tile + threadIdx.x;
        const int b_row = phase * tile + threadIdx.y;
        a_tile[threadIdx.y * tile + threadIdx.x] = (row < m && a_col < k) ? a[row * k + a_col] : 0.0f;
        b_tile[threadIdx.y * tile + threadIdx.x] = (b_row < k && col < n) ? b[b_row * n + col] : 0.0f;
        __syncthreads();
        for (int p = 0; p < tile; ++p) sum += a_tile[threadIdx.y * tile + p] * b_tile[p * tile + threadIdx.x];
        __syncthreads();
    }
    if (row < m && col < n) c[row * n + col] = sum;
}
//! [kernel]

//! [launch]
std::size_t shared_bytes_for(int tile) { return 2 * static_cast<std::size_t>(tile) * tile * sizeof(float); }

void launch_matmul_dynamic_tile(const float* a, const float* b, float* c, int m, int k, int n, int tile)
{
    const dim3 block(tile, tile);
    const dim3 grid((n + tile - 1) / tile, (m + tile - 1) / tile);
    // The third launch argument is the dynamic shared memory per block: two tiles.
    matmul_dynamic_tile_kernel<<<grid, block, shared_bytes_for(tile)>>>(a, b, c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
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
    const int blocks = (n + threads_per_block - 1) / threads_per_block;
    vector_add_kernel<<<blocks, threads_per_block>>>(a, b, c, n);
    CUDA_CHECK(cudaGetLastError());
}
//! [vector add]

//! [occupancy]
namespace {
// Active warps per SM over the most an SM can hold, for blocks of `threads` threads.
double occupancy_of(int active_blocks, int threads)
{
    int device = 0, max_threads = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&max_threads, cudaDevAttrMaxThreadsPerMultiProcessor, device));
    const int warps_per_block = (threads + 31) / 32;  // a block of 1 thread still takes a whole warp
    return static_cast<double>(active_blocks * warps_per_block) / (max_threads / 32);
}
}  // namespace

double predicted_occupancy_matmul(int tile)
{
    int blocks = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, matmul_dynamic_tile_kernel,
                                                             tile * tile, shared_bytes_for(tile)));
    return occupancy_of(blocks, tile * tile);
}

double predicted_occupancy_vector_add(int threads_per_block)
{
    int blocks = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, vector_add_kernel, threads_per_block, 0));
    return occupancy_of(blocks, threads_per_block);
}

int suggested_vector_add_block_size()
{
    int min_grid = 0, block = 0;
    CUDA_CHECK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, vector_add_kernel, 0, 0));
    return block;
}
//! [occupancy]

//! [sweep]
std::vector<workbook::SweepPoint> sweep_matmul(const float* a, const float* b, float* c, int size)
{
    const double flops = 2.0 * size * size * static_cast<double>(size);
    const workbook::TimingOptions quick{1, 5, true};  // a block of 1 thread is slow: few runs
    std::vector<workbook::SweepPoint> points;
    for (int tile = 1; tile <= 32; tile *= 2) {
        workbook::progress(static_cast<int>(points.size()) + 1, 6,
                           std::to_string(tile * tile) + " threads per block (tile " + std::to_string(tile) + ")");
        const workbook::Timing t = workbook::time_gpu(
            [&] { launch_matmul_dynamic_tile(a, b, c, size, size, size, tile); }, quick);
        points.push_back({tile * tile, t.ms.median, t.giga_per_second(flops), predicted_occupancy_matmul(tile)});
    }
    return points;
}

std::vector<workbook::SweepPoint> sweep_vector_add(const float* a, const float* b, float* c, int n)
{
    const double bytes = 3.0 * n * sizeof(float);
    std::vector<workbook::SweepPoint> points;
    for (int threads = 32; threads <= 1024; threads *= 2) {
        workbook::progress(static_cast<int>(points.size()) + 1, 6, std::to_string(threads) + " threads per block");
        const workbook::Timing t = workbook::time_gpu([&] { launch_vector_add_blocks(a, b, c, n, threads); });
        points.push_back({threads, t.ms.median, t.giga_per_second(bytes), predicted_occupancy_vector_add(threads)});
    }
    return points;
}
//! [sweep]
