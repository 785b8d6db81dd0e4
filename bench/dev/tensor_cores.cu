// Lab 05, going further, step 3 (tensor cores through mma.sync, TF32): versions of the kernel side
// by side, in the manner of llm.c's dev/cuda. Each version is checked against the float64
// reference within TF32's tolerance, then timed beside cuBLAS TF32 in the same process; a wrong
// version is reported and never timed.
//
//   cmake --build build --target dev_tensor_cores
//   build/bin/dev_tensor_cores [VERSION ...] [--sizes 1024,2048,4096]
//
// Version 0 is the lab's reference solution (solutions/05_tiled_matmul/tensor_cores.cu, included
// here with the helpers it defines). The step's target is half of cuBLAS TF32 at 4096 on an H100.
// Each version below tries one idea; the figures are from the H100 runs of 2026-11-26, at 4096,
// against cuBLAS TF32 in the same process (397 to 410 TFLOP/s; since version 9, timed again
// just before each version, as the program now does). Versions 1 to 28 change the solution as
// it was before TMA: padded rows, cp.async by every thread (version 40).
//
//   1  the solution's kernel, its blocks taken in groups of 8 tile rows            41.6%
//   2  the solution's kernel, B's fragments read 16 bytes at a time: 4 LDS.128 a    37.9%
//      step instead of 16 LDS.32 (each lane's 4 neighbouring columns become the same
//      column of 4 n-tiles; the store undoes it)
//   3  1 and 2 together                                                            38.2%
//   4  256 x 128 per block, one block an SM, per-stage mbarriers instead of          39.0%
//      __syncthreads: "full" (every thread's copies landed, cp.async.mbarrier.arrive)
//      and "empty" (every thread has read the slice)
//   5  4 with 128 x 256 per block                                                  39.0%
//   6  4 with 7 stages of 16 along k                                               38.6%
//   7  4 copying 3 slices ahead instead of 2                                       38.6%
//   8  4 with its blocks in launch order                                           41.4%
//   9  the solution with exact copies (no bounds checks where m, n and k are        44.7% to 45.2%
//      multiples of the tile: one pointer into A and one into B per thread, moved
//      along k) and the next slice's first fragments loaded during the last step
//   10 9 with 256 x 128, 8 warps, 4 stages, one block an SM                        45.2% to 45.6%
//   11 9 with 128 x 256                                                            42.3%
//   12, 13  10 with 3 stages; 9 in groups of 8 tile rows                           41.4%, 40.9%
//   14 to 17  4 warps a scheduler instead of 2: 8 warps of 64 x 32 or 32 x 64,    38.6% to 41.8%
//      128 registers each
//   18 to 20  9, 10 and 14 rounding by an integer add instead of cvt               45.5%, 44.8%, 41.9%
//   27, 28  9 with slices of 16 along k, 5 and 4 stages                      165 and 175 TFLOP/s
//      (9 in the same run: 179)
// Bounds, not products (wrong results, timed without a check; 2026-11-26, GFLOP/s because the
// cuBLAS beside them moved between 371 and 410 TFLOP/s within the run):
//   21 9 copying nothing: each slice multiplies a stage loaded before the loop       239-242 (59%)
//   22 21 without its barrier                                                        246
//   23 22 without rounding                                                           277 (68%)
//   24 10 copying nothing, without its barrier                                       240
//   25, 26  9 and 10 copying as before but never waiting for a copy to land          175, 187
// So what the copies cost (179 -> 240) is not their latency: waiting for none of them gains
// nothing. Nor is it a unit at its limit: Nsight Compute at 4096 (full clock, 1.78 GHz) puts
// version 9 at 38% of the shared-memory read pipe, 59% of L2 throughput and 55% tensor-pipe
// activity, and version 21 at 50%, 2% and 74%. With 0.42 of 2 warps eligible a scheduler, the
// copies' instructions (440 a warp a slice instead of 399) and the later shared-memory reads
// while copies land cost the tensor pipe a quarter of its work.
// Tried and taken out again: 9 and 10 with each value rounded once, in shared memory, by the
// thread that copied it, so that fragments load without a cvt: 38.2% to 42.6%, as the wait for a
// thread's own copies moves to the middle of the slice before, where it shows.
//
// Then the copies went to TMA (sm_90), the stages into its 128-byte swizzle (see the comment
// above tma_kernel):
//   29 9 fed by TMA, thread 0 refilling after a __syncthreads a slice                47.8%
//      (38.8% at first: the stages aligned through an integer cast, and nvcc read B
//      with generic LD instead of LDS, 325 million instructions against 9's 230)
//   30 29 with an "empty" mbarrier per stage, thread 0 waiting on it to refill       48.5% to 50.1%
//   31, 32  29 and 30 with 256 x 128, 8 warps, 4 stages                             41.2%; 49.3% to 50.6%
//   33 to 36  30 and 32 in groups of 8 tile rows, or one slice fewer ahead          49.1% to 50.0%
//   37 30 with one slice ahead instead of two                                        48.9%
//   38, 39  30 and 32 refilled by the last warp out of a stage (atomicAdd in          47.8% to 48.1%;
//      shared memory): nobody waits; 39 became the solution                           50.4% to 51.4%
//   40 the solution before TMA                                                       42.5%
//   41 to 43  the solution's other kernels: cp.async 128 x 128 (what sm_80 to sm_89   42.5%, 14.0%,
//      run), 4-byte cp.async 64 x 64 (rows not 16-byte aligned), TMA 64 x 64 (small)  32.6% (64.6% at 1024)
//   0  the solution (39's kernel)                                                     51.6%
//
// What holds them there, from Nsight Compute at 4096 (its clocks locked at 1.43 GHz):
//   - the instructions: version 0 issues 4.5 per mma, version 9 3.4 (cvt, ldmatrix, LDS and the
//     copies' address arithmetic), and an SM's tensor pipe is busy 53% and 56% of the time;
//   - the warps: 2 a scheduler (about 230 registers each), 0.42 of them eligible; the first
//     stall is "wait", the fixed latency mma.sync imposes between a warp's instructions (2.1
//     cycles an instruction: exactly the stall counts ptxas wrote into version 0's loop, 1216
//     cycles over its 573 instructions a slice, read from the SASS's control bits; an HMMA pair
//     is followed by 6 cycles, a cvt before its mma by up to 5). With 4 warps a scheduler (14
//     to 17) "wait" falls to 1.8 but the math pipe and the shared-memory queue throttle instead
//     (1.5 and 1.4), and the 64 x 32 tiles load more fragments per mma: slower;
//   - the L2 cache: a 128 x 128 tile reads 1 byte per 32 flops, 64% of L2 throughput at 1.43 GHz,
//     and more at full clock; 256 x 128 tiles bring it to 52%, but one block of 8 warps an SM
//     waits at each __syncthreads with no second block to run.
// How it rounds matters little (18 to 20: within 1%); that it rounds costs 12% of the loop
// without copies (22 -> 23). cuBLAS in TF32 pays for it too: it rounds its inputs to nearest
// (bench/dev/tf32_rounding.cu). mma.sync is the path Hopper keeps for Ampere's
// code; its own, wgmma (step 4), reaches 90% of cuBLAS with the same inputs.
//
// Nothing here is graded or in the book: a version that reaches the target moves into the lab's
// solution and walkthrough, with its skeleton, checker and buggy variants, and is measured there
// (version 39 did, on 2026-11-26).
#include "common/check.hpp"
#include "common/compare.hpp"
#include "common/device.hpp"
#include "common/gemm_reference.hpp"
#include "common/random.hpp"
#include "common/timing.hpp"
#include "common/tma.hpp"
#include "common/buffers.hpp"
#include "harness.hpp"  // Version, parse_arguments, check_and_time

