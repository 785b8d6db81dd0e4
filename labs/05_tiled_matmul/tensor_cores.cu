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
//   3. Shared memory -> fragments: ldmatrix for A, 32-bit loads for B, rows padded so that
//      neither meets a bank conflict; the next step's fragments load during this step's mma.
//   4. cp.async and three stages. Slices go from global to shared memory without passing through
//      registers, three slices in flight, so the tensor cores rarely wait for device memory.
// The mma, cvt, ldmatrix and cp.async instructions need sm_80 or later: on older GPUs the kernel
// stops at once (__trap), and the checker does not run it there.
// Read the section "Going further, step 3" of README.md first. Check your work with:
//   make check LAB=05
#include "common/check.hpp"

#include <cuda_runtime.h>

#include <cstdint>

constexpr int A_PAD = 4;  // floats of padding at the end of each row of A's slice
constexpr int B_PAD = 8;  // and of B's slice; see the kernel for why 4 and 8

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

// Four 8 x 8 matrices of 16-bit values from shared memory, one register of each per lane.
// Lanes 8i to 8i + 7 give the addresses of matrix i's 8 rows (16 bytes each); lane L receives
// the 32-bit word L % 4 of row L / 4 of every matrix. Read as floats, a matrix is 8 x 4.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&regs)[4], const float* row)
{
    const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(row));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(regs[0]), "=r"(regs[1]), "=r"(regs[2]), "=r"(regs[3])
                 : "r"(address));
}

// Global -> shared, without passing through registers; the copy lands later (see cp_async_wait).
// `bytes` is how many bytes to read, the size of the copy or 0: the rest is filled with zeros,
// and with 0 nothing is read at all.
__device__ __forceinline__ void cp_async16(float* shared, const float* global, int bytes)
{
    const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(address), "l"(global), "r"(bytes));
}
__device__ __forceinline__ void cp_async4(float* shared, const float* global, int bytes)
{
    const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(address), "l"(global), "r"(bytes));
}
// Closes the group of copies this thread issued since the last commit ...
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
// ... and waits until at most `PENDING` of this thread's groups are still in flight.
template <int PENDING>
__device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;" ::"n"(PENDING) : "memory");
}

//! [load]
// Four consecutive floats of a row into shared memory, zeros where they fall outside the matrix.
// With VECTOR (cols a multiple of 4 and col a multiple of 4) the four are wholly inside or
// wholly outside: one 16-byte copy. Outside, the copy reads 0 bytes and writes zeros; it still
// gets an address inside the matrix (its first element), so none past the end is ever formed.
template <bool VECTOR>
__device__ void copy4_or_zero(float* shared, const float* __restrict__ matrix, int rows, int cols, int row, int col)
{
    if (VECTOR) {
        const bool inside = row < rows && col < cols;
        cp_async16(shared, inside ? &matrix[row * cols + col] : matrix, inside ? 16 : 0);
    } else {
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const bool inside = row < rows && col + q < cols;
            cp_async4(shared + q, inside ? &matrix[row * cols + col + q] : matrix, inside ? 4 : 0);
        }
    }
}
//! [load]

// Threads in a block that computes a BM x BN tile of C with warps of WM x WN each.
__host__ __device__ constexpr int tc_threads(int bm, int bn, int wm, int wn) { return bm / wm * (bn / wn) * 32; }

