// Lab 05, going further, towards a step 5 (issue 41): versions of step 4's wgmma kernel side by
// side, in the manner of llm.c's dev/cuda, on the road to passing cuBLAS TF32 on an H100. Each
// version is checked against the float64 reference within TF32's tolerance, then timed beside
// cuBLAS TF32 in the same process (cuBLAS timed again just before each version); a wrong version
// is reported and never timed.
//
//   cmake --build build --target dev_wgmma
//   build/bin/dev_wgmma [VERSION ...] [--sizes 1024,2048,4096]
//
// Version 0 is step 4's solution (solutions/05_tiled_matmul/wgmma.cu, included here with the
// helpers it defines: mbarriers, TMA, wgmma, the shared storage). Step 4 reaches about 90% of
// cuBLAS TF32 at 4096. The ideas tried here, each a template argument of one kernel:
//   - persistent blocks: one block an SM, each taking tile after tile from a fixed order, so that
//     the producer loads the next tile's stages while the consumers store the last one;
//   - thread-block clusters of 2 along n, whose two blocks share A's tile: each fetches half of
//     it with one TMA multicast that lands in both blocks' shared memory, halving A's traffic from
//     L2; a consumer warp then frees a stage in both blocks (a remote mbarrier arrive);
//   - the left operand double-buffered: a consumer warpgroup reads the next k tile's B values
//     into its second set of registers while the tensor cores work on the last, waiting only for
//     the product before it (wgmma.wait_group 1), where step 4 waits for every product;
//   - tiles taken in groups of GROUP_M tile rows, for the L2's sake.
// Versions 8 to 16 try the other way round: both operands from shared memory (B transposed there
// into K-major order, rounded to TF32), so that no wgmma reads a register a thread writes.
//
// Figures: H100 80 GB HBM3, CUDA 13.0, 2026-11-27, four runs of one process each, at 4096 (and
// 2048), as % of cuBLAS TF32 timed just before (393 to 406 TFLOP/s); every version passed its check
// at 1000 x 996 x 868, 1024, 2048 and 4096:
//   0  step 4's solution                                                 89.6% to 91.3% (96.5 to 98.2%)
//   1  persistent, step 4's loop                                         90.7% to 93.3% (97.4 to 98.3%)
//   2  1 in groups of 8 tile rows                                        88.9%, 89.1%
//   3  2 double-buffered: ptxas says "wgmma.mma_async instructions are   82.2%
//      serialized due to non wgmma instructions defining input registers"
//      (C7513): the next set's loads count as inside the running stage
//   4  2 in clusters of 2 sharing A by multicast                         90.7% (93.9%)
//      (38.8% at first, the remote arrive written with .release.cluster:
//      a cluster-wide fence on every stage; CTA scope, as CUTLASS arrives, is enough)
//   5, 7  4 double-buffered, in groups of 8 and 16 tile rows             82.2%, 82.0% (C7513 again;
//      6, in rows of tiles, was run only before the fix of 4: 35.4%)
//   8 to 12  B transposed by 3 warps of the producer's warpgroup: one     19.8% to 36.3%
//      warp a scheduler, each step waiting on the last
//   13, 16  the consumers transposing the next k tile while the tensor    57.6%, 57.4%
//      cores run (no C7513); 14 in clusters 51.3%; 15 at 128 x 128 33.4%
// Why 13 stops at 58%: an m64n128k8 with both operands in shared memory reads 6 KB for 64 cycles of
// tensor-core work (96 B a cycle, of the SM's 128), and the transposition adds 32 KB a k tile
// and TMA's writes 48 KB: shared memory, not the tensor cores, sets the pace. Step 4's register
// operand reads B once. So the next tries keep B in registers and hide its loads some other way:
// the two consumer warpgroups on different tiles, out of phase (CUTLASS's "ping-pong"), or B's
// values staged by the producer's warps in the exact register-fragment order, one 16-byte read a
// fragment. Nothing here reaches the issue's 100% yet.
//
// Nothing here is graded or in the book: a version that reaches the target moves into the lab's
// solution and walkthrough, with its skeleton, checker and buggy variants (issue 41).
#include "common/buffers.hpp"
#include "common/check.hpp"
#include "common/compare.hpp"
#include "common/device.hpp"
#include "common/gemm_reference.hpp"
#include "common/random.hpp"
#include "common/timing.hpp"
#include "common/tma.hpp"
#include "harness.hpp"  // Version, parse_arguments, check_and_time

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

// Version 0 and the helpers every version shares: the lab's solution itself, compiled here.
#include "solutions/05_tiled_matmul/wgmma.cu"

