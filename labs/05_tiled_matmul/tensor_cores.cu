// Lab 05, going further, step 3: tensor cores (TF32). Your code goes here (bonus points).
//
// C = A·B with A m x k, B k x n and C m x n, all float and row-major.
// Step 2 (warp_tiling.cu) reached 82% of cuBLAS SGEMM with FP32 multiply-adds, but an H100 does
// a matrix product many times faster on its tensor cores. This step hands the products to them:
// one warp-wide instruction, mma.sync m16n8k8, multiplies a 16 x 8 piece of A by an 8 x 8 piece
// of B and adds the 16 x 8 result to the accumulators: 1024 multiply-adds in one instruction.
//   1. TF32 inputs, FP32 sums. The tensor cores read A and B as TF32: a float with 10 bits of
//      mantissa instead of 23. The kernel rounds each value to the nearest TF32 (cvt) on its way
//      from shared memory to the registers of the mma, and sums in FP32 as before.
//   2. Fragments. An mma takes its operands from registers spread over the 32 lanes in a fixed
//      pattern (drawn above the kernel). Each warp owns a 64 x 64 patch of C: 4 x 8 = 32 tiles
//      of 16 x 8, whose 4096 sums take 128 registers a lane (32 x 32 with the small tiles).
//   3. A swizzled layout. Each slice of A and B sits in shared memory in rows of 32 floats whose
//      16-byte chunks are permuted row by row (chunk q of row r at q ^ (r % 8)), so that the
//      fragment loads (ldmatrix for A, 32-bit loads for B) meet no bank conflict.
//   4. Getting the slices there, several in flight. On Hopper (sm_90) one thread asks the Tensor
//      Memory Accelerator (TMA) for a whole slice, and TMA writes it in exactly that swizzle; the
//      other threads never compute a copy's address. Older GPUs copy with cp.async, every thread
//      putting its 16-byte chunks where the swizzle says. Either way an mbarrier per stage says
//      when a slice has landed.
// The mma, cvt, ldmatrix, cp.async and mbarrier instructions need sm_80 or later: on older GPUs
// the kernel stops at once (__trap), and the checker does not run it there.
// Read tensor_cores.md first (going further, step 3). Check your work with:
//   make check LAB=05
#include "common/check.hpp"
#include "common/tma.hpp"  // workbook::tensor_map_swizzled(matrix, rows, cols, box_rows): TMA's map of a
                            // row-major float matrix, boxes of box_rows x 32 floats, 128-byte swizzle

#include <cuda.h>  // CUtensorMap
#include <cuda_runtime.h>

#include <cstdint>

constexpr int BK = 32;  // floats of k per slice: one row of 128 bytes, the width of TMA's swizzle

// ---- One PTX instruction each. --------------------------------------------------------------

// x rounded to the nearest TF32: a float whose low 13 mantissa bits are 0. The mma would simply
// ignore those bits, which truncates; rounding halves the error.
__device__ __forceinline__ uint32_t to_tf32(float x)
{
    uint32_t rounded = 0;
    // TODO 1: one inline-asm statement, asm("..." : outputs : inputs), with the PTX instruction
    //         cvt.rna.tf32.f32 %0, %1;  Its output %0 is "=r"(rounded) (a 32-bit register), its
    //         input %1 is "f"(x) (a float register). cvt.rna (ties away from zero) works from
    //         sm_80 on; on sm_90 and later, cvt.rn.tf32.f32 (ties to even) is one instruction
    //         where cvt.rna is three: `#if __CUDA_ARCH__ >= 900` chooses (see the walkthrough).
    (void)x;
    return rounded;
}

// acc += A·B for one 16 x 8 tile of C, 8 steps of k: one warp-wide tensor-core instruction.
// Every lane passes its own 4 registers of A, 2 of B and 4 of C (the layout is above the kernel).
__device__ __forceinline__ void mma_tf32(float (&acc)[4], const uint32_t (&a)[4], const uint32_t (&b)[2])
{
    // TODO 2: one inline-asm statement with the PTX instruction
    //           mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {d0-d3}, {a0-a3}, {b0, b1}, {c0-c3};
    //         D (the result) and C (what is added) are both acc: make acc[0..3] operands %0-%3 with
    //         "+f" (read and written) and write {%0, %1, %2, %3} in both places. a[0..3] are %4-%7
    //         and b[0..1] %8-%9, all "r". The instruction is one string: {%4, %5, %6, %7}, {%8, %9}.
    (void)acc, (void)a, (void)b;
}