#include <cuda.h>  // CUtensorMap (versions 29 and on)
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

// Version 0 and the helpers every version shares (to_tf32, mma_tf32, ldmatrix_x4, cp_async16,
// mbarrier_init, cp_async_arrive): the lab's solution itself, compiled here.
#include "solutions/05_tiled_matmul/tensor_cores.cu"

// Named, not anonymous: the device helpers are then not "unused" in the passes for GPUs older
// than sm_80, whose kernels are only a __trap().
namespace dev {

// What versions 1 to 28 keep from the solution before TMA (version 40): rows of A's slice padded
// by 4 floats and B's by 8, so that ldmatrix (rows 36 floats apart start in banks 4r) and B's
// 32-bit loads (bank 8t + g) meet no conflict; the slices' size; cp.async's groups.
constexpr int A_PAD = 4;
constexpr int B_PAD = 8;
constexpr int tc_shared_bytes(int bm, int bn, int bk, int stages)
{
    return stages * (bm * (bk + A_PAD) + bk * (bn + B_PAD)) * static_cast<int>(sizeof(float));
}
// Closes the group of copies this thread issued since the last commit ...
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
// ... and waits until at most `PENDING` of this thread's groups are still in flight.
template <int PENDING>
__device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;" ::"n"(PENDING) : "memory");
}

__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }

// ---- mbarriers (sm_80): mbarrier_init, cp_async_arrive and mbarrier_wait come from the
// solution; versions 4 to 8 and 30 also arrive themselves. ------------------------------------

