// Cheat for lab 02: the transpose is done on the CPU, in host memory the GPU reaches in place,
// allocated by the driver's cuMemHostAlloc fetched by name through cudaGetDriverEntryPointByVersion,
// so that the file names no host-memory function. A kernel copies `in` into that memory, the CPU
// transposes it, and a kernel copies the result into `out`: no copy from the device to the host
// is recorded, and every output is right. The build refuses the lookup by name
// (grading/buildtools/student_symbols.py).
// expect-build-error: this file calls cudaGetDriverEntryPointByVersion: fetching driver functions by name
// expect-build-error: is not allowed in a lab file
#include "common/check.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>

__global__ void copy_kernel(const float* from, float* to, std::size_t count)
{
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count;
         i += std::size_t(gridDim.x) * blockDim.x)
        to[i] = from[i];
}

static void copy(const float* from, float* to, std::size_t count)
{
    copy_kernel<<<256, 256>>>(from, to, count);
    CUDA_CHECK(cudaGetLastError());
}

// cuMemHostAlloc with CU_MEMHOSTALLOC_DEVICEMAP: host memory a kernel reads and writes in place.
static float* host_mapped(std::size_t count)
{
    using HostAlloc = CUresult (*)(void**, std::size_t, unsigned int);
    static HostAlloc host_alloc = nullptr;
    if (host_alloc == nullptr) {
        void* function = nullptr;
        cudaDriverEntryPointQueryResult found{};
        CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuMemHostAlloc", &function, 12000, cudaEnableDefault, &found));
        host_alloc = reinterpret_cast<HostAlloc>(function);
    }
    void* memory = nullptr;
    if (host_alloc(&memory, count * sizeof(float), CU_MEMHOSTALLOC_DEVICEMAP) != CUDA_SUCCESS) return nullptr;
    return static_cast<float*>(memory);
}

void launch_transpose_naive(const float* in, float* out, int rows, int cols)
{
    const std::size_t count = static_cast<std::size_t>(rows) * cols;
    float* host_in = host_mapped(count);
    float* host_out = host_mapped(count);
    copy(in, host_in, count);
    CUDA_CHECK(cudaDeviceSynchronize());
    for (int row = 0; row < rows; ++row)
        for (int col = 0; col < cols; ++col)
            host_out[static_cast<std::size_t>(col) * rows + row] = host_in[static_cast<std::size_t>(row) * cols + col];
    copy(host_out, out, count);
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaFreeHost(host_in));
    CUDA_CHECK(cudaFreeHost(host_out));
}
