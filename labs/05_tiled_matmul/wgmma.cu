// Lab 05, going further, step 4: Hopper's wgmma and TMA. Your code goes here (bonus points).
//
// C = A·B with A m x k, B k x n and C m x n, all float and row-major.
// Step 3 (tensor_cores.cu) put the products on the tensor cores with mma.sync: a warp at a time,
// every operand brought to the warp's registers by its own threads. This step uses the parts of
// an H100 (sm_90a) that were built to keep its tensor cores busy, and leaves the threads little
// to do but wait:
//   1. wgmma.mma_async. The four warps of a warpgroup (128 threads) issue one 64 x 256 x 8 product
//      together, one operand from registers, the other straight from shared memory. It runs
//      asynchronously: the warps go on, and wait for it only when they need its result.
//   2. TMA, the Tensor Memory Accelerator. One thread asks for a whole tile with one instruction;
//      the copy engine computes the addresses, fills zeros where the tile sticks out of the matrix,
//      stores the tile in shared memory in the 128-byte swizzled layout that wgmma reads without
//      bank conflicts, and reports the bytes it wrote on an mbarrier.
//   3. Warp specialization and an mbarrier pipeline. A producer thread keeps STAGES tiles in flight
//      while two consumer warpgroups multiply; per stage a "full" barrier (the tile has landed) and
//      an "empty" one (the consumers are done with it) hand each buffer back and forth. No
//      __syncthreads() in the loop, and no thread loads from global memory itself.
//   4. TF32. The tensor core multiplies floats cut to 19 bits (8-bit exponent, 10-bit mantissa) and
//      adds in FP32: 8 times the FP32 rate of the CUDA cores on an H100 (dense, at the same clock).
//
// One twist. For TF32, wgmma wants both operands "K-major" (k contiguous in memory); only 16-bit
// types may come transposed. A (m x k, row-major) is K-major; B (k x n, row-major) is not. So the
// kernel computes C^T = B^T · A^T: B^T is wgmma's left operand, which may come from registers,
// and the threads that read it out of the TMA-filled tile of B put it in the register layout wgmma
// wants; A^T is the right operand, read from shared memory, K-major exactly as A lies in memory.
//
// Precision. B's elements pass through registers, where cvt.rna rounds them to TF32 (relative error
// at most 2^-11). A's elements go from shared memory to the tensor core as they are, and it reads
// only their top 19 bits: truncation (relative error below 2^-10). The products and sums are FP32.
// Read wgmma.md first (going further, step 4). Check your work with:
//   make check LAB=05
// Run your own tests with a time limit (timeout 60 ...): a barrier that is never released hangs.
#include "common/check.hpp"
#include "common/tma.hpp"  // workbook::tensor_map_swizzled: TMA's map of a matrix, 32-float boxes, 128-byte swizzle

#include <cuda.h>  // CUtensorMap and its enums only: the encode function comes from the driver at run time
#include <cuda_runtime.h>

#include <cstdint>

// wgmma, TMA and setmaxnreg exist on sm_90a only. This file is built with -arch=sm_90a; the guard
// keeps the host pass (and any other architecture) compiling, with empty kernels.
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define HOPPER_DEVICE_CODE 1
#else
#define HOPPER_DEVICE_CODE 0
#endif

constexpr int BN = 128;                     // columns of C per block: 64 per consumer warpgroup
constexpr int BK = 32;                      // steps of k per stage: 32 floats, one 128-byte swizzle row
constexpr int STAGES = 4;                   // tiles of A and B in flight
constexpr int CONSUMERS = 2;                // consumer warpgroups
constexpr int THREADS = 128 * (1 + CONSUMERS);  // warpgroup 0 produces, 1 and 2 consume

//! [shared]
// What a block keeps in shared memory, for blocks of BM rows x BN columns of C. A swizzled tile
// must start on a 1024-byte boundary (the 128-byte swizzle repeats every 8 rows of 128 bytes);
// every tile here is a multiple of 1024 bytes, so aligning the struct aligns them all.
template <int BM>
struct alignas(1024) SharedStorage {
    float a[STAGES][BM * BK];           // A's tile: BM rows of 32 floats (128 bytes), swizzled
    float b[STAGES][BK * BN];           // B's tile: 4 boxes of 32 rows (k) x 32 columns (n), swizzled
    uint64_t full[STAGES];              // stage s holds a tile: TMA has written all its bytes
    uint64_t empty[STAGES];             // stage s is free: every consumer warp is done with it
};
//! [shared]