// The 32-bit address of a shared-memory object, as PTX instructions take it.
__device__ __forceinline__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

// Four 8 x 8 matrices of 16-bit values from shared memory, one register of each per lane.
// Lanes 8i to 8i + 7 give the addresses of matrix i's 8 rows (16 bytes each); lane L receives
// the 32-bit word L % 4 of row L / 4 of every matrix. Read as floats, a matrix is 8 x 4.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&regs)[4], const float* row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(regs[0]), "=r"(regs[1]), "=r"(regs[2]), "=r"(regs[3])
                 : "r"(smem_addr(row)));
}

// Global -> shared, without passing through registers; the copy lands later. `bytes` is how many
// bytes to read, the size of the copy or 0: the rest is filled with zeros, and with 0 nothing is
// read at all.
__device__ __forceinline__ void cp_async16(float* shared, const float* global, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr(shared)), "l"(global), "r"(bytes));
}
__device__ __forceinline__ void cp_async4(float* shared, const float* global, int bytes)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(smem_addr(shared)), "l"(global), "r"(bytes));
}

// An mbarrier counts arrivals (and, for TMA, bytes). A phase completes when `count` arrivals have
// come and every byte announced with expect_tx has landed; then it starts over with the other
// parity. A wait names the parity of the phase it waits for.
__device__ __forceinline__ void mbarrier_init(uint64_t* bar, unsigned count)
{
    asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
}
// One arrival, made by the copy unit once every cp.async this thread issued so far has landed.
__device__ __forceinline__ void cp_async_arrive(uint64_t* bar)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" ::"r"(smem_addr(bar)) : "memory");
}
// Waits until the phase of this parity has completed; the stage's data is visible after it.
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, int parity)
{
    unsigned done = 0;
    do {
#if __CUDA_ARCH__ >= 900
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(smem_addr(bar)), "r"(parity) : "memory");
#else
        asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(smem_addr(bar)), "r"(parity) : "memory");
#endif
    } while (!done);
}

// TMA (sm_90): one arrival that also announces `bytes` to come, then the copy of the box at
// element (x, y) of the matrix `map` describes (x the column) into shared memory at dst, its
// bytes counted on bar. Parts of the box outside the matrix arrive as zeros.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t* bar, unsigned bytes)
{
#if __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
#endif
}
__device__ __forceinline__ void tma_load(float* dst, const CUtensorMap* map, int x, int y, uint64_t* bar)
{
#if __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_addr(dst)), "l"(map), "r"(x), "r"(y), "r"(smem_addr(bar))
                 : "memory");
#endif
}

//! [swizzle]
// Element (row, col) of a slice stored in rows of 32 floats (128 bytes) with TMA's 128-byte
// swizzle: the row's 16-byte chunk col / 4 is stored as chunk (col / 4) ^ (row % 8).
__device__ __forceinline__ int swizzled(int row, int col) { return row * 32 + ((col / 4) ^ (row % 8)) * 4 + col % 4; }
//! [swizzle]

//! [load]
// How slices get from global to shared memory:
// - tma: one thread, one TMA copy for A's box and one per 32 columns of B (sm_90; k and n
//   multiples of 4 and both matrices 16-byte aligned, which TMA's row strides need);
// - copies16: every thread, 16-byte cp.async copies (k and n multiples of 4, 16-byte aligned);
// - copies4: every thread, 4-byte cp.async copies (any sizes).
enum class Copies { tma, copies16, copies4 };

