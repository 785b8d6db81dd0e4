// Lab 05, going further, step 3 (tensor cores through mma.sync, TF32): versions of the kernel side
// by side, in the manner of llm.c's dev/cuda. Each version is checked against the float64
// reference within TF32's tolerance, then timed beside cuBLAS TF32 in the same process; a wrong
// version is reported and never timed.
//
//   cmake --build build --target dev_tensor_cores
//   build/bin/dev_tensor_cores [VERSION ...] [--sizes 1024,2048,4096]
//
// Version 0 is the lab's reference solution (solutions/05_tiled_matmul/tensor_cores.cu, included
// here with the helpers it defines). The step's target is half of cuBLAS TF32 at 4096 on an H100; the solution
// reached 41% to 43% (committed bench run, 2026-11-25). Nsight Compute put its wall at the L2
// cache: a 128 x 128 tile does 32 flops per byte it reads, and L2 throughput stood at 75% of peak.
// A larger tile reads less per flop, but one 256 x 128 block of 8 warps lost more at its
// __syncthreads than it gained (38% of cuBLAS): the 8 warps of an SM all waited at every slice,
// with no second block to run. The versions here try the ways past that, one idea each:
//
//   1  the solution's kernel, its blocks taken in groups of 8 tile rows (L2 hits: the blocks that
//      run together share fewer panels of A and B)
//   2  the solution's kernel, B's fragments read 16 bytes at a time: 4 LDS.128 a step instead of
//      16 LDS.32. Each lane reads 4 neighbouring columns of a row, which become the same column of
//      4 different n-tiles: the tiles' columns are interleaved, and the store undoes it
//   3  1 and 2 together
//   4  256 x 128 per block, one block an SM, without __syncthreads: each of 4 stages has two
//      mbarriers, "full" (every thread's copies of the slice landed: cp.async.mbarrier.arrive)
//      and "empty" (every thread has read it). A warp waits for its data, and before refilling a
//      stage for the warps that have not yet read it, never for all warps at once
//   5  4 with 128 x 256 per block
//   6  4 with 7 stages of 16 along k
//   7  4 copying 3 slices ahead instead of 2: copies start earlier, but a refill waits for the
//      slice every warp has just read, as at a __syncthreads
//   8  4 with its blocks in launch order (no groups of tile rows)
//
// Nothing here is graded or in the book: a version that reaches the target moves into the lab's
// solution and walkthrough, with its skeleton, checker and buggy variants, and is measured there.
#include "common/check.hpp"
#include "common/compare.hpp"
#include "common/device.hpp"
#include "common/gemm_reference.hpp"
#include "common/random.hpp"
#include "common/timing.hpp"
#include "common/buffers.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

// Version 0, and the helpers every version shares (to_tf32, mma_tf32, ldmatrix_x4, cp_async16,
// cp_async_commit, cp_async_wait, tc_shared_bytes, and the paddings A_PAD and B_PAD, whose bank
// arithmetic its kernel explains): the lab's solution itself, compiled here.
#include "solutions/05_tiled_matmul/tensor_cores.cu"

// Named, not anonymous: the device helpers are then not "unused" in the passes for GPUs older
// than sm_80, whose kernels are only a __trap().
namespace dev {

__device__ __forceinline__ unsigned shared_address(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }

// ---- mbarriers (sm_80): a count of arrivals per phase, and a wait on a phase's parity. -------

__device__ __forceinline__ void mbarrier_init(uint64_t* barrier, unsigned arrivals)
{
    asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(shared_address(barrier)), "r"(arrivals));
}

// One arrival of this thread (release: its reads of the stage come before it).
__device__ __forceinline__ void mbarrier_arrive(uint64_t* barrier)
{
    asm volatile("{ .reg .b64 state; mbarrier.arrive.shared.b64 state, [%0]; }" ::"r"(shared_address(barrier))
                 : "memory");
}

