// Lab 05, going further, step 5: a persistent, clustered wgmma kernel. Your code goes here (bonus points).
//
// C = A·B with A m x k, B k x n and C m x n, all float and row-major.
// Step 4 (wgmma.cu) launched one block a tile, and each consumer warpgroup waited for all its
// products at the end of every k tile. This step keeps step 4's parts (TMA, wgmma with B^T from
// registers, the full/empty mbarrier pipeline, TF32) and changes how they are driven:
//   1. A persistent kernel with a tile scheduler. One block an SM, launched once; each block takes
//      tile after tile from a fixed order. The stages and their phases run on across tiles, so the
//      producer loads the next tile's first stages while the consumers store the last one.
//   2. Thread-block clusters and TMA multicast. Two blocks side by side along n form a cluster and
//      need the same tile of A. Each fetches half of it with one TMA multicast that lands in both
//      blocks' shared memory: A's traffic from L2 halves. A stage is then free only when the
//      consumers of both blocks are done with it, so every consumer warp arrives on the empty
//      barrier of both blocks.
//   3. The register operand pipelined as CUTLASS does it. One commit group a step of 8 of k (not
//      one a k tile); the next step's values of B go into their own registers before this step's
//      wgmma is issued; two groups stay in flight (wgmma.wait_group 2) instead of none. A step's
//      registers are written again four steps later, when its group is surely done.
//   4. B as it is. The tensor core keeps the top 19 bits of each value, of B as of A (truncation,
//      as cuBLAS's TF32 kernel leaves it), so nothing stands between B's load and the wgmma.
//      Rounding to nearest would cost an instruction a value for a precision the tolerance does
//      not ask for. Fewer instructions a product is less energy, and at the power limit energy
//      is speed.
//
// Precision. A and B truncated by the tensor core (relative error below 2^-10 each), products
// and sums in FP32: step 4's tolerance, which already assumes truncated inputs.
// Read persistent.md first (going further, step 5). Check your work with:
//   make check LAB=05
// Run your own tests with a time limit (timeout 60 ...): a barrier that is never released hangs.
#include "common/check.hpp"
#include "common/tma.hpp"  // workbook::tensor_map_swizzled: TMA's map of a matrix, 32-float boxes, 128-byte swizzle

#include <cuda.h>  // CUtensorMap and its enums only: the encode function comes from the driver at run time
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

// wgmma, TMA, clusters and setmaxnreg as used here exist on sm_90a only. This file is built with
// -arch=sm_90a; the guard keeps the host pass (and any other architecture) compiling, empty kernels.
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define HOPPER_DEVICE_CODE 1
#else
#define HOPPER_DEVICE_CODE 0
#endif

constexpr int BN = 128;                         // columns of C per block: 64 per consumer warpgroup
constexpr int BK = 32;                          // steps of k per stage: 32 floats, one 128-byte swizzle row
constexpr int STAGES = 4;                       // tiles of A and B in flight
constexpr int CONSUMERS = 2;                    // consumer warpgroups
constexpr int THREADS = 128 * (1 + CONSUMERS);  // warpgroup 0 produces, 1 and 2 consume
constexpr int CLUSTER = 2;                      // blocks a cluster, side by side along n

template <int BM>
struct alignas(1024) SharedStorage {
    float a[STAGES][BM * BK];  // A's tile: BM rows of 32 floats, swizzled; half of it from each block
    float b[STAGES][BK * BN];  // B's tile: 4 boxes of 32 rows (k) x 32 columns (n), swizzled
    uint64_t full[STAGES];     // stage s holds a tile: TMA has written all its bytes (both halves of A)
    uint64_t empty[STAGES];    // stage s is free: every consumer warp of the cluster is done with it
};

// ---- Plumbing: thin wrappers around single PTX instructions (step 4's, and the cluster's). ----

//! [plumbing]
__device__ inline uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