// ---- Plumbing: thin wrappers around single PTX instructions. ---------------------------------

//! [plumbing]
// The address of a shared-memory object as the PTX instructions want it: 32 bits, shared window.
__device__ inline uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// An mbarrier counts arrivals (and, for TMA, bytes). A phase completes when `count` threads have
// arrived and every byte announced with expect_tx has landed; then it starts over with the other
// parity. Waiting names the parity of the phase to wait for.
__device__ inline void mbarrier_init(uint64_t* bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
}
__device__ inline void mbarrier_arrive(uint64_t* bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}
// Arrive, and announce `bytes` more bytes that TMA will deliver in this phase.
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

// TMA: copy the box at element (x, y) of the matrix `map` describes (x the column, innermost) into
// shared memory at dst, and count its bytes on bar. Parts of the box outside the matrix read as 0.
__device__ inline void tma_load(void* dst, const CUtensorMap* map, int x, int y, uint64_t* bar)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_addr(dst)),
        "l"(map), "r"(x), "r"(y), "r"(smem_addr(bar))
        : "memory");
}

// A wgmma shared-memory descriptor for a K-major tile in the 128-byte swizzled layout TMA writes:
// rows of 128 bytes (32 floats of k), in groups of 8 rows (1024 bytes, one swizzle pattern) that lie
// 1024 bytes apart (the stride byte offset). The leading byte offset is unused in this layout.
__device__ inline uint64_t make_smem_desc(const float* tile)
{
    return (static_cast<uint64_t>(smem_addr(tile)) & 0x3FFFF) >> 4  // start address, in 16-byte units
           | static_cast<uint64_t>(1) << 16                         // leading byte offset (unused)
           | static_cast<uint64_t>(1024 >> 4) << 32                 // stride byte offset: 8 rows x 128 B
           | static_cast<uint64_t>(1) << 62;                        // layout: 128-byte swizzle
}

// Round to nearest TF32 (cvt.rna): the result is a float with its low 13 mantissa bits zero.
__device__ inline uint32_t to_tf32(float x)
{
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

// Element (row kk, column j) of one stage's tile of B, j < BN: box j / 32, row kk of it, and in that
// row the 16-byte chunk (j % 32) / 4, which the swizzle has moved to chunk ((j % 32) / 4) ^ (kk % 8).
__device__ inline float b_tile_at(const float* tile, int kk, int j)
{
    return tile[j / 32 * (BK * 32) + kk * 32 + (((j % 32) / 4) ^ (kk % 8)) * 4 + j % 4];
}

__device__ inline void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ inline void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ inline void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }

// Keeps the compiler from moving reads or writes of v across this point (the asynchronous wgmma
// writes v behind its back).
__device__ inline void pin(float& v) { asm volatile("" : "+f"(v)::"memory"); }