// One arrival of this thread once every cp.async it issued so far has landed. With .noinc the
// arrival counts against the barrier's count: a stage filled by 32 lanes expects 32.
__device__ __forceinline__ void cp_async_arrive(uint64_t* barrier)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" ::"r"(shared_address(barrier)) : "memory");
}

// Waits until the phase of this parity has completed (acquire: the stage's data is visible after).
__device__ __forceinline__ void mbarrier_wait(uint64_t* barrier, unsigned parity)
{
    unsigned done = 0;
    do {
#if __CUDA_ARCH__ >= 900
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done)
                     : "r"(shared_address(barrier)), "r"(parity)
                     : "memory");
#else
        asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done)
                     : "r"(shared_address(barrier)), "r"(parity)
                     : "memory");
#endif
    } while (!done);
}

// ---- The parts every version shares. ----------------------------------------------------------

// The tile of C this block computes. GROUP = 0: the grid is (tiles along n, tiles along m), as in
// the solution. GROUP > 0: a 1-D grid walked GROUP tile rows at a time, column by column, so that
// the blocks running together read GROUP panels of A and few panels of B.
template <int BM, int BN, int GROUP>
__device__ int2 block_tile(int m, int n)
{
    if (GROUP == 0) return make_int2(blockIdx.y * BM, blockIdx.x * BN);
    const int tiles_m = (m + BM - 1) / BM, tiles_n = (n + BN - 1) / BN;
    const int per_group = GROUP * tiles_n;
    const int first = blockIdx.x / per_group * GROUP, rows = min(tiles_m - first, GROUP);
    const int within = blockIdx.x % per_group;
    return make_int2((first + within % rows) * BM, within / rows * BN);
}

template <int BM, int BN, int GROUP>
dim3 grid_for(int m, int n)
{
    const int tiles_m = (m + BM - 1) / BM, tiles_n = (n + BN - 1) / BN;
    return GROUP == 0 ? dim3(tiles_n, tiles_m) : dim3(tiles_n * tiles_m);
}

// Copies a slice (A: BM x BK from column k0, B: BK x BN from row k0) into one stage, `copier` of
// `COPIERS` threads. Needs cols % 4 == 0 for every matrix: a 16-byte chunk is then wholly inside
// or wholly outside (zeros).
template <int BM, int BN, int BK, int COPIERS>
__device__ void copy_slice(float (*as)[BK + A_PAD], float (*bs)[BN + B_PAD], const float* __restrict__ a,
                           const float* __restrict__ b, int m, int k, int n, int2 tile, int k0, int copier)
{
    static_assert(BM * BK % (4 * COPIERS) == 0 && BK * BN % (4 * COPIERS) == 0, "slices split evenly");
#pragma unroll
    for (int l = 0; l < BM * BK / 4 / COPIERS; ++l) {
        const int f = copier + l * COPIERS, row = f / (BK / 4), col = f % (BK / 4) * 4;
        const bool inside = tile.x + row < m && k0 + col < k;
        cp_async16(&as[row][col], inside ? &a[(tile.x + row) * k + k0 + col] : a, inside ? 16 : 0);
    }
#pragma unroll
    for (int l = 0; l < BK * BN / 4 / COPIERS; ++l) {
        const int f = copier + l * COPIERS, row = f / (BN / 4), col = f % (BN / 4) * 4;
        const bool inside = k0 + row < k && tile.y + col < n;
        cp_async16(&bs[row][col], inside ? &b[(k0 + row) * n + tile.y + col] : b, inside ? 16 : 0);
    }
}

