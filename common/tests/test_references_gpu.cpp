// The judge's GPU side against its host side: compare_on_device must judge every element as
// compare() does, and the references computed on the GPU must equal the CPU's. Needs a GPU:
// without one it exits 77, which ctest reports as skipped.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "common/workbook.hpp"

#include <cmath>
#include <cstdio>
#include <vector>

using namespace workbook;

namespace {

// The comparison of `got` on the GPU and on the host: they must agree on everything the report uses.
void check_agreement(const std::vector<float>& got, const std::vector<double>& expected, Shape shape,
                     const Tolerance& tolerance)
{
    const DeviceBuffer<float> device_got(got);
    const Reference reference(expected);
    const Comparison on_gpu = compare_on_device("out", device_got.data(), reference, shape, tolerance);
    const Comparison on_host = compare("out", got, expected, shape, tolerance);
    CHECK(on_gpu.ok() == on_host.ok());
    CHECK(on_gpu.wrong == on_host.wrong);
    CHECK(on_gpu.unwritten == on_host.unwritten);
    CHECK(on_gpu.max_error == on_host.max_error);
    CHECK(on_gpu.report() == on_host.report());
}

}  // namespace

TEST_CASE("compare_on_device: a right output passes with the host's largest error")
{
    const std::size_t n = 1000003;
    const std::vector<float> a = random_floats(n, 1), b = random_floats(n, 2);
    std::vector<float> sum(n);
    for (std::size_t i = 0; i < n; ++i) sum[i] = a[i] + b[i];
    const std::vector<double> expected = sum_reference(a, b).host();
    check_agreement(sum, expected, Shape::vector(n), Tolerance{0, 0x1p-23, "one rounding"});
}

TEST_CASE("compare_on_device: wrong, unwritten, NaN and borderline elements are found as on the host")
{
    const std::size_t rows = 300, cols = 701;
    std::vector<float> got = random_floats(rows * cols, 3);
    std::vector<double> expected(got.begin(), got.end());
    const Tolerance tolerance{1e-3, 1e-3, "a test bound"};
    check_agreement(got, expected, Shape::grid(rows, cols), tolerance);
    got[5] += 0.5f;                                              // wrong
    std::vector<float> poison(1);
    poison_host(poison);
    got[7000] = poison[0];                                       // never written
    got[9000] = std::nanf("");                                   // a computed NaN
    got[rows * cols - 1] = INFINITY;
    // Exactly on the bound and just past it: the GPU must round the bound as the host does.
    expected[100] = 0.75;
    got[100] = static_cast<float>(0.75 + 1e-3 + 1e-3 * 0.75);
    expected[101] = -0.5;
    got[101] = std::nextafter(static_cast<float>(-0.5 - 1e-3 - 0.5e-3), -1.0f);
    check_agreement(got, expected, Shape::grid(rows, cols), tolerance);
}

TEST_CASE("references on the GPU equal the CPU's: a sum, a transpose, a product, a convolution")
{
    // Sizes above the CPU limits, so that the GPU paths run (and spot-check themselves).
    const std::size_t n = (std::size_t{1} << 22) + 3;
    const std::vector<float> a = random_floats(n, 4), b = random_floats(n, 5);
    const std::vector<double> sum = sum_reference(a, b).host();
    for (std::size_t i : {std::size_t{0}, n / 2, n - 1}) CHECK(sum[i] == static_cast<double>(a[i]) + b[i]);

    const int rows = 2049, cols = 2050;
    const std::vector<float> in = random_floats(static_cast<std::size_t>(rows) * cols, 6);
    const std::vector<double> out = transpose_reference(in, rows, cols).host();
    for (int r : {0, 1000, rows - 1})
        for (int c : {0, 7, cols - 1}) CHECK(out[static_cast<std::size_t>(c) * rows + r] == in[static_cast<std::size_t>(r) * cols + c]);

    const int m = 700, k = 600, s = 650;  // 273 M multiply-adds: past the CPU limit
    const std::vector<float> x = random_floats(static_cast<std::size_t>(m) * k, 7), y = random_floats(static_cast<std::size_t>(k) * s, 8);
    const Reference product = gemm_reference(x, y, m, k, s);
    double c00 = 0;
    for (int p = 0; p < k; ++p) c00 += static_cast<double>(x[p]) * y[static_cast<std::size_t>(p) * s];
    CHECK(std::fabs(product.host()[0] - c00) < 1e-9);

    const int height = 1500, width = 1700, mask_k = 7;
    const std::vector<float> image = random_floats(static_cast<std::size_t>(height) * width, 9);
    const std::vector<float> mask = random_floats(mask_k * mask_k, 10);
    const Reference convolution = convolution_reference(image, height, width, mask, mask_k);
    CHECK(std::fabs(convolution.host()[0] - convolution_reference_at(image, height, width, mask, mask_k, 1, 0, 0)) < 1e-12);
}

int main(int argc, char** argv)
{
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("skipped: no CUDA device, so the GPU side of the comparison cannot be tested here\n");
        return 77;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