// Bytes of shared memory for STAGES slices of A (BM x BK) and of B (BK x BN), padded.
constexpr int tc_shared_bytes(int bm, int bn, int bk, int stages)
{
    return stages * (bm * (bk + A_PAD) + bk * (bn + B_PAD)) * static_cast<int>(sizeof(float));
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
// Slices go through STAGES buffers of shared memory, round and round: while the warps multiply
// slice s, the copies of slices s + 1 .. s + STAGES - 1 are in flight.
template <int BM, int BN, int BK, int WM, int WN, int STAGES, int MIN_BLOCKS, bool VECTOR>
__global__ void __launch_bounds__(tc_threads(BM, BN, WM, WN), MIN_BLOCKS)
    matmul_tensor_core_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                              int m, int k, int n)
{
#if __CUDA_ARCH__ >= 800
    constexpr int THREADS = tc_threads(BM, BN, WM, WN);
    constexpr int M_TILES = WM / 16;                // 16 x 8 tiles per warp along m ...
    constexpr int N_TILES = WN / 8;                 // ... and along n
    constexpr int A_COPIES = BM * BK / 4 / THREADS;  // 16-byte copies of A per thread per slice
    constexpr int B_COPIES = BK * BN / 4 / THREADS;  // and of B
    static_assert(A_COPIES * 4 * THREADS == BM * BK && B_COPIES * 4 * THREADS == BK * BN, "slices split evenly");
    static_assert(BK % 8 == 0, "a slice is a whole number of mma steps");

    // The padding, counted in banks (shared memory has 32, 4 bytes wide: float i is in bank i % 32):
    // - ldmatrix reads A's fragments 8 rows of 4 floats at a time, each row 4 banks wide. With
    //   rows of BK = 32 floats, all 8 rows would start in the same bank: an 8-way conflict. With
    //   rows of 32 + 4 = 36 floats, row r starts in bank 36r % 32 = 4r: the 8 rows cover the
    //   32 banks exactly once.
    // - Lane (g, t) loads b0 = B[t][g], float t * (BN + B_PAD) + g of the slice. With rows of
    //   BN = 128 floats, 128t is a multiple of 32: the 4 lanes t = 0..3 of each g hit one bank,
    //   a 4-way conflict. With rows of 136 (or 72 for BN = 64), bank = 8t + g: 32 lanes, 32 banks.
    extern __shared__ __align__(16) float shared[];
    auto a_slice = reinterpret_cast<float(*)[BM][BK + A_PAD]>(shared);                       // [STAGES][BM][..]
    auto b_slice = reinterpret_cast<float(*)[BK][BN + B_PAD]>(shared + STAGES * BM * (BK + A_PAD));  // [STAGES][BK][..]

    const int block_row = blockIdx.y * BM;
    const int block_col = blockIdx.x * BN;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_row = warp / (BN / WN) * WM;  // the warp's patch within the block's tile
    const int warp_col = warp % (BN / WN) * WN;
    const int g = lane / 4, t = lane % 4;        // the lane's place in the fragments

    // Global -> shared buffer `buf`: the slice that starts at column k0 of A and row k0 of B.
    // Consecutive threads copy consecutive 16 bytes of a row: coalesced, as in step 2.
    auto load_slice = [&](int buf, int k0) {
#pragma unroll
        for (int l = 0; l < A_COPIES; ++l) {
            const int f = threadIdx.x + l * THREADS;
            const int row = f / (BK / 4), col = f % (BK / 4) * 4;
            copy4_or_zero<VECTOR>(&a_slice[buf][row][col], a, m, k, block_row + row, k0 + col);
        }
#pragma unroll
        for (int l = 0; l < B_COPIES; ++l) {
            const int f = threadIdx.x + l * THREADS;
            const int row = f / (BN / 4), col = f % (BN / 4) * 4;
            copy4_or_zero<VECTOR>(&b_slice[buf][row][col], b, k, n, k0 + row, block_col + col);
        }
    };

    // Shared memory -> registers: the fragments of one step of 8 along k, rounded to TF32 here.
    // The values come by cp.async, straight from global to shared memory, so this is the first
    // time a thread holds them in a register: the one place to round them. It costs one cvt per
    // fragment register. Two sets of fragment registers: see the loop below.
    uint32_t a_frag[2][M_TILES][4], b_frag[2][N_TILES][2];
    auto load_fragments = [&](int set, int buf, int kk) {
#pragma unroll
        for (int i = 0; i < M_TILES; ++i) {
            // The 16 x 8 piece of A is four 8 x 4 matrices: rows 0-7 / 8-15 by columns 0-3 /
            // 4-7, in the order a0, a1, a2, a3. Lane L gives the address of row L % 16 of the
            // piece, at column 0 (L < 16) or 4 (L >= 16), and receives from each matrix the
            // float at (L / 4, L % 4) = (g, t): exactly a0..a3 of the layout above.
            // TODO 3: ldmatrix_x4 into a_frag[set][i], lane giving the address
            //         &a_slice[buf][warp_row + i * 16 + lane % 16][kk + lane / 16 * 4]; then round its
            //         four registers: a_frag[set][i][r] = to_tf32(__uint_as_float(a_frag[set][i][r])).
        }
#pragma unroll
        for (int j = 0; j < N_TILES; ++j) {
            // B's slice is k-major: a lane's b0 and b1 lie in different rows, one 32-bit load each.
            // TODO 4: b_frag[set][j][0] = b_slice[buf][kk + t][warp_col + j * 8 + g] and
            //         b_frag[set][j][1] = b_slice[buf][kk + t + 4][warp_col + j * 8 + g], each rounded
            //         with to_tf32.
        }
    };

    float acc[M_TILES][N_TILES][4] = {};
    const int slices = (k + BK - 1) / BK;

    // Start the first STAGES - 1 slices. A group is committed even when there is no slice to
    // load, so that "slice s has landed" is always "at most STAGES - 2 groups still pending".
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < slices) load_slice(s, s * BK);
        cp_async_commit();
    }

    for (int s = 0; s < slices; ++s) {
        const int buf = s % STAGES;
        // Wait for this thread's copies of slice s, then the barrier: after it, every thread's
        // copies of slice s are in, and every warp has finished multiplying slice s - 1.
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        // So slice s - 1's buffer is free: refill it with slice s + STAGES - 1.
        const int next = s + STAGES - 1;
        if (next < slices) load_slice(next % STAGES, next * BK);
        cp_async_commit();

        // Double buffering once more, in registers: the fragments of step + 1 are loaded (and
        // rounded) into the other set while the tensor cores work through step's 32 mma.
        load_fragments(0, buf, 0);
#pragma unroll
        for (int step = 0; step < BK / 8; ++step) {
            if (step + 1 < BK / 8) load_fragments((step + 1) % 2, buf, (step + 1) * 8);
            // TODO 5: every pairing of the warp's tiles, for i < M_TILES and j < N_TILES (#pragma unroll
            //         on both loops): mma_tf32(acc[i][j], a_frag[step % 2][i], b_frag[step % 2][j]).
        }
    }

    // Each lane writes its 4 sums of every tile: two pairs of neighbours, (c0, c1) in row g and
    // (c2, c3) in row g + 8. With VECTOR (n a multiple of 4, col even) a pair is one 8-byte store
    // and both columns exist when col < n; the 4 lanes of a group fill 32 consecutive bytes.
    // TODO 6: for every tile (i, j) and half in {0, 1}: acc[i][j][2 * half] and acc[i][j][2 * half + 1]
    //         go to C[row][col] and C[row][col + 1], with row = block_row + warp_row + i * 16 + g + half * 8
    //         and col = block_col + warp_col + j * 8 + 2 * t. Skip rows >= m. With VECTOR, one float2
    //         store when col < n; without, float by float where col < n and col + 1 < n.
    (void)acc, (void)a_frag, (void)b_frag, (void)c, (void)g, (void)t, (void)lane, (void)warp_row, (void)warp_col,
        (void)block_row, (void)block_col;