__device__ inline void mbarrier_init(uint64_t* bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
}
__device__ inline void mbarrier_arrive_expect_tx(uint64_t* bar, int bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}
__device__ inline void mbarrier_wait(uint64_t* bar, int parity)
{
    uint32_t done = 0;
    do {
        asm volatile(
            "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
            : "=r"(done)
            : "r"(smem_addr(bar)), "r"(parity)
            : "memory");
    } while (!done);
}

// This block's rank in its cluster (0 or 1).
__device__ inline uint32_t cluster_rank()
{
    uint32_t rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return rank;
}

// Every thread of both blocks of the cluster arrives, then waits for all the others.
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

// TMA: the box at element (x, y) of the matrix `map` describes lands at dst, its bytes counted on bar.
__device__ inline void tma_load(void* dst, const CUtensorMap* map, int x, int y, uint64_t* bar)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_addr(dst)),
        "l"(map), "r"(x), "r"(y), "r"(smem_addr(bar))
        : "memory");
}

// TMA multicast: the box lands at dst's offset in every block of `mask` (bit r: rank r), and its
// bytes count on the mbarrier at bar's offset in each of them.
__device__ inline void tma_load_multicast(void* dst, const CUtensorMap* map, int x, int y, uint64_t* bar,
                                          uint16_t mask)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(smem_addr(dst)),
        "l"(map), "r"(x), "r"(y), "r"(smem_addr(bar)), "h"(mask)
        : "memory");
}

// A wgmma shared-memory descriptor for a K-major tile in the 128-byte swizzled layout (step 4).
__device__ inline uint64_t make_smem_desc(const float* tile)
{
    return (static_cast<uint64_t>(smem_addr(tile)) & 0x3FFFF) >> 4 | static_cast<uint64_t>(1) << 16 |
           static_cast<uint64_t>(1024 >> 4) << 32 | static_cast<uint64_t>(1) << 62;
}

// Element (row kk, column j) of one stage's tile of B (step 4).
__device__ inline float b_tile_at(const float* tile, int kk, int j)
{
    return tile[j / 32 * (BK * 32) + kk * 32 + (((j % 32) / 4) ^ (kk % 8)) * 4 + j % 4];
}

__device__ inline void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ inline void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
// Wait until at most N committed groups of this warpgroup's wgmmas are still running.
template <int N>
__device__ inline void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
__device__ inline void pin(float& v) { asm volatile("" : "+f"(v)::"memory"); }