// A ROWS x COLS piece of a row-major matrix (rows x cols), from (row0, col0), copied by the block's
// THREADS threads into a stage: COLS / 32 boxes of ROWS rows of 32 floats, each 16-byte chunk at
// its swizzled place, the layout TMA gives (A's slice is one box of BM x 32, B's BN / 32 boxes
// of 32 x 32). Thread x copies chunk x % (COLS / 4) of rows x / (COLS / 4), and THREADS / (COLS / 4)
// rows further on each time: consecutive threads read consecutive 16 bytes of a row, coalesced
// as in step 2. Zeros outside the matrix; a chunk outside still gets an address inside the
// matrix (its first element), so none past the end is ever formed.
template <Copies COPIES, int ROWS, int COLS, int THREADS>
__device__ void copy_slice(float* stage, const float* __restrict__ matrix, int rows, int cols, int row0, int col0)
{
    static_assert(ROWS * COLS % (4 * THREADS) == 0 && THREADS % (COLS / 4) == 0, "the slice splits evenly");
    const int col = threadIdx.x % (COLS / 4) * 4;
#pragma unroll
    for (int l = 0; l < ROWS * COLS / 4 / THREADS; ++l) {
        const int row = threadIdx.x / (COLS / 4) + l * (THREADS / (COLS / 4));
        float* const dst = stage + col / 32 * (ROWS * 32) + swizzled(row, col % 32);
        if (COPIES == Copies::copies16) {
            const bool inside = row0 + row < rows && col0 + col < cols;
            cp_async16(dst, inside ? &matrix[(row0 + row) * cols + col0 + col] : matrix, inside ? 16 : 0);
        } else {
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const bool inside = row0 + row < rows && col0 + col + q < cols;
                cp_async4(dst + q, inside ? &matrix[(row0 + row) * cols + col0 + col + q] : matrix, inside ? 4 : 0);
            }
        }
    }
}
//! [load]

// Threads in a block that computes a BM x BN tile of C with warps of WM x WN each.
__host__ __device__ constexpr int tc_threads(int bm, int bn, int wm, int wn) { return bm / wm * (bn / wn) * 32; }

// Bytes of shared memory: STAGES slices of A (BM x 32) and of B (32 x BN), a "full" mbarrier and
// a count of the warps done with each stage, and room to align the slices to 1024 bytes (the
// period of the swizzle, which TMA requires).
constexpr int tc_shared_bytes(int bm, int bn, int stages)
{
    return stages * ((bm + bn) * BK * static_cast<int>(sizeof(float)) + 16) + 1024;
}

//! [kernel]
// One m16n8k8 mma, seen by lane L of the warp, with g = L / 4 (its group, 0..7) and
// t = L % 4 (its place in the group, 0..3):
//
//   A, 16 x 8 (row m, col k)      B, 8 x 8 (row k, col n)       C, 16 x 8 (row m, col n)
//   a0 = A[g    ][t    ]          b0 = B[t    ][g]              c0 = C[g    ][2t    ]
//   a1 = A[g + 8][t    ]          b1 = B[t + 4][g]              c1 = C[g    ][2t + 1]
//   a2 = A[g    ][t + 4]                                        c2 = C[g + 8][2t    ]
//   a3 = A[g + 8][t + 4]                                        c3 = C[g + 8][2t + 1]
//
// A block computes a BM x BN tile of C, each warp a WM x WN patch of it: (WM / 16) x (WN / 8)
// tiles of 16 x 8, 4 sums per lane each. At each step of 8 along k, a warp loads the A fragments
// of its WM / 16 rows of tiles and the B fragments of its WN / 8 columns of tiles, and does
// every pairing: 4 x 8 = 32 mma for the 64 x 64 patch, from 16 + 16 registers of fragments.
//
// Which 8 columns an n-tile covers is the kernel's choice, as long as the store puts each sum
// back in its column. Here n-tile j of each group of 4 takes columns 4 (j % 4) .. 4 (j % 4) + 3
// and 16 + 4 (j % 4) .. 16 + 4 (j % 4) + 3 of a 32-column box, so that B's loads meet no bank
// conflict under the swizzle (see load_fragments).
//
// Slices go through STAGES stages of shared memory, round and round. Slice s lives in stage
// s % STAGES; full[stage] completes when it has landed. A stage is refilled once every warp holds
// all its fragments: with TMA, by the last warp to finish with it (a count in shared memory), the
// moment it does; with cp.async, by every thread after the barrier that follows the slice.
template <int BM, int BN, int WM, int WN, int STAGES, int MIN_BLOCKS, Copies COPIES>
__global__ void __launch_bounds__(tc_threads(BM, BN, WM, WN), MIN_BLOCKS)
    matmul_tensor_core_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                              const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                              int m, int k, int n)
{
#if __CUDA_ARCH__ >= 800
    constexpr int THREADS = tc_threads(BM, BN, WM, WN), WARPS = THREADS / 32;
    constexpr int M_TILES = WM / 16;  // 16 x 8 tiles per warp along m ...
    constexpr int N_TILES = WN / 8;   // ... and along n
    constexpr int A_FLOATS = BM * BK, B_FLOATS = BK * BN;  // one stage of each
    constexpr bool TMA = COPIES == Copies::tma;
    static_assert(WN % 32 == 0, "a warp's columns are whole boxes of 32 (4 n-tiles share a box)");
#if __CUDA_ARCH__ < 900
    if (TMA) __trap();  // no TMA before sm_90: stop at once rather than wait for slices that never come
#endif

    // The stages, aligned to 1024 bytes by an offset from `shared` (the compiler then still knows
    // these are shared-memory addresses); then the barriers and counts.
    extern __shared__ __align__(16) unsigned char shared[];
    float* const a_stages = reinterpret_cast<float*>(shared + (1024 - smem_addr(shared) % 1024) % 1024);
    float* const b_stages = a_stages + STAGES * A_FLOATS;
    uint64_t* const full = reinterpret_cast<uint64_t*>(b_stages + STAGES * B_FLOATS);
    unsigned* const released = reinterpret_cast<unsigned*>(full + STAGES);  // warps done with a stage, ever

    const int block_row = blockIdx.y * BM;
    const int block_col = blockIdx.x * BN;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_row = warp / (BN / WN) * WM;  // the warp's patch within the block's tile
    const int warp_col = warp % (BN / WN) * WN;
    const int g = lane / 4, t = lane % 4;        // the lane's place in the fragments
    const int slices = (k + BK - 1) / BK;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            // TMA: one arrival (the thread that starts the copies) plus the bytes; cp.async: one
            // arrival per thread, made when its copies have landed.
            mbarrier_init(&full[s], TMA ? 1 : THREADS);
            released[s] = 0;
        }