namespace dev {

// ---- What step 5 adds to step 4's plumbing. ------------------------------------------------

// This block's rank in its cluster.
__device__ inline uint32_t cluster_rank()
{
    uint32_t rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return rank;
}

// Every thread of every block of the cluster arrives, then waits for all the others.
__device__ inline void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// Arrive on the mbarrier at bar's offset in block `rank` of the cluster (this block's own, too).
__device__ inline void mbarrier_arrive_in(uint64_t* bar, uint32_t rank)
{
    asm volatile(
        "{ .reg .b32 remote; mapa.shared::cluster.u32 remote, %0, %1;"
        " mbarrier.arrive.shared::cluster.b64 _, [remote]; }" ::"r"(smem_addr(bar)),
        "r"(rank)
        : "memory");
}

// TMA multicast: the box lands at dst's offset in every block of `mask`, and its bytes count on
// the mbarrier at bar's offset in each of them.
__device__ inline void tma_load_multicast(void* dst, const CUtensorMap* map, int x, int y, uint64_t* bar,
                                          uint16_t mask)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(smem_addr(dst)),
        "l"(map), "r"(x), "r"(y), "r"(smem_addr(bar)), "h"(mask)
        : "memory");
}

// Wait until at most N committed groups of wgmma are still running.
template <int N>
__device__ inline void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// The tile of C (in cluster-wide tiles: CLUSTER * BN columns) that position `index` of the order
// names: groups of group_m tile rows, column after column within a group (group_m 0: row after row).
__device__ inline void tile_at(int index, int tiles_m, int tiles_n, int group_m, int& tm, int& tn)
{
    if (group_m == 0) {
        tm = index / tiles_n;
        tn = index % tiles_n;
        return;
    }
    const int per_group = group_m * tiles_n;
    const int first = index / per_group * group_m;
    const int rows = min(tiles_m - first, group_m);
    const int in_group = index % per_group;
    tm = first + in_group % rows;
    tn = in_group / rows;
}

// ---- The kernel. --------------------------------------------------------------------------