// d (64 x N) += left (64 x 8, in registers) times the 8 x N operand `desc` describes (step 4).
#define WGMMA_D8(i)                                                                                            \
    "+f"(d[i + 0]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
        "+f"(d[i + 7])
template <int N>
__device__ inline void wgmma_tf32(float* d, const uint32_t (&left)[4], uint64_t desc)
{
    static_assert(N == 128 || N == 256, "the shapes this file uses");
    if constexpr (N == 128) {
        asm volatile(
            "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
            "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
            "{%64, %65, %66, %67}, %68, 1, 1, 1;"
            : WGMMA_D8(0), WGMMA_D8(8), WGMMA_D8(16), WGMMA_D8(24), WGMMA_D8(32), WGMMA_D8(40), WGMMA_D8(48),
              WGMMA_D8(56)
            : "r"(left[0]), "r"(left[1]), "r"(left[2]), "r"(left[3]), "l"(desc));
    } else {
        asm volatile(
            "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
            "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
            "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
            "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
            "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
            "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
            "{%128, %129, %130, %131}, %132, 1, 1, 1;"
            : WGMMA_D8(0), WGMMA_D8(8), WGMMA_D8(16), WGMMA_D8(24), WGMMA_D8(32), WGMMA_D8(40), WGMMA_D8(48),
              WGMMA_D8(56), WGMMA_D8(64), WGMMA_D8(72), WGMMA_D8(80), WGMMA_D8(88), WGMMA_D8(96), WGMMA_D8(104),
              WGMMA_D8(112), WGMMA_D8(120)
            : "r"(left[0]), "r"(left[1]), "r"(left[2]), "r"(left[3]), "l"(desc));
    }
}
#undef WGMMA_D8
//! [plumbing]

//! [scheduler]
// The tile scheduler: cluster `cluster` of `clusters` takes the cluster tiles cluster,
// cluster + clusters, ... (a cluster tile is BM rows x CLUSTER * BN columns of C), row after row.
// Producer and consumers walk the same list, so they agree on every stage without talking.
struct TileOrder {
    int first, step, tiles, tiles_n;
    // TODO 1: the tile's row of cluster tiles and its column, row after row: tile / tiles_n and
    //         tile % tiles_n.
    __device__ int row(int tile) const { return 0 * tile; }
    __device__ int column(int tile) const { return 0 * tile; }
};
//! [scheduler]

//! [kernel]
template <int BM>
__global__ void __launch_bounds__(THREADS, 1)
    matmul_persistent_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                             float* __restrict__ c, int m, int n, int k_tiles, int tiles_m, int tiles_n)
{
#if HOPPER_DEVICE_CODE
    extern __shared__ unsigned char smem_raw[];
    // Pointer arithmetic on the array itself, never on its address as an integer: the compiler then
    // still knows that smem is in shared memory, and reads it with LDS instead of generic loads.
    auto& smem = *reinterpret_cast<SharedStorage<BM>*>(smem_raw + (1024 - smem_addr(smem_raw) % 1024) % 1024);
    constexpr int STAGE_BYTES = (BM * BK + BK * BN) * sizeof(float);  // all of A's tile lands, half from the peer
    constexpr int A_PART = BM / CLUSTER;                               // rows of A's tile this block fetches
    const uint32_t rank = cluster_rank();
    // TODO 2: this cluster's place in the order and the step between its tiles: a cluster, not a
    //         block, takes a tile, so blockIdx.x / CLUSTER and gridDim.x / CLUSTER.
    const TileOrder order{static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x), tiles_m * tiles_n, tiles_n};
    const int warpgroup = threadIdx.x / 128;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(&smem.full[s], 1);                           // this block's producer
            mbarrier_init(&smem.empty[s], CONSUMERS * 4 * CLUSTER);    // every consumer warp of the cluster
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    // Neither block may multicast into the other, or arrive on its barriers, before they exist.
    cluster_sync();

    if (warpgroup == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0) {
            int it = 0;  // k tiles produced so far, over all tiles: stage it % STAGES, phase it / STAGES
            for (int tile = order.first; tile < order.tiles; tile += order.step) {
                const int block_row = order.row(tile) * BM;
                const int block_col = (order.column(tile) * CLUSTER + static_cast<int>(rank)) * BN;
                for (int t = 0; t < k_tiles; ++t, ++it) {
                    const int s = it % STAGES;
                    // TODO 3: fill stage s with k tile t, as step 4 does, but A by halves:
                    //   - wait until the consumers of both blocks have released it:
                    //     mbarrier_wait(&smem.empty[s], (it / STAGES + 1) % 2) (it, not t: the phases
                    //     run on across tiles);
                    //   - mbarrier_arrive_expect_tx(&smem.full[s], STAGE_BYTES): all of A's tile
                    //     lands here, half of it sent by the other block;
                    //   - this block's half of A's tile, its rows rank * A_PART to + A_PART - 1, into
                    //     both blocks: tma_load_multicast(smem.a[s] + rank * A_PART * BK, &a_map,
                    //     t * BK, block_row + rank * A_PART, &smem.full[s], mask), the mask naming both
                    //     ranks, (1u << CLUSTER) - 1 (one that leaves the peer out hangs both blocks:
                    //     their full[s] waits for bytes that never come);
                    //   - B's four boxes, for q < BN / 32: tma_load(smem.b[s] + q * BK * 32, &b_map,
                    //     block_col + q * 32, t * BK, &smem.full[s]).
                    (void)s, (void)A_PART, (void)block_row, (void)block_col, (void)STAGE_BYTES;
                }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        const int consumer = warpgroup - 1;
        const int warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
        const int j = consumer * 64 + warp * 16 + lane / 4;  // the lane's first column of the tile (step 4)
        const int kk = lane % 4;                             // and its first step of k

        // This warp is done with stage s: free it in both blocks, which both fill it.
        auto release = [&](int s) {
            // TODO 4: arrive on empty[s] in every block of the cluster, its own included, once a
            //         warp: lane r < CLUSTER calls mbarrier_arrive_in(&smem.empty[s], r).
            (void)s;
        };
        uint32_t left[BK / 8][4];  // one set of registers for each step of 8 in a k tile
        auto load = [&](int s, int p) {
            left[p][0] = __float_as_uint(b_tile_at(smem.b[s], p * 8 + kk, j));
            left[p][1] = __float_as_uint(b_tile_at(smem.b[s], p * 8 + kk, j + 8));
            left[p][2] = __float_as_uint(b_tile_at(smem.b[s], p * 8 + kk + 4, j));
            left[p][3] = __float_as_uint(b_tile_at(smem.b[s], p * 8 + kk + 4, j + 8));
        };

        float acc[BM / 2];
        int it = 0;  // k tiles consumed so far, over all tiles
        for (int tile = order.first; tile < order.tiles; tile += order.step) {
            const int block_row = order.row(tile) * BM;
            const int block_col = (order.column(tile) * CLUSTER + static_cast<int>(rank)) * BN;
#pragma unroll
            for (int i = 0; i < BM / 2; ++i) acc[i] = 0.0f;

            // TODO 5a: wait until the tile's first stage has landed, mbarrier_wait(&smem.full[it %
            //          STAGES], (it / STAGES) % 2), before its first step's values are read.
            load(it % STAGES, 0);
            for (int t = 0; t < k_tiles; ++t, ++it) {
                const int s = it % STAGES;
                const uint64_t desc = make_smem_desc(smem.a[s]);
#pragma unroll
                for (int p = 0; p < BK / 8; ++p) {
                    // TODO 5: step p of this k tile (left[p] is loaded already):
                    //   - first the next step's values, into their own registers: load(s, p + 1) while
                    //     p + 1 < BK / 8; at the last step, if t + 1 < k_tiles, wait for the next
                    //     stage, mbarrier_wait(&smem.full[(it + 1) % STAGES], ((it + 1) / STAGES) % 2),
                    //     and load((it + 1) % STAGES, 0);
                    //   - then the product: wgmma_fence(), wgmma_tf32<BM>(acc, left[p], desc + 2 * p),
                    //     wgmma_commit(), and wgmma_wait<2>() (two groups may still run);
                    //   - at p == 1 and t > 0, release((it - 1) % STAGES): the previous stage's last
                    //     group is done.
                    (void)desc;
                }
            }
            wgmma_wait<0>();
            release((it - 1) % STAGES);
#pragma unroll
            for (int i = 0; i < BM / 2; ++i) pin(acc[i]);

            // The store, as in step 4; meanwhile the producer fills the stages for the next tile.
            // acc[4g + 2h + e] is C[block_row + 8g + 2 (lane % 4) + e][block_col + j + 8h].
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
    // No block may leave while its peer may still multicast into it or arrive on its barriers.
    cluster_sync();
#endif
}
//! [kernel]

//! [pad]
// Copies a rows x cols matrix into one of rows x padded_cols, zeros on the right (step 4's).
__global__ void pad_columns_kernel(const float* __restrict__ src, float* __restrict__ dst, int rows, int cols,
                                   int padded_cols)
{
    const long long total = static_cast<long long>(rows) * padded_cols;
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long row = i / padded_cols;
        const int col = static_cast<int>(i % padded_cols);
        dst[i] = col < cols ? src[row * cols + col] : 0.0f;
    }
}
//! [pad]

//! [launch]
// a: m x a_cols, b: k x b_cols (a_cols and b_cols multiples of 4, zero beyond k and n). As many
// clusters as fit on the GPU at once (asked once per kernel), or as there are cluster tiles.
template <int BM>
void launch_persistent(const float* a, int a_cols, const float* b, int b_cols, float* c, int m, int k, int n)
{
    const CUtensorMap a_map = workbook::tensor_map_swizzled(a, m, a_cols, BM / CLUSTER);  // each block's half
    const CUtensorMap b_map = workbook::tensor_map_swizzled(b, k, b_cols, BK);
    const int smem_bytes = sizeof(SharedStorage<BM>) + 1024;  // + room to align it to 1024 bytes
    const void* kernel = reinterpret_cast<const void*>(matmul_persistent_kernel<BM>);
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));

    int tiles_m = (m + BM - 1) / BM, tiles_n = (n + CLUSTER * BN - 1) / (CLUSTER * BN);
    int k_tiles = (a_cols + BK - 1) / BK;
    cudaLaunchAttribute cluster{};
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = CLUSTER;
    cluster.val.clusterDim.y = 1;
    cluster.val.clusterDim.z = 1;
    cudaLaunchConfig_t config{};
    config.blockDim = dim3(THREADS);
    config.dynamicSmemBytes = smem_bytes;
    config.attrs = &cluster;
    config.numAttrs = 1;
    static int fit = 0;  // clusters that fit on the GPU at once
    if (fit == 0) {
        config.gridDim = dim3(CLUSTER);
        CUDA_CHECK(cudaOccupancyMaxActiveClusters(&fit, kernel, &config));
        if (fit < 1) throw std::runtime_error("launch_matmul_persistent: not one cluster of 2 blocks fits on this GPU");
    }
    config.gridDim = dim3(std::min(fit, tiles_m * tiles_n) * CLUSTER);
    void* arguments[] = {const_cast<CUtensorMap*>(&a_map), const_cast<CUtensorMap*>(&b_map), &c, &m, &n, &k_tiles,
                         &tiles_m, &tiles_n};
    CUDA_CHECK(cudaLaunchKernelExC(&config, kernel, arguments));
}