// One step of 8 along k: the warp's fragments from its corner of the stage (a_tile: its first row
// of A at the step's column; b_tile: the step's row of B at its first column), rounded to TF32.
// B16: lane (g, t) reads 4 neighbouring floats of B's row, b0 of n-tiles 4q .. 4q + 3, so that
// n-tile j = 4q + r holds column 32q + 4g + r at the mma's column g (store_tile undoes it).
template <int M_TILES, int N_TILES, int A_STRIDE, int B_STRIDE, bool B16>
__device__ __forceinline__ void load_fragments(uint32_t (&af)[M_TILES][4], uint32_t (&bf)[N_TILES][2],
                                               const float* a_tile, const float* b_tile, int lane)
{
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int i = 0; i < M_TILES; ++i) {
        ldmatrix_x4(af[i], a_tile + (i * 16 + lane % 16) * A_STRIDE + lane / 16 * 4);
#pragma unroll
        for (int r = 0; r < 4; ++r) af[i][r] = to_tf32(__uint_as_float(af[i][r]));
    }
    if constexpr (B16) {
        static_assert(N_TILES % 4 == 0, "16-byte B loads cover n-tiles four at a time");
#pragma unroll
        for (int q = 0; q < N_TILES / 4; ++q) {
            const float4 lo = *reinterpret_cast<const float4*>(b_tile + t * B_STRIDE + q * 32 + 4 * g);
            const float4 hi = *reinterpret_cast<const float4*>(b_tile + (t + 4) * B_STRIDE + q * 32 + 4 * g);
            bf[4 * q + 0][0] = to_tf32(lo.x), bf[4 * q + 0][1] = to_tf32(hi.x);
            bf[4 * q + 1][0] = to_tf32(lo.y), bf[4 * q + 1][1] = to_tf32(hi.y);
            bf[4 * q + 2][0] = to_tf32(lo.z), bf[4 * q + 2][1] = to_tf32(hi.z);
            bf[4 * q + 3][0] = to_tf32(lo.w), bf[4 * q + 3][1] = to_tf32(hi.w);
        }
    } else {
#pragma unroll
        for (int j = 0; j < N_TILES; ++j) {
            bf[j][0] = to_tf32(b_tile[t * B_STRIDE + j * 8 + g]);
            bf[j][1] = to_tf32(b_tile[(t + 4) * B_STRIDE + j * 8 + g]);
        }
    }
}

template <int M_TILES, int N_TILES>
__device__ __forceinline__ void mma_all(float (&acc)[M_TILES][N_TILES][4], const uint32_t (&af)[M_TILES][4],
                                        const uint32_t (&bf)[N_TILES][2])
{
#pragma unroll
    for (int i = 0; i < M_TILES; ++i)
#pragma unroll
        for (int j = 0; j < N_TILES; ++j) mma_tf32(acc[i][j], af[i], bf[j]);
}

// The slice in one stage, multiplied into the warp's sums 8 along k at a time: the fragments of
// the next step load (and round) while the tensor cores work through this step's mma.
// `after_last_load` runs once every fragment of the slice is in registers: the stage may then be
// refilled.
template <int M_TILES, int N_TILES, int BK, int A_STRIDE, int B_STRIDE, bool B16, typename AfterLastLoad>
__device__ __forceinline__ void multiply_slice(float (&acc)[M_TILES][N_TILES][4], const float* a_tile,
                                               const float* b_tile, int lane, AfterLastLoad after_last_load)
{
    uint32_t af[2][M_TILES][4], bf[2][N_TILES][2];
    load_fragments<M_TILES, N_TILES, A_STRIDE, B_STRIDE, B16>(af[0], bf[0], a_tile, b_tile, lane);
#pragma unroll
    for (int step = 0; step < BK / 8; ++step) {
        if (step + 1 < BK / 8)
            load_fragments<M_TILES, N_TILES, A_STRIDE, B_STRIDE, B16>(af[(step + 1) % 2], bf[(step + 1) % 2],
                                                                    a_tile + (step + 1) * 8,
                                                                    b_tile + (step + 1) * 8 * B_STRIDE, lane);
        else
            after_last_load();
        mma_all(acc, af[step % 2], bf[step % 2]);
    }
}

