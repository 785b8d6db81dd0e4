// Buggy variant of lab 01: the kernel is right, but the round trip never copies c back to the host.
// expect-fail: round trip from host: n = 100003
// expect-message: copied 0 bytes from the device to the host
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
    const workbook::DeviceBuffer<float> device_a(std::vector<float>(a, a + n));
    const workbook::DeviceBuffer<float> device_b(std::vector<float>(b, b + n));
    workbook::DeviceBuffer<float> device_c(n);
    launch_vector_add(device_a.data(), device_b.data(), device_c.data(), n);
    CUDA_CHECK(cudaDeviceSynchronize());
    (void)c;  // BUG: no cudaMemcpy(c, ..., cudaMemcpyDeviceToHost)
}
