// Skipped work: the transpose is done on the host. The function copies `in` to the host,
// transposes it there, copies the result into `out`, and launches a kernel of its own that does
// nothing, so that a kernel ran. Every output is right; the judge sees the copy to the host, as
// large as the output itself.
// expect-fail: 1025 x 2049
// expect-fail: 8192 x 8192
// expect-message: from the device to the host
#include "common/check.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

__global__ void nothing_kernel() {}

void launch_transpose_naive(const float* in, float* out, int rows, int cols)
{
    const std::size_t count = static_cast<std::size_t>(rows) * cols;
    std::vector<float> host_in(count), host_out(count);
    CUDA_CHECK(cudaMemcpy(host_in.data(), in, count * sizeof(float), cudaMemcpyDeviceToHost));
    for (int row = 0; row < rows; ++row)
        for (int col = 0; col < cols; ++col)
            host_out[static_cast<std::size_t>(col) * rows + row] = host_in[static_cast<std::size_t>(row) * cols + col];
    CUDA_CHECK(cudaMemcpy(out, host_out.data(), count * sizeof(float), cudaMemcpyHostToDevice));
    nothing_kernel<<<1, 1>>>();
    CUDA_CHECK(cudaGetLastError());
}
