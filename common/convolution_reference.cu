#include "convolution_reference.hpp"

#include "buffers.hpp"
#include "check.hpp"

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace workbook {

namespace {

// Cases up to this many multiply-adds are computed on the CPU (a few hundredths of a second on
// one core); larger ones on the GPU, spot-checked. The grader computes references for every
// student, so the CPU's share stays small.
constexpr double kCpuLimit = 1u << 24;

int output_size(int size, int stride) { return (size + stride - 1) / stride; }

void check_arguments(const std::vector<float>& image, int height, int width,
                     const std::vector<float>& mask, int k, int stride)
{
    if (height < 1 || width < 1 || k < 1 || k % 2 == 0 || stride < 1)
        throw std::invalid_argument("convolution_reference: needs height, width, stride >= 1 and an odd k >= 1");
    if (image.size() != static_cast<std::size_t>(height) * width)
        throw std::invalid_argument("convolution_reference: the image holds " + std::to_string(image.size()) +
                                    " floats, not height * width");
    if (mask.size() != static_cast<std::size_t>(k) * k)
        throw std::invalid_argument("convolution_reference: the mask holds " + std::to_string(mask.size()) +
                                    " floats, not k * k");
}

// One thread per output, every term in float64: slow by GPU standards, plenty fast for a reference.
__global__ void reference_kernel(const float* image, const double* mask, double* out, int height,
                                 int width, int k, int stride, int out_height, int out_width)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= out_width || y >= out_height) return;
    const int r = (k - 1) / 2;
    double sum = 0;
    for (int i = 0; i < k; ++i) {
        const int row = y * stride + i - r;
        if (row < 0 || row >= height) continue;
        for (int j = 0; j < k; ++j) {
            const int col = x * stride + j - r;
            if (col < 0 || col >= width) continue;
            sum += mask[i * k + j] * static_cast<double>(image[static_cast<std::size_t>(row) * width + col]);
        }
    }
    out[static_cast<std::size_t>(y) * out_width + x] = sum;
}

std::vector<double> on_cpu(const std::vector<float>& image, int height, int width,
                           const std::vector<float>& mask, int k, int stride)
{
    const int out_height = output_size(height, stride), out_width = output_size(width, stride);
    std::vector<double> out(static_cast<std::size_t>(out_height) * out_width);
    for (int y = 0; y < out_height; ++y)
        for (int x = 0; x < out_width; ++x)
            out[static_cast<std::size_t>(y) * out_width + x] =
                convolution_reference_at(image, height, width, mask, k, stride, y, x);
    return out;
}

DeviceBuffer<double> on_gpu(const std::vector<float>& image, int height, int width,
                           const std::vector<float>& mask, int k, int stride)
{
    const int out_height = output_size(height, stride), out_width = output_size(width, stride);
    const DeviceBuffer<float> d_image(image);
    const DeviceBuffer<double> d_mask(std::vector<double>(mask.begin(), mask.end()));
    DeviceBuffer<double> d_out(static_cast<std::size_t>(out_height) * out_width);
    const dim3 block(32, 8);
    const dim3 grid((out_width + block.x - 1) / block.x, (out_height + block.y - 1) / block.y);
    reference_kernel<<<grid, block>>>(d_image.data(), d_mask.data(), d_out.data(), height, width, k,
                                      stride, out_height, out_width);
    CUDA_CHECK_LAUNCH("the float64 reference convolution");
    return d_out;
}

}  // namespace

double convolution_reference_at(const std::vector<float>& image, int height, int width,
                                const std::vector<float>& mask, int k, int stride, int y, int x,
                                double* magnitude)
{
    const int r = (k - 1) / 2;
    double sum = 0, size = 0;
    for (int i = 0; i < k; ++i) {
        const int row = y * stride + i - r;
        if (row < 0 || row >= height) continue;
        for (int j = 0; j < k; ++j) {
            const int col = x * stride + j - r;
            if (col < 0 || col >= width) continue;
            const double term = static_cast<double>(mask[static_cast<std::size_t>(i) * k + j]) *
                                image[static_cast<std::size_t>(row) * width + col];
            sum += term;
            size += std::fabs(term);
        }
    }
    if (magnitude) *magnitude = size;
    return sum;
}

Reference convolution_reference(const std::vector<float>& image, int height, int width,
                                const std::vector<float>& mask, int k, int stride)
{
    check_arguments(image, height, width, mask, k, stride);
    const int out_height = output_size(height, stride), out_width = output_size(width, stride);
    if (static_cast<double>(out_height) * out_width * k * k <= kCpuLimit)
        return Reference(on_cpu(image, height, width, mask, k, stride));
    DeviceBuffer<double> out = on_gpu(image, height, width, mask, k, stride);
    // Trust, but verify: the GPU must match the CPU's float64 loop at the corners, where the
    // zero padding matters most, and wherever else we look.
    spot_check(out, out_height, out_width, [&](std::size_t y, std::size_t x) {
        double magnitude = 0;
        const double expected = convolution_reference_at(image, height, width, mask, k, stride, static_cast<int>(y),
                                                         static_cast<int>(x), &magnitude);
        return std::make_pair(expected, 1e-12 * (magnitude + 1));
    }, "convolution");
    return Reference(std::move(out));
}

Tolerance convolution_tolerance(int k)
{
    const double terms = static_cast<double>(k) * k;
    return Tolerance{0x1p-24 * terms * (k + 1), 0,
                     "2^-24 * k^2 * (k + 1): k^2 roundings, each at most 2^-24 of a running sum "
                     "below about k"};
}

}  // namespace workbook