// The warp's sums into C, whose corner (row0, col0) is the warp's. n % 4 == 0.
// B16: lane (g, t) holds, for each group q of 4 n-tiles, columns 32q + 8t .. 32q + 8t + 7 of rows
// g and g + 8: c0 of tiles 4q .. 4q + 3, then their c1. Two 16-byte stores per row.
template <int M_TILES, int N_TILES, bool B16>
__device__ void store_tile(float* __restrict__ c, int m, int n, int row0, int col0,
                           const float (&acc)[M_TILES][N_TILES][4], int lane)
{
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int i = 0; i < M_TILES; ++i)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int row = row0 + i * 16 + g + half * 8;
            if (row >= m) continue;
            if constexpr (B16) {
#pragma unroll
                for (int q = 0; q < N_TILES / 4; ++q) {
                    const int col = col0 + q * 32 + 8 * t;
                    if (col < n)
                        *reinterpret_cast<float4*>(&c[row * n + col]) =
                            make_float4(acc[i][4 * q][2 * half], acc[i][4 * q + 1][2 * half],
                                        acc[i][4 * q + 2][2 * half], acc[i][4 * q + 3][2 * half]);
                    if (col + 4 < n)
                        *reinterpret_cast<float4*>(&c[row * n + col + 4]) =
                            make_float4(acc[i][4 * q][2 * half + 1], acc[i][4 * q + 1][2 * half + 1],
                                        acc[i][4 * q + 2][2 * half + 1], acc[i][4 * q + 3][2 * half + 1]);
                }
            } else {
#pragma unroll
                for (int j = 0; j < N_TILES; ++j) {
                    const int col = col0 + j * 8 + 2 * t;
                    if (col < n)
                        *reinterpret_cast<float2*>(&c[row * n + col]) =
                            make_float2(acc[i][j][2 * half], acc[i][j][2 * half + 1]);
                }
            }
        }
}

// ---- Versions 1 to 3: the solution's kernel, every warp copying and computing, one
// __syncthreads per slice. ----------------------------------------------------------------------

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int MIN_BLOCKS, int GROUP, bool B16>
__global__ void __launch_bounds__(BM / WM * (BN / WN) * 32, MIN_BLOCKS)
    synced_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m, int k, int n)
{
#if __CUDA_ARCH__ >= 800
    constexpr int THREADS = BM / WM * (BN / WN) * 32, M_TILES = WM / 16, N_TILES = WN / 8;
    extern __shared__ __align__(16) float shared[];
    auto as = reinterpret_cast<float(*)[BM][BK + A_PAD]>(shared);
    auto bs = reinterpret_cast<float(*)[BK][BN + B_PAD]>(shared + STAGES * BM * (BK + A_PAD));
    const int2 tile = block_tile<BM, BN, GROUP>(m, n);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_row = warp / (BN / WN) * WM, warp_col = warp % (BN / WN) * WN;

    float acc[M_TILES][N_TILES][4] = {};
    const int slices = (k + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < slices) copy_slice<BM, BN, BK, THREADS>(as[s], bs[s], a, b, m, k, n, tile, s * BK, threadIdx.x);
        cp_async_commit();
    }
    for (int s = 0; s < slices; ++s) {
        const int buf = s % STAGES;
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        const int next = s + STAGES - 1;
        if (next < slices)
            copy_slice<BM, BN, BK, THREADS>(as[next % STAGES], bs[next % STAGES], a, b, m, k, n, tile, next * BK,
                                            threadIdx.x);
        cp_async_commit();
        multiply_slice<M_TILES, N_TILES, BK, BK + A_PAD, BN + B_PAD, B16>(acc, &as[buf][warp_row][0],
                                                                        &bs[buf][0][warp_col], lane, [] {});
    }
    store_tile<M_TILES, N_TILES, B16>(c, m, n, tile.x + warp_row, tile.y + warp_col, acc, lane);
#else
    __trap();
