#include "exact_references.hpp"

#include "check.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

namespace workbook {

namespace {

// Cases up to this many elements are computed on the CPU (a few milliseconds).
constexpr std::size_t kCpuLimit = std::size_t{1} << 22;

int blocks_for(std::size_t n) { return static_cast<int>((n + 255) / 256); }

__global__ void widen_kernel(const float* in, double* out, std::size_t n)
{
    const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = in[i];
}

__global__ void sum_kernel(const float* a, const float* b, double* c, std::size_t n)
{
    const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
    if (i < n) c[i] = static_cast<double>(a[i]) + static_cast<double>(b[i]);
}

// One thread per input element; the strided writes are slow by GPU standards, and still take
// only milliseconds at 8192 x 8192.
__global__ void transpose_kernel(const float* in, double* out, int rows, int cols)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols)
        out[static_cast<std::size_t>(col) * rows + row] = in[static_cast<std::size_t>(row) * cols + col];
}

}  // namespace

DeviceBuffer<double> widened_on_device(const std::vector<float>& values)
{
    const DeviceBuffer<float> in(values);
    DeviceBuffer<double> out(values.size());
    if (!values.empty()) {
        widen_kernel<<<blocks_for(values.size()), 256>>>(in.data(), out.data(), values.size());
        CUDA_CHECK_LAUNCH("widening floats to double");
    }
    return out;
}

Reference sum_reference(const std::vector<float>& a, const std::vector<float>& b)
{
    if (a.size() != b.size()) throw std::invalid_argument("sum_reference: a and b differ in length");
    const std::size_t n = a.size();
    const auto on_cpu = [&](std::size_t i) { return static_cast<double>(a[i]) + static_cast<double>(b[i]); };
    if (n <= kCpuLimit) {
        std::vector<double> c(n);
        for (std::size_t i = 0; i < n; ++i) c[i] = on_cpu(i);
        return Reference(std::move(c));
    }
    const DeviceBuffer<float> da(a), db(b);
    DeviceBuffer<double> c(n);
    sum_kernel<<<blocks_for(n), 256>>>(da.data(), db.data(), c.data(), n);
    CUDA_CHECK_LAUNCH("the float64 reference sum");
    // Exact: the GPU must match to the last bit.
    spot_check(c, 1, n, [&](std::size_t, std::size_t i) { return std::make_pair(on_cpu(i), 0.0); }, "sum");
    return Reference(std::move(c));
}

Reference transpose_reference(const std::vector<float>& in, int rows, int cols)
{
    if (rows < 1 || cols < 1 || in.size() != static_cast<std::size_t>(rows) * cols)
        throw std::invalid_argument("transpose_reference: needs rows, cols >= 1 and rows * cols floats");
    const std::size_t R = static_cast<std::size_t>(rows), C = static_cast<std::size_t>(cols);
    // Element i of the output is out[c][r] with c = i / rows and r = i % rows: in[r][c].
    const auto on_cpu = [&](std::size_t i) { return static_cast<double>(in[(i % R) * C + i / R]); };
    if (in.size() <= kCpuLimit) {
        std::vector<double> out(in.size());
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = on_cpu(i);
        return Reference(std::move(out));
    }
    const DeviceBuffer<float> d_in(in);
    DeviceBuffer<double> out(in.size());
    const dim3 block(32, 8);
    const dim3 grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);
    transpose_kernel<<<grid, block>>>(d_in.data(), out.data(), rows, cols);
    CUDA_CHECK_LAUNCH("the float64 reference transpose");
    spot_check(out, C, R, [&](std::size_t row, std::size_t col) { return std::make_pair(on_cpu(row * R + col), 0.0); },
               "transpose");
    return Reference(std::move(out));
}

}  // namespace workbook