// One arrival of this thread (release: its reads of the stage come before it).
__device__ __forceinline__ void mbarrier_arrive(uint64_t* barrier)
{
    asm volatile("{ .reg .b64 state; mbarrier.arrive.shared.b64 state, [%0]; }" ::"r"(smem_addr(barrier))
                 : "memory");
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

// How a fragment is made TF32:
// - cvt: to_tf32, as the solution does;
// - add: one integer add of half of TF32's last place (bit 12) to the float's bits, the mma then
//   ignoring the low 13 bits. Ties round away from zero, as cvt.rna does; a carry out of the
//   mantissa moves the exponent up, as rounding should. (Infinity and NaN would need care; a
//   matrix of them is not this benchmark's.)
// - none: not at all, the mma cutting the bits (a bound only, version 23).
enum class Rounding { cvt, add, none };

template <Rounding ROUND>
__device__ __forceinline__ uint32_t round_tf32(float x)
{
    if constexpr (ROUND == Rounding::none) return __float_as_uint(x);
    if constexpr (ROUND == Rounding::add) return __float_as_uint(x) + 0x1000u;
    return to_tf32(x);
}

// One step of 8 along k: the warp's fragments from its corner of the stage (a_tile: its first row
// of A at the step's column; b_tile: the step's row of B at its first column), rounded to TF32.
// B16: lane (g, t) reads 4 neighbouring floats of B's row, b0 of n-tiles 4q .. 4q + 3, so that
// n-tile j = 4q + r holds column 32q + 4g + r at the mma's column g (store_tile undoes it).
// ROUND: how round_tf32 makes them TF32.
template <int M_TILES, int N_TILES, int A_STRIDE, int B_STRIDE, bool B16, Rounding ROUND = Rounding::cvt>
__device__ __forceinline__ void load_fragments(uint32_t (&af)[M_TILES][4], uint32_t (&bf)[N_TILES][2],
                                               const float* a_tile, const float* b_tile, int lane)
{
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int i = 0; i < M_TILES; ++i) {
        ldmatrix_x4(af[i], a_tile + (i * 16 + lane % 16) * A_STRIDE + lane / 16 * 4);
#pragma unroll
        for (int r = 0; r < 4; ++r) af[i][r] = round_tf32<ROUND>(__uint_as_float(af[i][r]));
    }
    if constexpr (B16) {
        static_assert(N_TILES % 4 == 0, "16-byte B loads cover n-tiles four at a time");
#pragma unroll
        for (int q = 0; q < N_TILES / 4; ++q) {
            const float4 lo = *reinterpret_cast<const float4*>(b_tile + t * B_STRIDE + q * 32 + 4 * g);
            const float4 hi = *reinterpret_cast<const float4*>(b_tile + (t + 4) * B_STRIDE + q * 32 + 4 * g);
            bf[4 * q + 0][0] = round_tf32<ROUND>(lo.x), bf[4 * q + 0][1] = round_tf32<ROUND>(hi.x);
            bf[4 * q + 1][0] = round_tf32<ROUND>(lo.y), bf[4 * q + 1][1] = round_tf32<ROUND>(hi.y);
            bf[4 * q + 2][0] = round_tf32<ROUND>(lo.z), bf[4 * q + 2][1] = round_tf32<ROUND>(hi.z);
            bf[4 * q + 3][0] = round_tf32<ROUND>(lo.w), bf[4 * q + 3][1] = round_tf32<ROUND>(hi.w);
        }
    } else {
#pragma unroll
        for (int j = 0; j < N_TILES; ++j) {
            bf[j][0] = round_tf32<ROUND>(b_tile[t * B_STRIDE + j * 8 + g]);
            bf[j][1] = round_tf32<ROUND>(b_tile[(t + 4) * B_STRIDE + j * 8 + g]);
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

// ---- Versions 9 to 20: fewer instructions a step, and no pause at a slice's start. -----------
//
// Nsight Compute on versions 0 and 4 (H100, 4096): 4.5 and 5.9 instructions issued per mma, the
// tensor pipe busy half the time, under one warp in two eligible to issue. Two changes here:
//   - EXACT (m, n and k multiples of the tile): the copies need no bounds checks, and each thread
//     moves one pointer into A and one into B along k instead of recomputing and testing them;
//   - the first fragments of slice s + 1 load during the last step of slice s (the barrier that
//     makes slice s + 1 visible moves there), so a slice's first mma never waits for ldmatrix.
// One __syncthreads per slice, as in the solution.

template <int BM, int BN, int BK, int THREADS>
__device__ __forceinline__ void copy_slice_exact(float (*as)[BK + A_PAD], float (*bs)[BN + B_PAD],
                                                 const float* a_at, const float* b_at, int k, int n)
{
    // Thread tid copies A chunk (tid / (BK/4) + l * A_ROWS, tid % (BK/4)) and B chunk
    // (tid / (BN/4) + l * B_ROWS, tid % (BN/4)); a_at and b_at point at its first chunk.
    constexpr int A_ROWS = THREADS * 4 / BK, B_ROWS = THREADS * 4 / BN;
    const int tid = threadIdx.x;
    float* a_dst = &as[tid / (BK / 4)][tid % (BK / 4) * 4];
    float* b_dst = &bs[tid / (BN / 4)][tid % (BN / 4) * 4];
#pragma unroll
    for (int l = 0; l < BM / A_ROWS; ++l) cp_async16(a_dst + l * A_ROWS * (BK + A_PAD), a_at + l * A_ROWS * k, 16);
#pragma unroll
    for (int l = 0; l < BK / B_ROWS; ++l) cp_async16(b_dst + l * B_ROWS * (BN + B_PAD), b_at + l * B_ROWS * n, 16);
}

// Versions 21 to 26 are bounds, not products: parts of the loop taken out, to see what each costs.
// - none: the product;
// - no_copies: the loop copies nothing, each slice multiplies a stage loaded before the loop
//   (what the copies and their waits cost);
// - no_copies_no_barrier: nor does it wait at a barrier;
// - unwaited_copies: it copies as the product does but never waits for a copy to land (what the
//   copies cost to issue and carry, without their latency).
enum class Bound { none, no_copies, no_copies_no_barrier, unwaited_copies };

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int MIN_BLOCKS, int GROUP, bool EXACT,
          Rounding ROUND = Rounding::cvt, Bound BOUND = Bound::none>
__global__ void __launch_bounds__(BM / WM * (BN / WN) * 32, MIN_BLOCKS)
    streamlined_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m,
                       int k, int n)
{
#if __CUDA_ARCH__ >= 800
    constexpr int THREADS = BM / WM * (BN / WN) * 32, M_TILES = WM / 16, N_TILES = WN / 8, STEPS = BK / 8;
    constexpr int A_STRIDE = BK + A_PAD, B_STRIDE = BN + B_PAD;
    extern __shared__ __align__(16) float shared[];
    auto as = reinterpret_cast<float(*)[BM][A_STRIDE]>(shared);
    auto bs = reinterpret_cast<float(*)[BK][B_STRIDE]>(shared + STAGES * BM * A_STRIDE);
    const int2 tile = block_tile<BM, BN, GROUP>(m, n);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_row = warp / (BN / WN) * WM, warp_col = warp % (BN / WN) * WN;
    const int slices = (k + BK - 1) / BK;
    // The bounds without copies multiply the STAGES - 1 stages loaded before the loop, round and round.
    constexpr bool COPIES = BOUND == Bound::none || BOUND == Bound::unwaited_copies;
    const auto stage_of = [&](int s) { return COPIES ? s : s % (STAGES - 1); };

    // EXACT: the thread's first chunk of A and of B, moved along k slice by slice.
    const float* a_at = a + (tile.x + threadIdx.x / (BK / 4)) * k + threadIdx.x % (BK / 4) * 4;
    const float* b_at = b + (threadIdx.x / (BN / 4)) * n + tile.y + threadIdx.x % (BN / 4) * 4;
    auto copy = [&](int s) {
        const int buf = s % STAGES;
        if constexpr (EXACT)
            copy_slice_exact<BM, BN, BK, THREADS>(as[buf], bs[buf], a_at + s * BK, b_at + static_cast<size_t>(s) * BK * n, k, n);
        else
            copy_slice<BM, BN, BK, THREADS>(as[buf], bs[buf], a, b, m, k, n, tile, s * BK, threadIdx.x);
    };
    auto fragments = [&](uint32_t (&af)[M_TILES][4], uint32_t (&bf)[N_TILES][2], int s, int step) {
        const int buf = s % STAGES;
        load_fragments<M_TILES, N_TILES, A_STRIDE, B_STRIDE, false, ROUND>(af, bf, &as[buf][warp_row][step * 8],
                                                                              &bs[buf][step * 8][warp_col], lane);
    };

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < slices) copy(s);
        cp_async_commit();
    }
    cp_async_wait<STAGES - 2>();
    __syncthreads();

    float acc[M_TILES][N_TILES][4] = {};
    uint32_t af[2][M_TILES][4], bf[2][N_TILES][2];
    fragments(af[0], bf[0], 0, 0);
    for (int s = 0; s < slices; ++s) {
        // Slice s - 1's stage was last read before the barrier at the end of slice s - 1.
        if (COPIES && s + STAGES - 1 < slices) copy(s + STAGES - 1);
        cp_async_commit();
#pragma unroll
        for (int step = 0; step < STEPS; ++step) {
            const int next = (step + 1) % 2;
            if (step + 1 < STEPS) {
                fragments(af[next], bf[next], stage_of(s), step + 1);
            } else if (s + 1 < slices) {
                if (BOUND == Bound::none) cp_async_wait<STAGES - 2>();  // slice s + 1 has landed, in every thread's copies
                if (BOUND != Bound::no_copies_no_barrier) __syncthreads();
                fragments(af[next], bf[next], stage_of(s + 1), 0);
            }
            mma_all(acc, af[step % 2], bf[step % 2]);
        }
    }
    cp_async_wait_all();
    store_tile<M_TILES, N_TILES, false>(c, m, n, tile.x + warp_row, tile.y + warp_col, acc, lane);
#else
    __trap();
#endif
}

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int MIN_BLOCKS, int GROUP,
          Rounding ROUND = Rounding::cvt, Bound BOUND = Bound::none>
