// Buggy variant of lab 01: at n = 1023 the kernel loops forever. The grader must stop it at the
// test's timeout, fail that test only, and run the tests after it in a fresh process.
// expect-fail: kernel: n = 1023
// expect-message: timed out
// expect-pass: kernel: n = 1025 (one past 1024)
// expect-pass: round trip from host: n = 100003
#include "common/buffers.hpp"

#include <vector>

__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    // BUG: at n = 1023 every thread waits for a[0] to change, which never happens. (A loop
    // with no side effect may be deleted by the compiler; a volatile load is a side effect.)
    const volatile float* flag = a;
    while (n == 1023 && flag[0] == flag[0]) {
    }
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
    CUDA_CHECK(cudaMemcpy(c, device_c.data(), device_c.bytes(), cudaMemcpyDeviceToHost));
}