void launch_matmul_persistent(const float* a, const float* b, float* c, int m, int k, int n)
{
    // TMA needs 16-byte aligned matrices whose rows are whole multiples of 16 bytes: otherwise
    // copy A or B into a zero-padded workspace first (step 4's way).
    auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    const int a_cols = (k + 3) / 4 * 4, b_cols = (n + 3) / 4 * 4;
    float* a_padded = nullptr;
    float* b_padded = nullptr;
    if (a_cols != k || !aligned(a)) {
        CUDA_CHECK(cudaMallocAsync(&a_padded, sizeof(float) * m * a_cols, 0));
        pad_columns_kernel<<<1024, 256>>>(a, a_padded, m, k, a_cols);
        CUDA_CHECK(cudaGetLastError());
        a = a_padded;
    }
    if (b_cols != n || !aligned(b)) {
        CUDA_CHECK(cudaMallocAsync(&b_padded, sizeof(float) * k * b_cols, 0));
        pad_columns_kernel<<<1024, 256>>>(b, b_padded, k, n, b_cols);
        CUDA_CHECK(cudaGetLastError());
        b = b_padded;
    }

    // 256-row tiles when they give at least 3 SMs in 4 a block, 128-row tiles otherwise.
    int device = 0, sms = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const long long tiles_256 = static_cast<long long>((m + 255) / 256) * ((n + BN - 1) / BN);
    if (4 * tiles_256 >= 3 * sms)
        launch_persistent<256>(a, a_cols, b, b_cols, c, m, k, n);
    else
        launch_persistent<128>(a, a_cols, b, b_cols, c, m, k, n);

    if (a_padded) CUDA_CHECK(cudaFreeAsync(a_padded, 0));
    if (b_padded) CUDA_CHECK(cudaFreeAsync(b_padded, 0));
}
//! [launch]