void launch_streamlined(const float* a, const float* b, float* c, int m, int k, int n)
{
    constexpr int bytes = tc_shared_bytes(BM, BN, BK, STAGES);
    const bool exact = m % BM == 0 && n % BN == 0 && k % BK == 0;
    const auto kernel = exact ? streamlined_kernel<BM, BN, BK, WM, WN, STAGES, MIN_BLOCKS, GROUP, true, ROUND, BOUND>
                              : streamlined_kernel<BM, BN, BK, WM, WN, STAGES, MIN_BLOCKS, GROUP, false, ROUND, BOUND>;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    kernel<<<grid_for<BM, BN, GROUP>(m, n), BM / WM * (BN / WN) * 32, bytes>>>(a, b, c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}

// ---- Versions 29 to 39 (sm_90): version 9's loop, its slices brought by TMA. -------------------
//
// One thread asks the Tensor Memory Accelerator for each slice (one box of A, four of B) and the
// copy engine reports the bytes on the stage's "full" mbarrier; no other thread issues a copy or
// computes an address for one. TMA cannot pad rows, so the stages are in its 128-byte swizzled
// layout: in each row of 32 floats, 16-byte chunk q is stored at chunk q ^ (row % 8).
// - A (BM rows of 32 floats of k): ldmatrix's 8 row addresses of one 8 x 4 matrix are rows
//   r..r+7 at one chunk, which the swizzle spreads over 8 different chunks: no conflict.
// - B (4 boxes of 32 rows of k by 32 columns of n): lane (g, t) reads row t (b0) and t + 4 (b1).
//   With n-tile j's column g at column 8j + g, lanes t = 0..3 would meet 2 by 2 in the same
//   banks. So n-tile jj (0..3) of a box owns columns 4jj .. 4jj + 3 and 16 + 4jj .. 16 + 4jj + 3:
//   its column g is chunk 4 (g / 4) + jj, place g % 4, swizzled to chunk 4 (g / 4) + (jj ^ t) in
//   row t: 32 lanes, 32 banks. Any 8 columns will do for an n-tile, as long as the store puts
//   each sum back in its column.
// REFILL: when a stage is refilled, and by whom (thread 0 issues every TMA but with `last`).
// - barrier: a __syncthreads a slice, after which thread 0 refills the stage of the slice before;
// - empty: per-stage "empty" mbarriers, on which each warp arrives once it holds a slice's last
//   fragments; thread 0 waits for them all before refilling that stage;
// - last: each warp counts itself out of a slice (an atomicAdd in shared memory); the last one
//   out refills the stage at once. Nobody waits, and all STAGES stages can be in flight.
// AHEAD: slices in flight ahead of the one being multiplied (barrier: STAGES - 1; last: STAGES);
// with fewer, thread 0 refills a stage released STAGES - AHEAD slices back.
// GROUP: the tile order of block_tile.
// Tried and taken out again: B read 16 bytes at a time (lane (g, t) takes the 4 floats of chunk
// g / 2 + 4 (g % 2) of rows t and t + 4, b0 and b1 of 4 n-tiles; no bank conflict under the
// swizzle): 4 LDS.128 a step instead of 16 LDS.32, but 43.9% and 44.5% for 30 and 32, as version 2.
enum class Refill { barrier, empty, last };

// mbarrier_arrive_expect_tx and tma_load come from the solution.
constexpr int TMA_BN = 128, TMA_BK = 32;

template <int BM, int STAGES>
constexpr int tma_shared_bytes()
{
    // The stages, 2 mbarriers and a count each, and room to align the stages to 1024 bytes.
    return STAGES * (BM * TMA_BK + TMA_BK * TMA_BN) * 4 + STAGES * (2 * 8 + 4) + 1024;
}

template <int BM, int WM, int WN, int STAGES, int AHEAD, int MIN_BLOCKS, int GROUP, Refill REFILL>
__global__ void __launch_bounds__(BM / WM * (TMA_BN / WN) * 32, MIN_BLOCKS)
    tma_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
               float* __restrict__ c, int m, int k, int n)
{
#if __CUDA_ARCH__ >= 900
    constexpr int BN = TMA_BN, BK = TMA_BK, WARPS = BM / WM * (BN / WN);
    constexpr int M_TILES = WM / 16, N_TILES = WN / 8, STEPS = BK / 8;
    constexpr int A_FLOATS = BM * BK, B_FLOATS = BK * BN;
    static_assert(WN % 32 == 0, "a warp's columns are whole boxes of 32");
    static_assert(REFILL == Refill::barrier   ? AHEAD == STAGES - 1
                  : REFILL == Refill::last ? AHEAD == STAGES
                                           : AHEAD >= 1 && AHEAD < STAGES,
                  "slices ahead as the refill allows");
    // Aligned by an offset from `raw`, not by rounding a pointer cast to an integer: the compiler
    // then still knows these are shared-memory addresses, and reads them with LDS, not generic LD.
    extern __shared__ __align__(16) unsigned char raw[];
    float* const as = reinterpret_cast<float*>(raw + (1024 - smem_addr(raw) % 1024) % 1024);
    float* const bs = as + STAGES * A_FLOATS;
    uint64_t* const full = reinterpret_cast<uint64_t*>(bs + STAGES * B_FLOATS);
    uint64_t* const empty = full + STAGES;
    unsigned* const released = reinterpret_cast<unsigned*>(empty + STAGES);  // warps out of each stage, ever
    const int2 tile = block_tile<BM, BN, GROUP>(m, n);
    const int tile_row = tile.x, tile_col = tile.y;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int warp_row = warp / (BN / WN) * WM, warp_col = warp % (BN / WN) * WN;
    const int slices = (k + BK - 1) / BK;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(&full[s], 1);
            mbarrier_init(&empty[s], WARPS);
            released[s] = 0;
        }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();

    auto load = [&](int s) {
        const int buf = s % STAGES;
        mbarrier_arrive_expect_tx(&full[buf], (A_FLOATS + B_FLOATS) * 4);
        tma_load(as + buf * A_FLOATS, &a_map, s * BK, tile_row, &full[buf]);
#pragma unroll
        for (int q = 0; q < BN / 32; ++q)
            tma_load(bs + buf * B_FLOATS + q * BK * 32, &b_map, tile_col + q * 32, s * BK, &full[buf]);
    };
    if (threadIdx.x == 0)
        for (int s = 0; s < AHEAD && s < slices; ++s) load(s);

    // ldmatrix: lane L gives row L % 16 of the m-tile at chunk 2 step + L / 16, swizzled by the
    // row's r % 8 = L % 8; as 2 step is even, (2 step + h) ^ x = 2 step ^ (h ^ x).
    const int a_chunk = (lane / 16) ^ (lane % 8);
    const int b0_at = t * 32 + g / 4 * 16 + g % 4;              // row t, chunk 4 (g / 4) (+ jj ^ t)
    const int b1_at = (t + 4) * 32 + (g / 4 ^ 1) * 16 + g % 4;  // row t + 4: (4 (g / 4) + jj) ^ (t + 4)
    auto fragments = [&](uint32_t (&af)[M_TILES][4], uint32_t (&bf)[N_TILES][2], int buf, int step) {
        const float* a_stage = as + buf * A_FLOATS + (warp_row + lane % 16) * BK + ((2 * step) ^ a_chunk) * 4;
#pragma unroll
        for (int i = 0; i < M_TILES; ++i) {
            ldmatrix_x4(af[i], a_stage + i * 16 * BK);
#pragma unroll
            for (int r = 0; r < 4; ++r) af[i][r] = to_tf32(__uint_as_float(af[i][r]));
        }
        const float* b_stage = bs + buf * B_FLOATS + warp_col / 32 * (BK * 32) + step * 8 * 32;
#pragma unroll
        for (int j = 0; j < N_TILES; ++j) {
            const float* box = b_stage + j / 4 * (BK * 32) + ((j % 4) ^ t) * 4;
            bf[j][0] = to_tf32(box[b0_at]);
            bf[j][1] = to_tf32(box[b1_at]);
        }
    };

    float acc[M_TILES][N_TILES][4] = {};
    uint32_t af[2][M_TILES][4], bf[2][N_TILES][2];
    if (slices > 0) {
        mbarrier_wait(&full[0], 0);
        fragments(af[0], bf[0], 0, 0);
    }
    for (int s = 0; s < slices; ++s) {
        const int buf = s % STAGES;
        // Load slice s + AHEAD into the stage of slice s + AHEAD - STAGES: every warp holds that
        // slice's fragments (it passed the barrier at the end of it, or arrived on its empty barrier).
        if (REFILL != Refill::last && threadIdx.x == 0 && s + AHEAD < slices) {
            const int old = s + AHEAD - STAGES;
            if (REFILL == Refill::empty && old >= 0) mbarrier_wait(&empty[old % STAGES], old / STAGES % 2);
            load(s + AHEAD);
        }
#pragma unroll
        for (int step = 0; step < STEPS; ++step) {
            const int next = (step + 1) % 2;
            if (step + 1 < STEPS) {
                fragments(af[next], bf[next], buf, step + 1);
            } else {
                if (REFILL == Refill::empty) {
                    __syncwarp();
                    if (lane == 0) mbarrier_arrive(&empty[buf]);
                }
                if (REFILL == Refill::last) {
                    __syncwarp();  // every lane's reads of the stage come before lane 0's count
                    if (lane == 0) {
                        __threadfence_block();
                        if ((atomicAdd(&released[buf], 1u) + 1) % WARPS == 0 && s + STAGES < slices) {
                            __threadfence_block();
                            load(s + STAGES);
                        }
                    }
                }
                if (s + 1 < slices) {
                    mbarrier_wait(&full[(s + 1) % STAGES], (s + 1) / STAGES % 2);
                    if (REFILL == Refill::barrier) __syncthreads();
                    fragments(af[next], bf[next], (s + 1) % STAGES, 0);
                }
            }
            mma_all(acc, af[step % 2], bf[step % 2]);
        }
    }

    // Sum (i, j, 2 half + e) is at row g + 8 half of m-tile i, and at the n-tile's column 2t + e:
    // box j / 4, chunk 4 ((2t + e) / 4) + j % 4 = 4 (t / 2) + j % 4, place 2 (t % 2) + e.
