// Buggy variant of lab 01: the round trip is right, but never frees its device arrays.
// expect-fail: round trip from host: frees what it allocates
// expect-message: cudaFree every array you cudaMalloc
#include "common/buffers.hpp"

#include <vector>

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

void launch_vector_add(const float* a, const float* b, float* c, int n)
{
    const int threads_per_block = 256;
    const int blocks = (n + threads_per_block - 1) / threads_per_block;
    vector_add_kernel<<<blocks, threads_per_block>>>(a, b, c, n);
    CUDA_CHECK(cudaGetLastError());
}

void vector_add_from_host(const float* a, const float* b, float* c, int n)
{
    const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
    float *device_a, *device_b, *device_c;
    CUDA_CHECK(cudaMalloc(&device_a, bytes));
    CUDA_CHECK(cudaMalloc(&device_b, bytes));
    CUDA_CHECK(cudaMalloc(&device_c, bytes));
    CUDA_CHECK(cudaMemcpy(device_a, a, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(device_b, b, bytes, cudaMemcpyHostToDevice));
    launch_vector_add(device_a, device_b, device_c, n);
    CUDA_CHECK(cudaMemcpy(c, device_c, bytes, cudaMemcpyDeviceToHost));
    // BUG: no cudaFree
}