#if __CUDA_ARCH__ >= 900
        if (TMA) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // TMA sees the barriers
#endif
    }
    __syncthreads();

    // Global -> shared: slice s into stage s % STAGES, its arrival reported on that stage's barrier.
    auto load_slice = [&](int s) {
        const int stage = s % STAGES;
        if constexpr (TMA) {
            mbarrier_arrive_expect_tx(&full[stage], (A_FLOATS + B_FLOATS) * sizeof(float));
            tma_load(a_stages + stage * A_FLOATS, &a_map, s * BK, block_row, &full[stage]);
#pragma unroll
            for (int box = 0; box < BN / 32; ++box)
                tma_load(b_stages + stage * B_FLOATS + box * BK * 32, &b_map, block_col + box * 32, s * BK, &full[stage]);
        } else {
            copy_slice<COPIES, BM, BK, THREADS>(a_stages + stage * A_FLOATS, a, m, k, block_row, s * BK);
            copy_slice<COPIES, BK, BN, THREADS>(b_stages + stage * B_FLOATS, b, k, n, s * BK, block_col);
            cp_async_arrive(&full[stage]);
        }
    };

    // Shared memory -> registers: the fragments of one step of 8 along k, rounded to TF32 here.
    // The values come by TMA or cp.async, straight from global to shared memory, so this is the
    // first time a thread holds them in a register: the one place to round them. It costs one cvt
    // per fragment register.
    // - A: the 16 x 8 piece is four 8 x 4 matrices: rows 0-7 / 8-15 by columns 0-3 / 4-7, in the
    //   order a0, a1, a2, a3. Lane L gives the address of row L % 16 at column 0 (L < 16) or 4,
    //   and receives from each matrix the float at (L / 4, L % 4) = (g, t): a0..a3. ldmatrix reads
    //   a matrix's 8 rows at one column; the swizzle puts them in 8 different chunks (row % 8
    //   differs): the 32 banks once each.
    // - B: the slice is k-major, a lane's b0 and b1 lie in different rows: one 32-bit load each.
    //   b0 of n-tile j is row t, column 16 (g / 4) + 4 (j % 4) + g % 4 of the box: chunk
    //   4 (g / 4) + j % 4, swizzled to 4 (g / 4) + ((j % 4) ^ t). Over the 32 lanes, g / 4, t and
    //   g % 4 take every combination: 32 banks. (With n-tile j at columns 8j .. 8j + 7, rows t
    //   and t ^ 1 would bring the same two chunks: 2-way conflicts.) b1 is the same in row t + 4.
    const int a_chunk = (lane / 16) ^ (lane % 8);  // (chunk of step 0) ^ (row % 8), for ldmatrix
    const int b0_at = t * 32 + g / 4 * 16 + g % 4;
    const int b1_at = (t + 4) * 32 + (g / 4 ^ 1) * 16 + g % 4;  // (4 (g / 4) + jj) ^ (t + 4)
    auto load_fragments = [&](uint32_t (&a_frag)[M_TILES][4], uint32_t (&b_frag)[N_TILES][2], int stage, int step) {
        // Chunk 2 step + L / 16 of row r, swizzled: as 2 step is even, (2 step + h) ^ x = 2 step ^ (h ^ x).
        const float* a_tile = a_stages + stage * A_FLOATS + (warp_row + lane % 16) * BK + ((2 * step) ^ a_chunk) * 4;
#pragma unroll
        for (int i = 0; i < M_TILES; ++i) {
            // TODO 3: ldmatrix_x4 into a_frag[i], this lane giving the address a_tile + i * 16 * BK
            //         (m-tile i starts 16 rows further down); then round its four registers:
            //         a_frag[i][r] = to_tf32(__uint_as_float(a_frag[i][r])).
            (void)a_tile;
        }
        const float* b_tile = b_stages + stage * B_FLOATS + warp_col / 32 * (BK * 32) + step * 8 * 32;
#pragma unroll
        for (int j = 0; j < N_TILES; ++j) {
            const float* box = b_tile + j / 4 * (BK * 32) + ((j % 4) ^ t) * 4;
            // TODO 4: b_frag[j][0] = box[b0_at] and b_frag[j][1] = box[b1_at], each rounded with to_tf32.
            (void)box, (void)b0_at, (void)b1_at;
        }
    };

    // Start the first slices: TMA fills every stage (a stage is refilled as soon as it is free);
    // cp.async all but one (the free one is refilled after the first barrier).
    if (!TMA || threadIdx.x == 0)
        for (int s = 0; s < (TMA ? STAGES : STAGES - 1) && s < slices; ++s) load_slice(s);

    // Double buffering once more, in registers: the fragments of step + 1 (of the next slice,
    // after the last step) are loaded and rounded into the other set while the tensor cores work
    // through this step's 32 mma.
    float acc[M_TILES][N_TILES][4] = {};
    uint32_t a_frag[2][M_TILES][4], b_frag[2][N_TILES][2];
    if (slices > 0) {
        mbarrier_wait(&full[0], 0);
        load_fragments(a_frag[0], b_frag[0], 0, 0);
    }
    for (int s = 0; s < slices; ++s) {
        const int stage = s % STAGES;
        // cp.async: every thread passed the barrier at the end of slice s - 1, so its stage is free.
        if (!TMA && s + STAGES - 1 < slices) load_slice(s + STAGES - 1);
#pragma unroll
        for (int step = 0; step < BK / 8; ++step) {
            const int now = step % 2, next = (step + 1) % 2;
            if (step + 1 < BK / 8) {
                load_fragments(a_frag[next], b_frag[next], stage, step + 1);
            } else {
                // The warp now holds all of slice s. TMA: the last warp done with the stage
                // refills it (its lanes' reads come before lane 0's count: __syncwarp, then fences
                // on both sides of the count).
                if constexpr (TMA) {
                    __syncwarp();
                    if (lane == 0) {
                        __threadfence_block();
                        const bool last = (atomicAdd(&released[stage], 1u) + 1) % WARPS == 0;
                        if (last && s + STAGES < slices) {
                            __threadfence_block();
                            load_slice(s + STAGES);
                        }
                    }
                }
                if (s + 1 < slices) {
                    const int following = s + 1;  // lives in stage following % STAGES, its round following / STAGES
                    mbarrier_wait(&full[following % STAGES], following / STAGES % 2);
                    if (!TMA) __syncthreads();  // every warp is done with slice s: its stage may be refilled
                    load_fragments(a_frag[next], b_frag[next], following % STAGES, 0);
                }
            }
            // TODO 5: every pairing of the warp's tiles, for i < M_TILES and j < N_TILES (#pragma unroll
            //         on both loops): mma_tf32(acc[i][j], a_frag[now][i], b_frag[now][j]).
            (void)now;
        }
    }

    // Each lane writes its 4 sums of every tile: two pairs of neighbours, (c0, c1) in row g and
    // (c2, c3) in row g + 8, at columns 2t and 2t + 1 of the n-tile, which are columns
    // 16 (t / 2) + 4 (j % 4) + 2 (t % 2) and one more of box j / 4. With n even (and c 8-byte
    // aligned) a pair is one 8-byte store, and both columns exist when the first does.
    const bool pairs = n % 2 == 0 && reinterpret_cast<uintptr_t>(c) % 8 == 0;
    // TODO 6: for every m-tile i, half in {0, 1} and n-tile j: acc[i][j][2 * half] and
    //         acc[i][j][2 * half + 1] go to C[row][col] and C[row][col + 1], with
    //           row = block_row + warp_row + i * 16 + g + half * 8 and
    //           col = block_col + warp_col + j / 4 * 32 + t / 2 * 16 + j % 4 * 4 + t % 2 * 2.
    //         Skip rows >= m. With `pairs`, one float2 store when col < n; without, float by
    //         float where col < n and col + 1 < n. (C's index: static_cast<size_t>(row) * n + col.)
    (void)acc, (void)c, (void)pairs, (void)g, (void)t, (void)warp_row, (void)warp_col, (void)block_row,
        (void)block_col;