// d (64 x N, N / 2 floats a thread) += left (64 x 8, 4 TF32 values a thread, in registers) times
// the 8 x N operand that `desc` describes in shared memory. All 128 threads of the warpgroup call it.
#define WGMMA_D8(i)                                                                                            \
    "+f"(d[i + 0]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
        "+f"(d[i + 7])
template <int N>
__device__ inline void wgmma_tf32(float* d, const uint32_t (&left)[4], uint64_t desc)
{
    static_assert(N == 64 || N == 128 || N == 256, "the shapes this file uses");
    if constexpr (N == 64) {
        asm volatile(
            "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
            "{%32, %33, %34, %35}, %36, 1, 1, 1;"
            : WGMMA_D8(0), WGMMA_D8(8), WGMMA_D8(16), WGMMA_D8(24)
            : "r"(left[0]), "r"(left[1]), "r"(left[2]), "r"(left[3]), "l"(desc));
    } else if constexpr (N == 128) {
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

//! [kernel]
// A block computes the BM x BN tile of C at (block_row, block_col); in wgmma's terms it computes
// the BN x BM tile of C^T. Consumer warpgroup w owns columns w * 64 .. w * 64 + 63 of the tile: a
// 64 x BM product, one wgmma of shape m64nBMk8 per 8 steps of k.
//
//   warpgroup 0, thread 0 (producer)          warpgroups 1 and 2 (consumers)
//   for each k tile t, stage s = t % STAGES:  for each k tile t, stage s = t % STAGES:
//     wait empty[s]                             wait full[s]
//     expect_tx(full[s], bytes); TMA A, B  -->  B values -> registers, 4 x wgmma, wait for them
//                                          <--  arrive on empty[s]
template <int BM>
__global__ void __launch_bounds__(THREADS, 1)
    matmul_wgmma_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                        float* __restrict__ c, int m, int n, int k_tiles)
{
#if HOPPER_DEVICE_CODE
    extern __shared__ unsigned char smem_raw[];
    // Pointer arithmetic on the array itself, never on its address as an integer: the compiler then
    // still knows that smem is in shared memory, and reads it with LDS instead of generic loads.
    auto& smem = *reinterpret_cast<SharedStorage<BM>*>(smem_raw + (1024 - smem_addr(smem_raw) % 1024) % 1024);
    constexpr int STAGE_BYTES = (BM * BK + BK * BN) * sizeof(float);

    const int block_row = blockIdx.y * BM;
    const int block_col = blockIdx.x * BN;
    const int warpgroup = threadIdx.x / 128;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(&smem.full[s], 1);                 // the producer's arrive.expect_tx
            mbarrier_init(&smem.empty[s], CONSUMERS * 4);    // one arrival per consumer warp
        }
        // Make the initialized barriers visible to the TMA unit (the "async proxy").
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();

    if (warpgroup == 0) {
        // The producer needs few registers: give most of them to the consumers (all four warps of
        // the warpgroup must execute setmaxnreg).
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0) {
            for (int t = 0; t < k_tiles; ++t) {
                const int s = t % STAGES;
                // TODO 1: fill stage s with tile t.
                //   - wait until the consumers have released it:
                //     mbarrier_wait(&smem.empty[s], (t / STAGES + 1) % 2). The first time round
                //     (t < STAGES) this parity names the phase before the barrier's first: no wait.
                //   - announce the bytes TMA will bring, and arrive:
                //     mbarrier_arrive_expect_tx(&smem.full[s], STAGE_BYTES).
                //   - A's box, BM rows x 32 steps of k (x, the column, first):
                //     tma_load(smem.a[s], &a_map, t * BK, block_row, &smem.full[s]).
                //   - B's four boxes of 32 x 32, for q < BN / 32:
                //     tma_load(smem.b[s] + q * BK * 32, &b_map, block_col + q * 32, t * BK, &smem.full[s]).
                (void)s, (void)block_row, (void)block_col, (void)STAGE_BYTES;
            }
        }
        return;
    }

    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int consumer = warpgroup - 1;
    const int warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
    // In wgmma's left operand (64 rows of B^T = 64 columns of the tile, 8 steps of k), lane L of
    // warp w holds rows w * 16 + L / 4 and + 8, at steps L % 4 and + 4 of k.
    const int j = consumer * 64 + warp * 16 + lane / 4;  // the lane's first column of the tile of B
    const int kk = lane % 4;                             // its first step of k
    float acc[BM / 2];
#pragma unroll
    for (int i = 0; i < BM / 2; ++i) acc[i] = 0.0f;

    for (int t = 0; t < k_tiles; ++t) {
        const int s = t % STAGES;
        // TODO 2: wait until TMA has filled stage s: mbarrier_wait(&smem.full[s], (t / STAGES) % 2).

        // The left operand for the 4 steps of 8 in this tile, rounded to TF32.
        uint32_t left[BK / 8][4] = {};
        // TODO 3: for p < BK / 8 (#pragma unroll, here and below), this lane's four values:
        //           left[p][0] = to_tf32(b_tile_at(smem.b[s], p * 8 + kk, j));
        //           left[p][1] = the same at column j + 8;
        //           left[p][2] = the same at row p * 8 + kk + 4, column j;
        //           left[p][3] = row p * 8 + kk + 4, column j + 8.
        // The right operand: A's tile, K-major. Step p of 8 starts 32 bytes (2 units of 16) into
        // each swizzled row: the hardware applies the swizzle to the address it computes.
        const uint64_t desc = make_smem_desc(smem.a[s]);
        // TODO 4: the products, by the whole warpgroup: wgmma_fence() (the registers written above
        //         are ready for wgmma); for p < BK / 8, wgmma_tf32<BM>(acc, left[p], desc + 2 * p);
        //         then wgmma_commit() and wgmma_wait_all() (left is rewritten next tile, and the
        //         stage is released below).
        // (Given.) acc is final only after the wait: pin keeps the compiler from moving uses above it.
#pragma unroll
        for (int i = 0; i < BM / 2; ++i) pin(acc[i]);

        // TODO 5: release stage s: __syncwarp(), then lane 0 of the warp calls
        //         mbarrier_arrive(&smem.empty[s]). empty[s] waits for all CONSUMERS * 4 warps;
        //         without their arrivals the producer waits forever once all STAGES stages are used.
        (void)left, (void)desc, (void)kk;
    }

    // acc holds the lane's part of the 64 x BM tile of C^T: element (row r, column q) of C^T is
    // C[block_row + q][block_col + consumer * 64 + r]. For i = 4 * g + 2 * h + e, the lane's
    // acc[i] is at row warp * 16 + lane / 4 + 8 * h, column 8 * g + 2 * (lane % 4) + e. A warp's
    // store writes 8 consecutive floats (32 bytes) in each of 4 rows of C.
    // TODO 6: store acc: for g < BM / 8, h < 2, e < 2 (#pragma unroll on each),
    //           row = block_row + 8 * g + 2 * (lane % 4) + e, col = block_col + j + 8 * h;
    //         if row < m and col < n, c[static_cast<long long>(row) * n + col] = acc[4 * g + 2 * h + e].
    (void)c, (void)m, (void)n, (void)j, (void)lane;
#endif
}
//! [kernel]