#endif
}

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int MIN_BLOCKS, int GROUP, bool B16>
void launch_synced(const float* a, const float* b, float* c, int m, int k, int n)
{
    const auto kernel = synced_kernel<BM, BN, BK, WM, WN, STAGES, MIN_BLOCKS, GROUP, B16>;
    constexpr int bytes = tc_shared_bytes(BM, BN, BK, STAGES);
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    kernel<<<grid_for<BM, BN, GROUP>(m, n), BM / WM * (BN / WN) * 32, bytes>>>(a, b, c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}

// ---- Versions 4 to 8: one block an SM, every warp copying and computing, per-stage mbarriers
// instead of __syncthreads. ----------------------------------------------------------------------
//
// A warp that has finished a slice goes on to the next as soon as that slice has landed, whatever
// the other warps are doing. AHEAD slices are copied ahead of the one being multiplied; before a
// warp refills a stage, it waits until every warp has released the slice that stage held,
// STAGES - AHEAD slices back. With AHEAD = STAGES - 2 the fastest warp may run two slices ahead of
// the slowest; with STAGES - 1 only one, as with __syncthreads, but copies start a slice
// earlier. (A dedicated producer warp does not fit: the 8 warps of 64 x 64 need about 220
// registers each, and a ninth warp on an SM's four schedulers puts three warps on one of them,
// whose 16384 registers then allow 168 each; the compiler spills. Step 4 moves registers from
// its producer to its consumers with setmaxnreg, which only sm_90a has.)

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int AHEAD, int GROUP, bool B16>
__global__ void __launch_bounds__(BM / WM * (BN / WN) * 32, 1)
    pipelined_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m,
                     int k, int n)
{
#if __CUDA_ARCH__ >= 800
    constexpr int THREADS = BM / WM * (BN / WN) * 32, M_TILES = WM / 16, N_TILES = WN / 8;
    static_assert(AHEAD >= 1 && AHEAD < STAGES, "at least one slice in flight, and a stage to read");
    extern __shared__ __align__(16) float shared[];
    auto as = reinterpret_cast<float(*)[BM][BK + A_PAD]>(shared);
    auto bs = reinterpret_cast<float(*)[BK][BN + B_PAD]>(shared + STAGES * BM * (BK + A_PAD));
    __shared__ uint64_t full[STAGES], empty[STAGES];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (threadIdx.x == 0)
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(&full[s], THREADS);   // every thread, once its copies of the slice land
            mbarrier_init(&empty[s], THREADS);  // every thread, once it has read the slice
        }
    __syncthreads();  // the only one: the barriers are ready

    const int2 tile = block_tile<BM, BN, GROUP>(m, n);
    const int slices = (k + BK - 1) / BK;
    // Slice s goes into stage s % STAGES: the stage's fill number s / STAGES completes that phase
    // of its "full" barrier, and the slice's release the same phase of its "empty" barrier.
    auto copy = [&](int s) {
        const int buf = s % STAGES;
        if (s >= STAGES) mbarrier_wait(&empty[buf], (s / STAGES - 1) & 1);  // slice s - STAGES is released
        copy_slice<BM, BN, BK, THREADS>(as[buf], bs[buf], a, b, m, k, n, tile, s * BK, threadIdx.x);
        cp_async_arrive(&full[buf]);
    };
    for (int s = 0; s < AHEAD && s < slices; ++s) copy(s);

    const int warp_row = warp / (BN / WN) * WM, warp_col = warp % (BN / WN) * WN;
    float acc[M_TILES][N_TILES][4] = {};
    for (int s = 0; s < slices; ++s) {
        if (s + AHEAD < slices) copy(s + AHEAD);
        const int buf = s % STAGES;
        mbarrier_wait(&full[buf], (s / STAGES) & 1);
        // Released for the refill as soon as every fragment of it is in registers.
        multiply_slice<M_TILES, N_TILES, BK, BK + A_PAD, BN + B_PAD, B16>(
            acc, &as[buf][warp_row][0], &bs[buf][0][warp_col], lane, [&] { mbarrier_arrive(&empty[buf]); });
    }
    cp_async_wait_all();
    store_tile<M_TILES, N_TILES, B16>(c, m, n, tile.x + warp_row, tile.y + warp_col, acc, lane);