#else
    __trap();  // tf32 mma, cp.async and mbarriers need sm_80 or later
#endif
}
//! [kernel]

//! [launch]
template <int BM, int BN, int WM, int WN, int STAGES, int MIN_BLOCKS, Copies COPIES>
void launch_tensor_cores(const float* a, const float* b, float* c, int m, int k, int n)
{
    const auto kernel = matmul_tensor_core_kernel<BM, BN, WM, WN, STAGES, MIN_BLOCKS, COPIES>;
    constexpr int bytes = tc_shared_bytes(BM, BN, STAGES);
    // TMA's maps of A (boxes of BM rows x 32) and B (32 x 32); the cp.async kernels get them empty.
    CUtensorMap a_map{}, b_map{};
    if (COPIES == Copies::tma) {
        a_map = workbook::tensor_map_swizzled(a, m, k, BM);
        b_map = workbook::tensor_map_swizzled(b, k, n, BK);
    }
    // Over 48 KiB of shared memory per block must be asked for, kernel by kernel.
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    const dim3 grid((n + BN - 1) / BN, (m + BM - 1) / BM);
    kernel<<<grid, tc_threads(BM, BN, WM, WN), bytes>>>(a_map, b_map, a, b, c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}

void launch_matmul_tensor_cores(const float* a, const float* b, float* c, int m, int k, int n)
{
    int device = 0, sms = 0, shared_max = 0, major = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&shared_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    auto tiles = [&](int bm, int bn) { return static_cast<long long>((m + bm - 1) / bm) * ((n + bn - 1) / bn); };
    // 16-byte copies and TMA need every row of A and B to start on a 16-byte boundary.
    auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    const bool rows16 = k % 4 == 0 && n % 4 == 0 && aligned(a) && aligned(b);

    // Hopper: TMA. 256 x 128 tiles (8 warps of 64 x 64, 4 stages: 193 KiB, one block an SM) when
    // they give at least 3 SMs in 4 a block; else 64 x 64 tiles (4 warps of 32 x 32, 4 stages).
    if (major >= 9 && rows16) {
        if (4 * tiles(256, 128) >= 3 * sms && tc_shared_bytes(256, 128, 4) <= shared_max)
            launch_tensor_cores<256, 128, 64, 64, 4, 1, Copies::tma>(a, b, c, m, k, n);
        else
            launch_tensor_cores<64, 64, 32, 32, 4, 2, Copies::tma>(a, b, c, m, k, n);
        return;
    }
    // cp.async: 128 x 128 tiles (4 warps of 64 x 64, 3 stages: 97 KiB) when there are enough of
    // them to give every SM one and the GPU allows a block that much shared memory (RTX 30 and
    // 40 series: 99 KiB); else 64 x 64. 4-byte copies only where 16-byte ones cannot be.
    if (!rows16)
        launch_tensor_cores<64, 64, 32, 32, 4, 2, Copies::copies4>(a, b, c, m, k, n);
    else if (tiles(128, 128) >= sms && tc_shared_bytes(128, 128, 3) <= shared_max)
        launch_tensor_cores<128, 128, 64, 64, 3, 2, Copies::copies16>(a, b, c, m, k, n);
    else
        launch_tensor_cores<64, 64, 32, 32, 4, 2, Copies::copies16>(a, b, c, m, k, n);
}
//! [launch]
