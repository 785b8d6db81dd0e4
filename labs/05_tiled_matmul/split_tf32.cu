// Lab 05, going further, step 6: FP32's accuracy from the TF32 tensor cores. Your code goes here
// (bonus points).
//
// C = A·B with A m x k, B k x n and C m x n, all float and row-major, within FP32's tolerance (the
// one lab 05 and steps 1 and 2 meet), computed by step 5's kernel, whose tensor cores multiply
// TF32: 10 bits of mantissa where FP32 has 23.
//   1. Split each float into a head and a tail, both TF32: x = hi(x) + lo(x), where hi(x) is x
//      rounded to TF32 and lo(x) = x - hi(x), exact in FP32, then rounded to TF32 itself.
//   2. a·b = hi(a)hi(b) + hi(a)lo(b) + lo(a)hi(b) + lo(a)lo(b). The last term is below 2^-22 of
//      |a·b| and is dropped. hi(a)hi(b) is exact on the tensor core, and each of the two others is
//      off by at most 2^-11 of itself, a term that is itself below 2^-11 of |a·b|.
//   3. Three products of k terms are one product of 3k terms. Step 5's kernel computes
//        C = [lo(A) | hi(A) | hi(A)] · [hi(B); lo(B); hi(B)]
//      as it is, once the split copies are written: A's three parts side by side along k, B's one
//      above the other. Each part is kp = k rounded up to a multiple of 4 wide, with zeros after
//      k, so that every copy's rows stay 16-byte multiples, as TMA needs.
// The small terms come first: they are summed while the running sum is still small, so that each
// rounding of it costs them less. Measured at 4096 (H100): a largest error of 0.0013 this way
// against 0.0044 with hi(A)hi(B) first, beside cuBLAS SGEMM's 0.0004, within FP32's 0.016.
//
// Cost: three times step 5's work, plus one pass over memory to write the copies (A and B read
// once, 3 copies of each written). Where step 5 runs at cuBLAS TF32's speed, three of its
// products still take less time than one SGEMM on the CUDA cores.
// Read split_tf32.md first (going further, step 6); this step needs your step 5
// (persistent.cu), which does the product. Check your work with:
//   make check LAB=05
// Sources: S. Markidis et al., "NVIDIA Tensor Core Programmability, Performance & Precision"
// (2018); H. Ootomo and R. Yokota, "Recovering single precision accuracy from Tensor Cores while
// surpassing the FP32 theoretical peak performance" (2022); CUTLASS's 3xTF32 (tfloat32x3).
#include "persistent.cu"  // step 5: your launch_matmul_persistent does the product

//! [split]
// x rounded to the nearest TF32 value (ties away from zero).
__device__ inline float tf32_head(float x)
{
    // TODO 1: add half a TF32 unit, 2^12, to x's bits (__float_as_uint), then clear the low 13
    //         bits, and give the bits back as a float (__uint_as_float).
    return x;
}

// A (rows x k) -> A3 (rows x 3 kp): [lo(A) | hi(A) | hi(A)], each part kp wide, zeros after k.
__global__ void split_a_kernel(const float* __restrict__ a, float* __restrict__ a3, int rows, int k, int kp)
{
    const long long count = static_cast<long long>(rows) * kp;
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long row = i / kp;
        const int col = static_cast<int>(i % kp);
        // TODO 2: x = A[row][col] (0 from col = k on); hi = tf32_head(x), lo = tf32_head(x - hi);
        //         then A3's row `row` gets lo at column col, hi at kp + col and hi at 2 kp + col.
        (void)row;
        (void)col;
    }
}

// B (k x cols) -> B3 (3 kp x cols): [hi(B); lo(B); hi(B)], each part kp rows, zeros after row k.
__global__ void split_b_kernel(const float* __restrict__ b, float* __restrict__ b3, int k, int kp, int cols)
{
    const long long count = static_cast<long long>(kp) * cols;
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        // TODO 3: x = b[i] below row k (i < k * cols), 0 after; then hi at b3[i], lo one part
        //         further (count later), hi two parts further.
    }
}
//! [split]

//! [launch]
void launch_matmul_split_tf32(const float* a, const float* b, float* c, int m, int k, int n)
{
    const int kp = (k + 3) / 4 * 4;
    float* a3 = nullptr;
    float* b3 = nullptr;
    CUDA_CHECK(cudaMallocAsync(&a3, sizeof(float) * 3 * static_cast<size_t>(m) * kp, 0));
    CUDA_CHECK(cudaMallocAsync(&b3, sizeof(float) * 3 * static_cast<size_t>(kp) * n, 0));
    split_a_kernel<<<1024, 256>>>(a, a3, m, k, kp);
    CUDA_CHECK(cudaGetLastError());
    split_b_kernel<<<1024, 256>>>(b, b3, k, kp, n);
    CUDA_CHECK(cudaGetLastError());
    // TODO 4: C = A3 · B3 with your step 5: launch_matmul_persistent, m rows, how many terms?, n columns.
    (void)c;
    CUDA_CHECK(cudaFreeAsync(a3, 0));
    CUDA_CHECK(cudaFreeAsync(b3, 0));
}
//! [launch]