#else
    __trap();  // tf32 mma and cp.async need sm_80 or later
#endif
}
//! [kernel]

//! [launch]
template <int BM, int BN, int BK, int WM, int WN, int STAGES, int MIN_BLOCKS, bool VECTOR>
void launch_tensor_core_variant(const float* a, const float* b, float* c, int m, int k, int n)
{
    const auto kernel = matmul_tensor_core_kernel<BM, BN, BK, WM, WN, STAGES, MIN_BLOCKS, VECTOR>;
    constexpr int bytes = tc_shared_bytes(BM, BN, BK, STAGES);
    // Over 48 KiB of shared memory per block must be asked for, kernel by kernel.
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    const dim3 grid((n + BN - 1) / BN, (m + BM - 1) / BM);
    kernel<<<grid, tc_threads(BM, BN, WM, WN), bytes>>>(a, b, c, m, k, n);
    CUDA_CHECK(cudaGetLastError());
}

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int MIN_BLOCKS>
void launch_tensor_cores(const float* a, const float* b, float* c, int m, int k, int n)
{
    // 16-byte copies need every row of A and B to start on a 16-byte boundary.
    if (k % 4 == 0 && n % 4 == 0)
        launch_tensor_core_variant<BM, BN, BK, WM, WN, STAGES, MIN_BLOCKS, true>(a, b, c, m, k, n);
    else
        launch_tensor_core_variant<BM, BN, BK, WM, WN, STAGES, MIN_BLOCKS, false>(a, b, c, m, k, n);
}

void launch_matmul_tensor_cores(const float* a, const float* b, float* c, int m, int k, int n)
{
    int device = 0, sms = 0, shared_max = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&shared_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    // 128 x 128 tiles (4 warps of 64 x 64, 3 stages of 32 along k: 105 KiB, two blocks per SM on
    // an H100) when there are enough of them to give every SM one, and the GPU allows a block
    // that much shared memory (RTX 30 and 40 series: 99 KiB). Otherwise 64 x 64 tiles (4 warps
    // of 32 x 32, 4 stages: 72 KiB), four times as many blocks.
    const long long big_tiles = static_cast<long long>((m + 127) / 128) * ((n + 127) / 128);
    if (big_tiles >= sms && tc_shared_bytes(128, 128, 32, 3) <= shared_max)
        launch_tensor_cores<128, 128, 32, 64, 64, 3, 2>(a, b, c, m, k, n);
    else
        launch_tensor_cores<64, 64, 32, 32, 32, 4, 4>(a, b, c, m, k, n);
}
//! [launch]
