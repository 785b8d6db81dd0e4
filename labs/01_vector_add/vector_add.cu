// Lab 01, vector add: your code goes here.
//
// c[i] = a[i] + b[i] for 0 <= i < n, one GPU thread per element.
// Read README.md beside this file first. Check your work with:   make check LAB=01
#include "common/check.hpp"

#include <cuda_runtime.h>

#include <cstddef>

//! [kernel]
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n)
{
    // TODO 1: compute this thread's element index i from blockIdx.x, blockDim.x and threadIdx.x.
    //         Blocks lie end to end along the vector.
    // TODO 2: the last block may stick out past the end of the vector. Only if i < n,
    //         write c[i] = a[i] + b[i].
}
//! [kernel]

//! [launch]
void launch_vector_add(const float* a, const float* b, float* c, int n)
{
    const int threads_per_block = 256;
    // TODO 3: compute the number of blocks so that blocks * threads_per_block >= n.
    //         Integer division rounds down: n = 1000 needs 4 blocks of 256, not 3.
    // TODO 4: launch vector_add_kernel<<<blocks, threads_per_block>>>(a, b, c, n), then
    //         check the launch with CUDA_CHECK(cudaGetLastError()). A launch reports a bad
    //         configuration only through cudaGetLastError(). CUDA_CHECK (common/check.hpp,
    //         included above) throws an error naming the file, the line and the failing call
    //         when the CUDA call inside it does not return cudaSuccess.
    (void)a, (void)b, (void)c, (void)n, (void)threads_per_block;
}
//! [launch]

//! [host]
void vector_add_from_host(const float* a, const float* b, float* c, int n)
{
    const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
    // a, b and c are host (CPU) arrays of n floats. The GPU cannot read them directly.
    // TODO 5: allocate three device arrays of `bytes` bytes each with cudaMalloc. It writes the
    //         device address into a pointer you pass by address:
    //           float* device_a = nullptr;  CUDA_CHECK(cudaMalloc(&device_a, bytes));
    // TODO 6: copy a and b to the device with cudaMemcpy(destination, source, bytes,
    //         cudaMemcpyHostToDevice): the destination comes first.
    // TODO 7: call launch_vector_add on the device arrays, then wait for the kernel with
    //         cudaDeviceSynchronize().
    // TODO 8: copy the result back into c with cudaMemcpy(..., cudaMemcpyDeviceToHost).
    // TODO 9: free the three device arrays with cudaFree(device_a) and so on.
    // Wrap every CUDA call in CUDA_CHECK(...): a failure then names its file and line.
    (void)a, (void)b, (void)c, (void)bytes;
}
//! [host]