//! [pad]
// Copies a rows x cols matrix into one of rows x padded_cols, zeros on the right: TMA wants every
// row of a matrix to start on a 16-byte boundary, so cols a multiple of 4 floats.
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
// a: m x a_cols, b: k x b_cols (a_cols and b_cols multiples of 4, zero beyond k and n).
template <int BM>
void launch_wgmma(const float* a, int a_cols, const float* b, int b_cols, float* c, int m, int k, int n)
{
    const CUtensorMap a_map = workbook::tensor_map_swizzled(a, m, a_cols, BM);
    const CUtensorMap b_map = workbook::tensor_map_swizzled(b, k, b_cols, BK);
    const int smem_bytes = sizeof(SharedStorage<BM>) + 1024;  // + room to align it to 1024 bytes
    CUDA_CHECK(cudaFuncSetAttribute(matmul_wgmma_kernel<BM>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
    const dim3 grid((n + BN - 1) / BN, (m + BM - 1) / BM);
    matmul_wgmma_kernel<BM><<<grid, THREADS, smem_bytes>>>(a_map, b_map, c, m, n, (a_cols + BK - 1) / BK);
    CUDA_CHECK(cudaGetLastError());
}

void launch_matmul_wgmma(const float* a, const float* b, float* c, int m, int k, int n)
{
    // TMA needs 16-byte aligned matrices whose rows are whole multiples of 16 bytes. When A or B
    // is not like that, copy it into a zero-padded workspace first (it costs one extra pass).
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

    // The largest tile that gives at least 3 SMs in 4 a block (2048 x 2048 makes 128 tiles of
    // 256 x 128 for 132 SMs: better than twice as many half-size tiles); 64-row tiles otherwise.
    int device = 0, sms = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    auto tiles = [&](int bm) { return static_cast<long long>((m + bm - 1) / bm) * ((n + BN - 1) / BN); };
    if (4 * tiles(256) >= 3 * sms)
        launch_wgmma<256>(a, a_cols, b, b_cols, c, m, k, n);
    else if (4 * tiles(128) >= 3 * sms)
        launch_wgmma<128>(a, a_cols, b, b_cols, c, m, k, n);
    else
        launch_wgmma<64>(a, a_cols, b, b_cols, c, m, k, n);

    if (a_padded) CUDA_CHECK(cudaFreeAsync(a_padded, 0));
    if (b_padded) CUDA_CHECK(cudaFreeAsync(b_padded, 0));
}
//! [launch]