// Persistent, warp-specialised, clustered: blocks of CLUSTER side by side along n compute C's
// BM x (CLUSTER * BN) tiles in the order tile_at gives, cluster c taking tiles c, c + clusters, ...
// Within a block, as in step 4: warpgroup 0's thread 0 produces (TMA), warpgroups 1 and 2 consume
// (wgmma), each owning 64 of the BN columns; the stages and their phases run on across tiles.
template <int BM, int CLUSTER, int GROUP_M, bool OVERLAP>
__global__ void __launch_bounds__(THREADS, 1)
    persistent_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                      float* __restrict__ c, int m, int n, int k_tiles, int tiles_m, int tiles_n)
{
#if HOPPER_DEVICE_CODE
    extern __shared__ unsigned char smem_raw[];
    auto& smem = *reinterpret_cast<SharedStorage<BM>*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) / 1024 * 1024);
    constexpr int STAGE_BYTES = (BM * BK + BK * BN) * sizeof(float);  // A's whole tile lands, half from the peer
    constexpr int A_PART = BM / CLUSTER;                               // rows of A's tile this block fetches
    const uint32_t rank = CLUSTER > 1 ? cluster_rank() : 0;
    const int cluster = blockIdx.x / CLUSTER, clusters = gridDim.x / CLUSTER;
    const int tiles = tiles_m * tiles_n;
    const int warpgroup = threadIdx.x / 128;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(&smem.full[s], 1);                           // this block's producer
            mbarrier_init(&smem.empty[s], CONSUMERS * 4 * CLUSTER);    // every consumer warp of the cluster
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    // No block may multicast into another, or arrive on its barriers, before they exist.
    if constexpr (CLUSTER > 1) cluster_sync(); else __syncthreads();

    if (warpgroup == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0) {
            int it = 0;  // k tiles produced so far, over all tiles: stage it % STAGES
            for (int tile = cluster; tile < tiles; tile += clusters) {
                int tm, tn;
                tile_at(tile, tiles_m, tiles_n, GROUP_M, tm, tn);
                const int block_row = tm * BM, block_col = (tn * CLUSTER + static_cast<int>(rank)) * BN;
                for (int t = 0; t < k_tiles; ++t, ++it) {
                    const int s = it % STAGES;
                    mbarrier_wait(&smem.empty[s], (it / STAGES + 1) % 2);
                    mbarrier_arrive_expect_tx(&smem.full[s], STAGE_BYTES);
                    if constexpr (CLUSTER > 1)
                        tma_load_multicast(smem.a[s] + rank * A_PART * BK, &a_map, t * BK, block_row + rank * A_PART,
                                           &smem.full[s], (1u << CLUSTER) - 1);
                    else
                        tma_load(smem.a[s], &a_map, t * BK, block_row, &smem.full[s]);
                    for (int q = 0; q < BN / 32; ++q)
                        tma_load(smem.b[s] + q * BK * 32, &b_map, block_col + q * 32, t * BK, &smem.full[s]);
                }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        const int consumer = warpgroup - 1;
        const int warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
        const int j = consumer * 64 + warp * 16 + lane / 4;  // as in step 4
        const int kk = lane % 4;

        // This warp is done with stage s: free it in every block that fills it.
        auto release = [&](int s) {
            if (lane == 0) {
                if constexpr (CLUSTER > 1) {
                    for (uint32_t r = 0; r < CLUSTER; ++r) mbarrier_arrive_in(&smem.empty[s], r);
                } else {
                    mbarrier_arrive(&smem.empty[s]);
                }
            }
        };

        float acc[BM / 2];
        uint32_t left[2][BK / 8][4];
        // One k tile: wait for it, read B's values into register set `set`, issue its 4 wgmmas;
        // then wait for the products before them and free their stage (OVERLAP), or for these.
        auto step = [&](int it, uint32_t(&regs)[BK / 8][4], bool first) {
            const int s = it % STAGES;
            mbarrier_wait(&smem.full[s], (it / STAGES) % 2);
#pragma unroll
            for (int p = 0; p < BK / 8; ++p) {
                regs[p][0] = to_tf32(b_tile_at(smem.b[s], p * 8 + kk, j));
                regs[p][1] = to_tf32(b_tile_at(smem.b[s], p * 8 + kk, j + 8));
                regs[p][2] = to_tf32(b_tile_at(smem.b[s], p * 8 + kk + 4, j));
                regs[p][3] = to_tf32(b_tile_at(smem.b[s], p * 8 + kk + 4, j + 8));
            }
            const uint64_t desc = make_smem_desc(smem.a[s]);
            wgmma_fence();
#pragma unroll
            for (int p = 0; p < BK / 8; ++p) wgmma_tf32<BM>(acc, regs[p], desc + 2 * p);
            wgmma_commit();
            if constexpr (OVERLAP) {
                wgmma_wait<1>();
                if (!first) release((it - 1) % STAGES);
            } else {
                wgmma_wait<0>();
                release(s);
            }
        };

        int it = 0;  // k tiles consumed so far, over all tiles
        for (int tile = cluster; tile < tiles; tile += clusters) {
            int tm, tn;
            tile_at(tile, tiles_m, tiles_n, GROUP_M, tm, tn);
            const int block_row = tm * BM, block_col = (tn * CLUSTER + static_cast<int>(rank)) * BN;
#pragma unroll
            for (int i = 0; i < BM / 2; ++i) acc[i] = 0.0f;
            // Two k tiles a turn, so that each register set is named at compile time.
            for (int t = 0; t < k_tiles; t += 2) {
                step(it + t, left[0], t == 0);
                if (t + 1 < k_tiles) step(it + t + 1, left[1], false);
            }
            if constexpr (OVERLAP) {
                wgmma_wait<0>();
                release((it + k_tiles - 1) % STAGES);
            }
#pragma unroll
            for (int i = 0; i < BM / 2; ++i) pin(acc[i]);
            it += k_tiles;

            // The store, as in step 4; meanwhile the producer fills the stages for the next tile.
#pragma unroll
            for (int g = 0; g < BM / 8; ++g)
#pragma unroll
                for (int h = 0; h < 2; ++h)
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        const int row = block_row + 8 * g + 2 * (lane % 4) + e;
                        const int col = block_col + j + 8 * h;
                        if (row < m && col < n) c[static_cast<long long>(row) * n + col] = acc[4 * g + 2 * h + e];
                    }
        }
    }
    // No block may leave while another of its cluster may still multicast into it or arrive on
    // its barriers.
    if constexpr (CLUSTER > 1) cluster_sync();
#endif
}

// Launches one of this file's persistent kernels over C's tiles of BM x (CLUSTER * BN), in
// clusters of CLUSTER blocks along n: as many clusters as fit on the GPU at once (asked once per
// kernel), or as there are tiles.
template <int BM, int CLUSTER>
void launch_clustered(const void* kernel, int smem_bytes, const float* a, const float* b, float* c, int m, int k, int n)
{
    if (k % 4 != 0 || n % 4 != 0) throw std::runtime_error("dev_wgmma: k and n must be multiples of 4");
    CUtensorMap a_map = workbook::tensor_map_swizzled(a, m, k, BM / CLUSTER);  // each block fetches its share of A
    CUtensorMap b_map = workbook::tensor_map_swizzled(b, k, n, BK);
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
    int tiles_m = (m + BM - 1) / BM, tiles_n = (n + CLUSTER * BN - 1) / (CLUSTER * BN);
    int k_tiles = (k + BK - 1) / BK;

    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = CLUSTER;
    attribute.val.clusterDim.y = 1;
    attribute.val.clusterDim.z = 1;
    cudaLaunchConfig_t config{};
    config.blockDim = dim3(THREADS);
    config.dynamicSmemBytes = smem_bytes;
    config.attrs = &attribute;
    config.numAttrs = 1;
    static std::map<const void*, int> fits;
    int& fit = fits[kernel];
    if (fit == 0) {
        config.gridDim = dim3(CLUSTER);
        CUDA_CHECK(cudaOccupancyMaxActiveClusters(&fit, kernel, &config));
        if (fit < 1) throw std::runtime_error("dev_wgmma: not one cluster fits on this GPU");
    }
    config.gridDim = dim3(std::min(fit, tiles_m * tiles_n) * CLUSTER);
    static bool told = false;
    if (!told && std::getenv("DEV_WGMMA_TELL")) {
        std::printf("    [%d clusters of %d fit; grid %u for %d tiles]\n", fit, CLUSTER, config.gridDim.x, tiles_m * tiles_n);
        told = true;
    }
    void* arguments[] = {&a_map, &b_map, &c, &m, &n, &k_tiles, &tiles_m, &tiles_n};
    CUDA_CHECK(cudaLaunchKernelExC(&config, kernel, arguments));
}