#else
    __trap();
#endif
}

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int AHEAD, int GROUP, bool B16>
void launch_pipelined(const float* a, const float* b, float* c, int m, int k, int n)
{
    const auto kernel = pipelined_kernel<BM, BN, BK, WM, WN, STAGES, AHEAD, GROUP, B16>;
    constexpr int bytes = tc_shared_bytes(BM, BN, BK, STAGES);
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    kernel<<<grid_for<BM, BN, GROUP>(m, n), BM / WM * (BN / WN) * 32, bytes>>>(a, b, c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}

// ---- The versions and the run. ------------------------------------------------------------

using Launch = void (*)(const float*, const float*, float*, int, int, int);

struct Version {
    const char* name;
    Launch launch;
    const void* kernel;  // for its registers and spills (none: the solution, which picks its own)
};

const std::vector<Version>& versions()
{
    static const std::vector<Version> all = {
        {"the solution (128 x 128, 4 warps, 3 stages, 2 blocks an SM)", ::launch_matmul_tensor_cores, nullptr},
        {"solution, blocks in groups of 8 tile rows", launch_synced<128, 128, 32, 64, 64, 3, 2, 8, false>,
         reinterpret_cast<const void*>(synced_kernel<128, 128, 32, 64, 64, 3, 2, 8, false>)},
        {"solution, 16-byte B fragment loads", launch_synced<128, 128, 32, 64, 64, 3, 2, 0, true>,
         reinterpret_cast<const void*>(synced_kernel<128, 128, 32, 64, 64, 3, 2, 0, true>)},
        {"solution, groups of 8 and 16-byte B loads", launch_synced<128, 128, 32, 64, 64, 3, 2, 8, true>,
         reinterpret_cast<const void*>(synced_kernel<128, 128, 32, 64, 64, 3, 2, 8, true>)},
        {"256 x 128, 8 warps, 4 mbarrier stages of 32, 2 ahead", launch_pipelined<256, 128, 32, 64, 64, 4, 2, 8, true>,
         reinterpret_cast<const void*>(pipelined_kernel<256, 128, 32, 64, 64, 4, 2, 8, true>)},
        {"128 x 256, 8 warps, 4 mbarrier stages of 32, 2 ahead", launch_pipelined<128, 256, 32, 64, 64, 4, 2, 8, true>,
         reinterpret_cast<const void*>(pipelined_kernel<128, 256, 32, 64, 64, 4, 2, 8, true>)},
        {"256 x 128, 8 warps, 7 mbarrier stages of 16, 5 ahead", launch_pipelined<256, 128, 16, 64, 64, 7, 5, 8, true>,
         reinterpret_cast<const void*>(pipelined_kernel<256, 128, 16, 64, 64, 7, 5, 8, true>)},
        {"256 x 128, 8 warps, 4 mbarrier stages of 32, 3 ahead", launch_pipelined<256, 128, 32, 64, 64, 4, 3, 8, true>,
         reinterpret_cast<const void*>(pipelined_kernel<256, 128, 32, 64, 64, 4, 3, 8, true>)},
        {"256 x 128, 8 warps, 4 stages, 2 ahead, blocks in launch order",
         launch_pipelined<256, 128, 32, 64, 64, 4, 2, 0, true>,
         reinterpret_cast<const void*>(pipelined_kernel<256, 128, 32, 64, 64, 4, 2, 0, true>)},
    };
    return all;
}

std::vector<int> parse_list(const char* text)
{
    std::vector<int> values;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');) values.push_back(std::atoi(item.c_str()));
    return values;
}

std::string registers_of(const Version& version)
{
    if (version.kernel == nullptr) return "-";
    cudaFuncAttributes attributes{};
    CUDA_CHECK(cudaFuncGetAttributes(&attributes, version.kernel));
    std::string text = std::to_string(attributes.numRegs);
    if (attributes.localSizeBytes > 0) text += " (" + std::to_string(attributes.localSizeBytes) + " B spilled)";
    return text;
}

// One size: the reference, cuBLAS TF32, then each chosen version checked and timed.
void run_size(int size, const std::vector<int>& chosen)
{
    using namespace workbook;
    const int m = size, k = size, n = size;
    const std::vector<float> a = random_floats(static_cast<std::size_t>(m) * k, seed_for("dev a " + std::to_string(size)));
    const std::vector<float> b = random_floats(static_cast<std::size_t>(k) * n, seed_for("dev b " + std::to_string(size)));
    DeviceBuffer<float> da(a), db(b), dc(static_cast<std::size_t>(m) * n);
    const Reference expected = gemm_reference(a, b, m, k, n);
    const Tolerance tolerance = gemm_tolerance(k, GemmInputs::tf32_rounded);
    const double flops = 2.0 * m * k * n;
    const double cublas = tf32_gemm_gflops(m, k, n);
    std::printf("\n%d x %d x %d: cuBLAS TF32 %.0f GFLOP/s; tolerance %.3g (%s)\n", m, k, n, cublas, tolerance.abs,
                tolerance.why.c_str());
    std::printf("  %-3s %-62s %10s %10s %7s %10s  %s\n", "v", "version", "ms", "GFLOP/s", "cuBLAS", "max error",
                "registers");
    for (int v : chosen) {
        const Version& version = versions().at(v);
        CUDA_CHECK(cudaMemset(dc.data(), 0xFF, dc.bytes()));  // NaN: an element never written fails
        version.launch(da.data(), db.data(), dc.data(), m, k, n);
        CUDA_CHECK(cudaDeviceSynchronize());
        const Comparison comparison = compare_on_device("c", dc.data(), expected, Shape::grid(m, n), tolerance);
        if (!comparison.ok()) {
            std::printf("  %-3d %-62s WRONG, not timed:\n%s\n", v, version.name, comparison.report().c_str());
            continue;
        }
        const Timing timing = time_gpu([&] { version.launch(da.data(), db.data(), dc.data(), m, k, n); });
        const double gflops = timing.giga_per_second(flops);
        std::printf("  %-3d %-62s %10.3f %10.0f %6.1f%% %10.3g  %s\n", v, version.name, timing.ms.median, gflops,
                    100.0 * gflops / cublas, comparison.max_error, registers_of(version).c_str());
        std::fflush(stdout);
    }
}

}  // namespace dev