#pragma unroll
    for (int i = 0; i < M_TILES; ++i)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int row = tile_row + warp_row + i * 16 + g + half * 8;
            if (row >= m) continue;
#pragma unroll
            for (int j = 0; j < N_TILES; ++j) {
                const int col = tile_col + warp_col + j / 4 * 32 + t / 2 * 16 + j % 4 * 4 + t % 2 * 2;
                if (col < n)
                    *reinterpret_cast<float2*>(&c[static_cast<size_t>(row) * n + col]) =
                        make_float2(acc[i][j][2 * half], acc[i][j][2 * half + 1]);
            }
        }
#else
    __trap();
#endif
}

template <int BM, int WM, int WN, int STAGES, int AHEAD, int MIN_BLOCKS, int GROUP, Refill REFILL>
void launch_tma(const float* a, const float* b, float* c, int m, int k, int n)
{
    const auto kernel = tma_kernel<BM, WM, WN, STAGES, AHEAD, MIN_BLOCKS, GROUP, REFILL>;
    constexpr int bytes = tma_shared_bytes<BM, STAGES>();
    const CUtensorMap a_map = workbook::tensor_map_swizzled(a, m, k, BM);
    const CUtensorMap b_map = workbook::tensor_map_swizzled(b, k, n, TMA_BK);
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    kernel<<<grid_for<BM, TMA_BN, GROUP>(m, n), BM / WM * (TMA_BN / WN) * 32, bytes>>>(a_map, b_map, c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}

// ---- The versions and the run. ------------------------------------------------------------


// A version of each family: its launcher and, for its registers, its kernel on exact sizes.
template <int BM, int BN, int BK, int WM, int WN, int STAGES, int MIN_BLOCKS, int GROUP, bool B16>
Version synced(const char* name)
{
    return {name, launch_synced<BM, BN, BK, WM, WN, STAGES, MIN_BLOCKS, GROUP, B16>,
            reinterpret_cast<const void*>(synced_kernel<BM, BN, BK, WM, WN, STAGES, MIN_BLOCKS, GROUP, B16>)};
}

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int AHEAD, int GROUP, bool B16>
Version pipelined(const char* name)
{
    return {name, launch_pipelined<BM, BN, BK, WM, WN, STAGES, AHEAD, GROUP, B16>,
            reinterpret_cast<const void*>(pipelined_kernel<BM, BN, BK, WM, WN, STAGES, AHEAD, GROUP, B16>)};
}

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int MIN_BLOCKS, int GROUP,
          Rounding ROUND = Rounding::cvt, Bound BOUND = Bound::none>
Version streamlined(const char* name)
{
    return {name, launch_streamlined<BM, BN, BK, WM, WN, STAGES, MIN_BLOCKS, GROUP, ROUND, BOUND>,
            reinterpret_cast<const void*>(
                streamlined_kernel<BM, BN, BK, WM, WN, STAGES, MIN_BLOCKS, GROUP, true, ROUND, BOUND>),
            BOUND != Bound::none};
}

template <int BM, int WM, int WN, int STAGES, int AHEAD, int MIN_BLOCKS, int GROUP, Refill REFILL>
Version tma(const char* name)
{
    return {name, launch_tma<BM, WM, WN, STAGES, AHEAD, MIN_BLOCKS, GROUP, REFILL>,
            reinterpret_cast<const void*>(tma_kernel<BM, WM, WN, STAGES, AHEAD, MIN_BLOCKS, GROUP, REFILL>)};
}

const std::vector<Version>& versions()
{
    static const std::vector<Version> all = {
        {"the solution (on sm_90: 256 x 128, 8 warps, 4 TMA stages)", ::launch_matmul_tensor_cores, nullptr},
        synced<128, 128, 32, 64, 64, 3, 2, 8, false>("solution, blocks in groups of 8 tile rows"),
        synced<128, 128, 32, 64, 64, 3, 2, 0, true>("solution, 16-byte B fragment loads"),
        synced<128, 128, 32, 64, 64, 3, 2, 8, true>("solution, groups of 8 and 16-byte B loads"),
        pipelined<256, 128, 32, 64, 64, 4, 2, 8, true>("256 x 128, 8 warps, 4 mbarrier stages of 32, 2 ahead"),
        pipelined<128, 256, 32, 64, 64, 4, 2, 8, true>("128 x 256, 8 warps, 4 mbarrier stages of 32, 2 ahead"),
        pipelined<256, 128, 16, 64, 64, 7, 5, 8, true>("256 x 128, 8 warps, 7 mbarrier stages of 16, 5 ahead"),
        pipelined<256, 128, 32, 64, 64, 4, 3, 8, true>("256 x 128, 8 warps, 4 mbarrier stages of 32, 3 ahead"),
        pipelined<256, 128, 32, 64, 64, 4, 2, 0, true>("256 x 128, 8 warps, 4 stages, 2 ahead, blocks in launch order"),
        streamlined<128, 128, 32, 64, 64, 3, 2, 0>("solution, exact copies, next slice's fragments early"),
        streamlined<256, 128, 32, 64, 64, 4, 1, 8>("9 with 256 x 128, 8 warps, 4 stages, groups of 8"),
        streamlined<128, 256, 32, 64, 64, 4, 1, 8>("9 with 128 x 256, 8 warps, 4 stages, groups of 8"),
        streamlined<256, 128, 32, 64, 64, 3, 1, 8>("9 with 256 x 128, 8 warps, 3 stages, groups of 8"),
        streamlined<128, 128, 32, 64, 64, 3, 2, 8>("9 with groups of 8"),
        streamlined<128, 128, 32, 64, 32, 3, 2, 0>("9 with 8 warps of 64 x 32: 4 warps a scheduler"),
        streamlined<256, 128, 32, 64, 32, 4, 1, 8>("9 with 256 x 128, 16 warps of 64 x 32, 4 stages, groups of 8"),
        streamlined<128, 128, 32, 32, 64, 3, 2, 0>("9 with 8 warps of 32 x 64: 4 warps a scheduler"),
        streamlined<256, 128, 32, 64, 32, 3, 1, 8>("9 with 256 x 128, 16 warps of 64 x 32, 3 stages, groups of 8"),
        streamlined<128, 128, 32, 64, 64, 3, 2, 0, Rounding::add>("9, rounding by an integer add instead of cvt"),
        streamlined<256, 128, 32, 64, 64, 4, 1, 8, Rounding::add>("10, rounding by an integer add instead of cvt"),
        streamlined<128, 128, 32, 64, 32, 3, 2, 0, Rounding::add>("14, rounding by an integer add instead of cvt"),
        streamlined<128, 128, 32, 64, 64, 3, 2, 0, Rounding::cvt, Bound::no_copies>("bound: 9 copying nothing (a barrier a slice)"),
        streamlined<128, 128, 32, 64, 64, 3, 2, 0, Rounding::cvt, Bound::no_copies_no_barrier>("bound: 9 copying nothing, no barrier"),
        streamlined<128, 128, 32, 64, 64, 3, 2, 0, Rounding::none, Bound::no_copies_no_barrier>("bound: 9 copying nothing, no barrier, no rounding"),
        streamlined<256, 128, 32, 64, 64, 4, 1, 8, Rounding::cvt, Bound::no_copies_no_barrier>("bound: 10 copying nothing, no barrier"),
        streamlined<128, 128, 32, 64, 64, 3, 2, 0, Rounding::cvt, Bound::unwaited_copies>("bound: 9 never waiting for its copies"),
        streamlined<256, 128, 32, 64, 64, 4, 1, 8, Rounding::cvt, Bound::unwaited_copies>("bound: 10 never waiting for its copies"),
        streamlined<128, 128, 16, 64, 64, 5, 2, 0>("9 with 5 stages of 16"),
        streamlined<128, 128, 16, 64, 64, 4, 2, 0>("9 with 4 stages of 16"),
        tma<128, 64, 64, 3, 2, 2, 0, Refill::barrier>("9 fed by TMA, swizzled stages, 3 stages, a barrier a slice"),
        tma<128, 64, 64, 3, 2, 2, 0, Refill::empty>("29 with empty mbarriers instead of the barrier"),
        tma<256, 64, 64, 4, 3, 1, 0, Refill::barrier>("29 with 256 x 128, 8 warps, 4 stages"),
        tma<256, 64, 64, 4, 3, 1, 0, Refill::empty>("31 with empty mbarriers instead of the barrier"),
        tma<128, 64, 64, 3, 2, 2, 8, Refill::empty>("30 with groups of 8 tile rows"),
        tma<256, 64, 64, 4, 2, 1, 0, Refill::empty>("32 with 2 slices ahead, not 3"),
        tma<256, 64, 64, 4, 2, 1, 8, Refill::empty>("34 with groups of 8 tile rows"),
        tma<256, 64, 64, 4, 3, 1, 8, Refill::empty>("32 with groups of 8 tile rows"),
        tma<128, 64, 64, 3, 1, 2, 0, Refill::empty>("30 with 1 slice ahead, not 2"),
        tma<128, 64, 64, 3, 3, 2, 0, Refill::last>("30 refilled by the last warp out of a stage"),
        tma<256, 64, 64, 4, 4, 1, 0, Refill::last>("32 refilled by the last warp out of a stage"),
        synced<128, 128, 32, 64, 64, 3, 2, 0, false>("the solution before TMA: padded rows, cp.async, 128 x 128"),
        {"the solution's kernel copying with cp.async, 128 x 128 (sm_80 to sm_89)",
         ::launch_tensor_cores<128, 128, 64, 64, 3, 2, Copies::copies16>,
         reinterpret_cast<const void*>(::matmul_tensor_core_kernel<128, 128, 64, 64, 3, 2, Copies::copies16>)},
        {"the solution's kernel copying 4 bytes at a time, 64 x 64 (unaligned)",
         ::launch_tensor_cores<64, 64, 32, 32, 4, 2, Copies::copies4>,
         reinterpret_cast<const void*>(::matmul_tensor_core_kernel<64, 64, 32, 32, 4, 2, Copies::copies4>)},
        {"the solution's kernel with TMA, 64 x 64 (small sizes)", ::launch_tensor_cores<64, 64, 32, 32, 4, 2, Copies::tma>,
         reinterpret_cast<const void*>(::matmul_tensor_core_kernel<64, 64, 32, 32, 4, 2, Copies::tma>)},
    };
    return all;
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
    const double cublas = tf32_gemm_gflops(m, k, n);
    std::printf("\n%d x %d x %d: cuBLAS TF32 %.0f GFLOP/s; tolerance %.3g (%s)\n", m, k, n, cublas, tolerance.abs,
                tolerance.why.c_str());
    print_heading(62);
    for (int v : chosen) check_and_time(v, versions().at(v), 62, da.data(), db.data(), dc, m, k, n, expected, tolerance);
}

}  // namespace dev

int main(int argc, char** argv)
{
    using namespace dev;
    std::vector<int> chosen, sizes = {1024, 2048, 4096};
    if (!parse_arguments(argc, argv, versions(), chosen, sizes)) return 2;
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