template <int BM, int CLUSTER, int GROUP_M, bool OVERLAP>
void launch_persistent(const float* a, const float* b, float* c, int m, int k, int n)
{
    launch_clustered<BM, CLUSTER>(reinterpret_cast<const void*>(persistent_kernel<BM, CLUSTER, GROUP_M, OVERLAP>),
                                  sizeof(SharedStorage<BM>) + 1024, a, b, c, m, k, n);
}

// ---- Both operands from shared memory: B transposed by the producer's idle warps. ----------

// wgmma with both operands in shared memory: d (64 x 128) += A (64 x 8, K-major, desc_a) times
// B (8 x 128, stored K-major as 128 rows of k, desc_b). All 128 threads of the warpgroup call it.
#define WGMMA_D8(i)                                                                                            \
    "+f"(d[i + 0]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
        "+f"(d[i + 7])
__device__ inline void wgmma_tf32_ss_n128(float* d, uint64_t desc_a, uint64_t desc_b)
{
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "%64, %65, 1, 1, 1;"
        : WGMMA_D8(0), WGMMA_D8(8), WGMMA_D8(16), WGMMA_D8(24), WGMMA_D8(32), WGMMA_D8(40), WGMMA_D8(48),
          WGMMA_D8(56)
        : "l"(desc_a), "l"(desc_b));
}
#undef WGMMA_D8

constexpr int T_STAGES = 3;  // stages of A, B as TMA wrote it, and B transposed: 64 KB each at BM = 256

template <int BM>
struct alignas(1024) TransposedStorage {
    float a[T_STAGES][BM * BK];   // A's tile, K-major, swizzled (TMA)
    float b[T_STAGES][BK * BN];   // B's tile as TMA wrote it: 4 boxes of 32 (k) x 32 (n), swizzled
    float bt[T_STAGES][BN * BK];  // B's tile transposed, rounded to TF32: BN rows of 32 k, swizzled
    uint64_t loaded[T_STAGES];    // TMA has written A's and B's tiles
    uint64_t full[T_STAGES];      // bt is written too: the consumers may start
    uint64_t empty[T_STAGES];     // every consumer warp of the cluster is done with the stage
};

// Element (row, kk) of a K-major swizzled tile of 32 floats a row.
__device__ inline int k_major_at(int row, int kk) { return row * 32 + (((kk / 4) ^ (row % 8)) * 4) + kk % 4; }