int main(int argc, char** argv)
{
    using namespace dev;
    std::vector<int> chosen, sizes = {1024, 2048, 4096};
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--sizes") == 0 && i + 1 < argc)
            sizes = parse_list(argv[++i]);
        else if (argv[i][0] >= '0' && argv[i][0] <= '9' && std::atoi(argv[i]) < static_cast<int>(versions().size()))
            chosen.push_back(std::atoi(argv[i]));
        else {
            std::fprintf(stderr, "usage: %s [VERSION ...] [--sizes 1024,2048,4096]\nversions:\n", argv[0]);
            for (std::size_t v = 0; v < versions().size(); ++v) std::fprintf(stderr, "  %zu  %s\n", v, versions()[v].name);
            return 2;
        }
    }
    if (chosen.empty())
        for (std::size_t v = 0; v < versions().size(); ++v) chosen.push_back(static_cast<int>(v));
    for (int size : sizes)
        if (size <= 0 || size % 4 != 0) {
            std::fprintf(stderr, "sizes must be positive multiples of 4 (16-byte copies), not %d\n", size);
            return 2;
        }
    try {
        if (const std::string why = workbook::why_not_on_this_gpu(workbook::kTf32TensorCores); !why.empty()) {
            std::printf("SKIPPED: %s\n", why.c_str());
            return 77;
        }
        for (int size : sizes) run_size(size, chosen);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "dev_tensor_cores: %s\n", e.what());
        return 1;
    }
    return 0;
}
