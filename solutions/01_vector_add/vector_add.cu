// Lab 01, vector add: the reference solution.
//
// c[i] = a[i] + b[i] for 0 <= i < n, one GPU thread per element.
#include "common/check.hpp"

#include <cuda_runtime.h>

#include <cstddef>

//! [kernel]
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n)
{
    // Blocks lie end to end along the vector: block 0 owns elements 0..blockDim.x-1, and so on.
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    // The grid is rounded up to whole blocks, so the last block usually sticks out past the
    // end of the vector. Those threads have no element and must not touch memory.
    if (i < n) c[i] = a[i] + b[i];
}
//! [kernel]

//! [launch]
void launch_vector_add(const float* a, const float* b, float* c, int n)
{
    const int threads_per_block = 256;
    // Round up: n = 1000 needs 4 blocks of 256, not 3.
    const int blocks = (n + threads_per_block - 1) / threads_per_block;
    vector_add_kernel<<<blocks, threads_per_block>>>(a, b, c, n);
    // A launch returns before the kernel runs; a bad configuration is reported here, at once.
    CUDA_CHECK(cudaGetLastError());
}
//! [launch]

//! [host]
void vector_add_from_host(const float* a, const float* b, float* c, int n)
{
    const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
    float* device_a = nullptr;
    float* device_b = nullptr;
    float* device_c = nullptr;
    CUDA_CHECK(cudaMalloc(&device_a, bytes));
    CUDA_CHECK(cudaMalloc(&device_b, bytes));
    CUDA_CHECK(cudaMalloc(&device_c, bytes));

    CUDA_CHECK(cudaMemcpy(device_a, a, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(device_b, b, bytes, cudaMemcpyHostToDevice));

    launch_vector_add(device_a, device_b, device_c, n);
    // Wait for the kernel, so that a fault inside it is reported here and not later.
    CUDA_CHECK(cudaDeviceSynchronize());

    CUDA_CHECK(cudaMemcpy(c, device_c, bytes, cudaMemcpyDeviceToHost));

    CUDA_CHECK(cudaFree(device_a));
    CUDA_CHECK(cudaFree(device_b));
    CUDA_CHECK(cudaFree(device_c));
}
//! [host]