// Warpgroup 0: lane 0 of warp 0 loads by TMA; warps 1 to 3 transpose B's tile into K-major order,
// rounding to TF32, so that wgmma reads both operands from shared memory and the consumers'
// registers hold only accumulators. Warpgroups 1 and 2 consume: BM / 2 rows each, one
// m64n128k8 wgmma per 64 rows and 8 steps of k, with one k tile's products left running while
// the next one's are issued.
template <int BM, int CLUSTER, int GROUP_M>
__global__ void __launch_bounds__(THREADS, 1)
    transposed_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                      float* __restrict__ c, int m, int n, int k_tiles, int tiles_m, int tiles_n)
{
#if HOPPER_DEVICE_CODE
    extern __shared__ unsigned char smem_raw[];
    auto& smem =
        *reinterpret_cast<TransposedStorage<BM>*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) / 1024 * 1024);
    constexpr int STAGE_BYTES = (BM * BK + BK * BN) * sizeof(float);
    constexpr int A_PART = BM / CLUSTER;
    constexpr int HALVES = BM / 2 / 64;  // m64 wgmmas per consumer warpgroup
    const uint32_t rank = CLUSTER > 1 ? cluster_rank() : 0;
    const int cluster = blockIdx.x / CLUSTER, clusters = gridDim.x / CLUSTER;
    const int tiles = tiles_m * tiles_n;
    const int warpgroup = threadIdx.x / 128, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;

    if (threadIdx.x == 0) {
        for (int s = 0; s < T_STAGES; ++s) {
            mbarrier_init(&smem.loaded[s], 1);
            mbarrier_init(&smem.full[s], 3);                           // the 3 transposing warps
            mbarrier_init(&smem.empty[s], CONSUMERS * 4 * CLUSTER);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if constexpr (CLUSTER > 1) cluster_sync(); else __syncthreads();

    if (warpgroup == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (warp == 0) {
            if (lane == 0) {
                int it = 0;
                for (int tile = cluster; tile < tiles; tile += clusters) {
                    int tm, tn;
                    tile_at(tile, tiles_m, tiles_n, GROUP_M, tm, tn);
                    const int block_row = tm * BM, block_col = (tn * CLUSTER + static_cast<int>(rank)) * BN;
                    for (int t = 0; t < k_tiles; ++t, ++it) {
                        const int s = it % T_STAGES;
                        mbarrier_wait(&smem.empty[s], (it / T_STAGES + 1) % 2);
                        mbarrier_arrive_expect_tx(&smem.loaded[s], STAGE_BYTES);
                        if constexpr (CLUSTER > 1)
                            tma_load_multicast(smem.a[s] + rank * A_PART * BK, &a_map, t * BK,
                                               block_row + rank * A_PART, &smem.loaded[s], (1u << CLUSTER) - 1);
                        else
                            tma_load(smem.a[s], &a_map, t * BK, block_row, &smem.loaded[s]);
                        for (int q = 0; q < BN / 32; ++q)
                            tma_load(smem.b[s] + q * BK * 32, &b_map, block_col + q * 32, t * BK, &smem.loaded[s]);
                    }
                }
            }
        } else {
            const int id = threadIdx.x - 32;  // 0 to 95
            const int total = tiles > cluster ? ((tiles - 1 - cluster) / clusters + 1) * k_tiles : 0;
            for (int it = 0; it < total; ++it) {
                const int s = it % T_STAGES;
                mbarrier_wait(&smem.loaded[s], (it / T_STAGES) % 2);
                // 4 steps of k of one column of B a thread at a time: reads along a row of a box
                // (conflict-free), one 16-byte write into the column's row of bt.
                for (int u = id; u < BN * (BK / 4); u += 96) {
                    const int col = u % BN, kq = u / BN;
                    float4 v;
                    v.x = __uint_as_float(to_tf32(b_tile_at(smem.b[s], 4 * kq + 0, col)));
                    v.y = __uint_as_float(to_tf32(b_tile_at(smem.b[s], 4 * kq + 1, col)));
                    v.z = __uint_as_float(to_tf32(b_tile_at(smem.b[s], 4 * kq + 2, col)));
                    v.w = __uint_as_float(to_tf32(b_tile_at(smem.b[s], 4 * kq + 3, col)));
                    *reinterpret_cast<float4*>(&smem.bt[s][k_major_at(col, 4 * kq)]) = v;
                }
                // What these threads wrote, visible to wgmma (the async proxy), then hand it over.
                asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
                __syncwarp();
                if (lane == 0) mbarrier_arrive(&smem.full[s]);
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        const int consumer = warpgroup - 1;
        auto release = [&](int s) {
            if (lane == 0) {
                if constexpr (CLUSTER > 1) {
                    for (uint32_t r = 0; r < CLUSTER; ++r) mbarrier_arrive_in(&smem.empty[s], r);
                } else {
                    mbarrier_arrive(&smem.empty[s]);
                }
            }
        };
        float acc[HALVES][64];
        int it = 0;
        for (int tile = cluster; tile < tiles; tile += clusters) {
            int tm, tn;
            tile_at(tile, tiles_m, tiles_n, GROUP_M, tm, tn);
            const int block_row = tm * BM, block_col = (tn * CLUSTER + static_cast<int>(rank)) * BN;
#pragma unroll
            for (int h = 0; h < HALVES; ++h)
#pragma unroll
                for (int i = 0; i < 64; ++i) acc[h][i] = 0.0f;
            for (int t = 0; t < k_tiles; ++t, ++it) {
                const int s = it % T_STAGES;
                mbarrier_wait(&smem.full[s], (it / T_STAGES) % 2);
                const uint64_t desc_b = make_smem_desc(smem.bt[s]);
                wgmma_fence();
#pragma unroll
                for (int p = 0; p < BK / 8; ++p)
#pragma unroll
                    for (int h = 0; h < HALVES; ++h)
                        wgmma_tf32_ss_n128(acc[h], make_smem_desc(smem.a[s] + (consumer * (BM / 2) + h * 64) * BK) + 2 * p,
                                           desc_b + 2 * p);
                wgmma_commit();
                wgmma_wait<1>();  // the k tile before this one is done: free its stage
                if (t > 0) release((it - 1) % T_STAGES);
            }
            wgmma_wait<0>();
            release((it - 1) % T_STAGES);
#pragma unroll
            for (int h = 0; h < HALVES; ++h)
#pragma unroll
                for (int i = 0; i < 64; ++i) pin(acc[h][i]);

            // Fragment layout of m64nNk8: acc[h][4 * g + 2 * hh + e] is row warp * 16 + lane / 4 +
            // 8 * hh of the 64, column 8 * g + 2 * (lane % 4) + e: two neighbours a store.
#pragma unroll
            for (int h = 0; h < HALVES; ++h)
#pragma unroll
                for (int g = 0; g < BN / 8; ++g)
#pragma unroll
                    for (int hh = 0; hh < 2; ++hh) {
                        const int row = block_row + consumer * (BM / 2) + h * 64 + warp * 16 + lane / 4 + 8 * hh;
                        const int col = block_col + 8 * g + 2 * (lane % 4);
                        if (row >= m) continue;
                        float* out = c + static_cast<long long>(row) * n + col;
                        if (col + 1 < n) {
                            *reinterpret_cast<float2*>(out) = make_float2(acc[h][4 * g + 2 * hh], acc[h][4 * g + 2 * hh + 1]);
                        } else if (col < n) {
                            out[0] = acc[h][4 * g + 2 * hh];
                        }
                    }
        }
    }
    if constexpr (CLUSTER > 1) cluster_sync();
#endif
}

template <int BM, int CLUSTER, int GROUP_M>
void launch_transposed(const float* a, const float* b, float* c, int m, int k, int n)
{
    launch_clustered<BM, CLUSTER>(reinterpret_cast<const void*>(transposed_kernel<BM, CLUSTER, GROUP_M>),
                                  sizeof(TransposedStorage<BM>) + 1024, a, b, c, m, k, n);
}

// ---- The versions and the run. -------------------------------------------------------------


template <int BM, int CLUSTER, int GROUP_M, bool OVERLAP>
Version persistent(const char* name)
{
    return {name, launch_persistent<BM, CLUSTER, GROUP_M, OVERLAP>,
            reinterpret_cast<const void*>(persistent_kernel<BM, CLUSTER, GROUP_M, OVERLAP>)};
}

template <int BM, int CLUSTER, int GROUP_M>
Version transposed(const char* name)
{
    return {name, launch_transposed<BM, CLUSTER, GROUP_M>, reinterpret_cast<const void*>(transposed_kernel<BM, CLUSTER, GROUP_M>)};
}

// Versions 8 to 12 leave the transposition to 3 warps with one warp each to a scheduler: each
// step waits on the one before it, and the tensor cores wait on them. Here the consumers
// transpose instead, the next k tile's B while the tensor cores work on this one's products: no
// wgmma reads a register the threads write, so nothing is serialised, and 256 threads take 4
// columns' worth each, unrolled.
template <int BM, int CLUSTER, int GROUP_M>
__global__ void __launch_bounds__(THREADS, 1)
    overlapped_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                      float* __restrict__ c, int m, int n, int k_tiles, int tiles_m, int tiles_n)
{
#if HOPPER_DEVICE_CODE
    extern __shared__ unsigned char smem_raw[];
    auto& smem =
        *reinterpret_cast<TransposedStorage<BM>*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) / 1024 * 1024);
    constexpr int STAGE_BYTES = (BM * BK + BK * BN) * sizeof(float);
    constexpr int A_PART = BM / CLUSTER;
    constexpr int HALVES = BM / 2 / 64;
    const uint32_t rank = CLUSTER > 1 ? cluster_rank() : 0;
    const int cluster = blockIdx.x / CLUSTER, clusters = gridDim.x / CLUSTER;
    const int tiles = tiles_m * tiles_n;
    const int warpgroup = threadIdx.x / 128, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;

    if (threadIdx.x == 0) {
        for (int s = 0; s < T_STAGES; ++s) {
            mbarrier_init(&smem.loaded[s], 1);
            mbarrier_init(&smem.empty[s], CONSUMERS * 4 * CLUSTER);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if constexpr (CLUSTER > 1) cluster_sync(); else __syncthreads();

    if (warpgroup == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0) {
            int it = 0;
            for (int tile = cluster; tile < tiles; tile += clusters) {
                int tm, tn;
                tile_at(tile, tiles_m, tiles_n, GROUP_M, tm, tn);
                const int block_row = tm * BM, block_col = (tn * CLUSTER + static_cast<int>(rank)) * BN;
                for (int t = 0; t < k_tiles; ++t, ++it) {
                    const int s = it % T_STAGES;
                    mbarrier_wait(&smem.empty[s], (it / T_STAGES + 1) % 2);
                    mbarrier_arrive_expect_tx(&smem.loaded[s], STAGE_BYTES);
                    if constexpr (CLUSTER > 1)
                        tma_load_multicast(smem.a[s] + rank * A_PART * BK, &a_map, t * BK, block_row + rank * A_PART,
                                           &smem.loaded[s], (1u << CLUSTER) - 1);
                    else
                        tma_load(smem.a[s], &a_map, t * BK, block_row, &smem.loaded[s]);
                    for (int q = 0; q < BN / 32; ++q)
                        tma_load(smem.b[s] + q * BK * 32, &b_map, block_col + q * 32, t * BK, &smem.loaded[s]);
                }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        const int consumer = warpgroup - 1;
        const int id = threadIdx.x - 128;  // 0 to 255
        auto release = [&](int s) {
            if (lane == 0) {
                if constexpr (CLUSTER > 1) {
                    for (uint32_t r = 0; r < CLUSTER; ++r) mbarrier_arrive_in(&smem.empty[s], r);
                } else {
                    mbarrier_arrive(&smem.empty[s]);
                }
            }
        };
        // Wait for stage s's tiles, transpose B's into bt rounding to TF32, and make the writes
        // visible to wgmma. Each of the 256 threads takes 4 (column, 4 steps of k) pieces.
        auto transpose = [&](int it) {
            const int s = it % T_STAGES;
            mbarrier_wait(&smem.loaded[s], (it / T_STAGES) % 2);
            float4 v[BN * (BK / 4) / 256];
#pragma unroll
            for (int i = 0; i < BN * (BK / 4) / 256; ++i) {
                const int u = id + 256 * i, col = u % BN, kq = u / BN;
                v[i].x = __uint_as_float(to_tf32(b_tile_at(smem.b[s], 4 * kq + 0, col)));
                v[i].y = __uint_as_float(to_tf32(b_tile_at(smem.b[s], 4 * kq + 1, col)));
                v[i].z = __uint_as_float(to_tf32(b_tile_at(smem.b[s], 4 * kq + 2, col)));
                v[i].w = __uint_as_float(to_tf32(b_tile_at(smem.b[s], 4 * kq + 3, col)));
            }
#pragma unroll
            for (int i = 0; i < BN * (BK / 4) / 256; ++i) {
                const int u = id + 256 * i, col = u % BN, kq = u / BN;
                *reinterpret_cast<float4*>(&smem.bt[s][k_major_at(col, 4 * kq)]) = v[i];
            }
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        };
        auto consumers_sync = [] { asm volatile("bar.sync 1, 256;" ::: "memory"); };

        const int my_tiles = tiles > cluster ? (tiles - 1 - cluster) / clusters + 1 : 0;
        const int total = my_tiles * k_tiles;
        if (total > 0) {
            transpose(0);
            consumers_sync();
        }
        int it = 0;  // k tiles consumed so far, over all tiles
        for (int tile = cluster; tile < tiles; tile += clusters) {
            int tm, tn;
            tile_at(tile, tiles_m, tiles_n, GROUP_M, tm, tn);
            const int block_row = tm * BM, block_col = (tn * CLUSTER + static_cast<int>(rank)) * BN;
            float acc[HALVES][64];
#pragma unroll
            for (int h = 0; h < HALVES; ++h)
#pragma unroll
                for (int i = 0; i < 64; ++i) acc[h][i] = 0.0f;
            for (int t = 0; t < k_tiles; ++t, ++it) {
                const int s = it % T_STAGES;
                const uint64_t desc_b = make_smem_desc(smem.bt[s]);
                wgmma_fence();
#pragma unroll
                for (int p = 0; p < BK / 8; ++p)
#pragma unroll
                    for (int h = 0; h < HALVES; ++h)
                        wgmma_tf32_ss_n128(acc[h],
                                           make_smem_desc(smem.a[s] + (consumer * (BM / 2) + h * 64) * BK) + 2 * p,
                                           desc_b + 2 * p);
                wgmma_commit();
                if (it + 1 < total) transpose(it + 1);  // the next k tile, maybe the next tile's, meanwhile
                wgmma_wait<1>();
                if (t > 0) release((it - 1) % T_STAGES);
                consumers_sync();  // every consumer's part of the next bt is written
            }
            wgmma_wait<0>();
            release((it - 1) % T_STAGES);
#pragma unroll
            for (int h = 0; h < HALVES; ++h)
#pragma unroll
                for (int i = 0; i < 64; ++i) pin(acc[h][i]);
#pragma unroll
            for (int h = 0; h < HALVES; ++h)
#pragma unroll
                for (int g = 0; g < BN / 8; ++g)
#pragma unroll
                    for (int hh = 0; hh < 2; ++hh) {
                        const int row = block_row + consumer * (BM / 2) + h * 64 + warp * 16 + lane / 4 + 8 * hh;
                        const int col = block_col + 8 * g + 2 * (lane % 4);
                        if (row >= m) continue;
                        float* out = c + static_cast<long long>(row) * n + col;
                        if (col + 1 < n)
                            *reinterpret_cast<float2*>(out) = make_float2(acc[h][4 * g + 2 * hh], acc[h][4 * g + 2 * hh + 1]);
                        else if (col < n)
                            out[0] = acc[h][4 * g + 2 * hh];
                    }
        }
    }
    if constexpr (CLUSTER > 1) cluster_sync();
#endif
}

template <int BM, int CLUSTER, int GROUP_M>
void launch_overlapped(const float* a, const float* b, float* c, int m, int k, int n)
{
    launch_clustered<BM, CLUSTER>(reinterpret_cast<const void*>(overlapped_kernel<BM, CLUSTER, GROUP_M>),
                                  sizeof(TransposedStorage<BM>) + 1024, a, b, c, m, k, n);
}

template <int BM, int CLUSTER, int GROUP_M>
Version overlapped(const char* name)
{
    return {name, launch_overlapped<BM, CLUSTER, GROUP_M>, reinterpret_cast<const void*>(overlapped_kernel<BM, CLUSTER, GROUP_M>)};
}

const std::vector<Version>& versions()
{
    static const std::vector<Version> all = {
        {"step 4's solution", ::launch_matmul_wgmma, nullptr},
        persistent<256, 1, 0, false>("1 persistent, step 4's loop, rows of tiles"),
        persistent<256, 1, 8, false>("2 1 in groups of 8 tile rows"),
        persistent<256, 1, 8, true>("3 2 with the left operand double-buffered"),
        persistent<256, 2, 8, false>("4 2 in clusters of 2 sharing A (multicast)"),
        persistent<256, 2, 8, true>("5 3 and 4 together"),
        persistent<256, 2, 0, true>("6 5 in rows of tiles"),
        persistent<256, 2, 16, true>("7 5 in groups of 16 tile rows"),
        transposed<256, 1, 0>("8 1 with B transposed in shared memory, both from there"),
        transposed<256, 1, 8>("9 8 in groups of 8 tile rows"),
        transposed<256, 2, 8>("10 9 in clusters of 2 sharing A"),
        transposed<128, 1, 8>("11 9 with 128 x 128 tiles"),
        transposed<128, 2, 8>("12 10 with 128 x 128 tiles"),
        overlapped<256, 1, 8>("13 9 with the consumers transposing, overlapped"),
        overlapped<256, 2, 8>("14 13 in clusters of 2 sharing A"),
        overlapped<128, 1, 8>("15 13 with 128 x 128 tiles"),
        overlapped<256, 1, 0>("16 13 in rows of tiles"),
    };
    return all;
}

// One shape: the reference, then each chosen version checked and timed beside cuBLAS TF32.
void run_shape(int m, int k, int n, const std::vector<int>& chosen)
{
    using namespace workbook;
    const std::string tag = std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
    const std::vector<float> a = random_floats(static_cast<std::size_t>(m) * k, seed_for("dev a " + tag));
    const std::vector<float> b = random_floats(static_cast<std::size_t>(k) * n, seed_for("dev b " + tag));
    DeviceBuffer<float> da(a), db(b), dc(static_cast<std::size_t>(m) * n);
    const Reference expected = gemm_reference(a, b, m, k, n);
    // Step 4 and these versions cut A to TF32 (wgmma reads it from shared memory as it is).
    const Tolerance tolerance = gemm_tolerance(k, GemmInputs::tf32_truncated);
    std::printf("\n%d x %d x %d: tolerance %.3g (%s)\n", m, k, n, tolerance.abs, tolerance.why.c_str());
    print_heading(50);
    for (int v : chosen) check_and_time(v, versions().at(v), 50, da.data(), db.data(), dc, m, k, n, expected, tolerance);
}

}  // namespace dev

int main(int argc, char** argv)
{
    using namespace dev;
    std::vector<int> chosen, sizes = {1024, 2048, 4096};
    if (!parse_arguments(argc, argv, versions(), chosen, sizes)) return 2;
    try {
        int device = 0, major = 0, minor = 0;
        CUDA_CHECK(cudaGetDevice(&device));
        CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
        CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
        if (major != 9 || minor != 0) {
            std::printf("SKIPPED: wgmma and TMA multicast need sm_90 (this GPU is sm_%d%d)\n", major, minor);
            return 77;
        }
        // An awkward shape first: tiles that stick out of C on both sides, and an odd number of
        // cluster tiles along n.
        run_shape(1000, 996, 868, chosen);
        for (int size : sizes) run_shape(size, size, size, chosen);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "dev_wgmma: %s\n", e.what());
        return 1;
    }
    return 0;
}
