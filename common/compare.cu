#include "compare.hpp"

#include "check.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <sstream>

namespace workbook {

namespace {
constexpr std::size_t kShownMismatches = 8;
constexpr std::size_t kShownRuns = 4;
constexpr std::size_t kMapMaxRows = 16;
constexpr std::size_t kMapMaxCols = 64;

std::string number(double v)
{
    char text[64];
    std::snprintf(text, sizeof text, "%.9g", v);
    return text;
}

// Index i falls in cell floor(i * cells / size), so cell c holds the indices from
// ceil(c * size / cells) up to, not including, ceil((c + 1) * size / cells).
std::size_t cell_of(std::size_t i, std::size_t size, std::size_t cells) { return i * cells / size; }
std::size_t cell_start(std::size_t c, std::size_t size, std::size_t cells)
{
    return (c * size + cells - 1) / cells;
}
std::size_t cell_size(std::size_t c, std::size_t size, std::size_t cells)
{
    return cell_start(c + 1, size, cells) - cell_start(c, size, cells);
}
}  // namespace

std::string Tolerance::describe() const
{
    std::string text;
    if (abs == 0 && rel == 0) {
        text = "exact match";
    } else {
        text = "|got - ref| <= ";
        if (abs != 0) text += number(abs);
        if (abs != 0 && rel != 0) text += " + ";
        if (rel != 0) text += number(rel) + "*|ref|";
    }
    if (!why.empty()) text += " (" + why + ")";
    return text;
}

std::size_t Comparison::map_rows() const { return std::min(shape.rows, kMapMaxRows); }
std::size_t Comparison::map_cols() const { return std::min(shape.cols, kMapMaxCols); }

std::string Comparison::element(std::size_t index) const
{
    if (!shape.matrix) return name + "[" + std::to_string(index) + "]";
    return name + "[" + std::to_string(index / shape.cols) + "][" +
           std::to_string(index % shape.cols) + "]";
}

void Comparison::record(std::size_t index, double expected, double got, bool never_written)
{
    if (bad() == 0) first_bad = index;
    last_bad = index;
    (never_written ? unwritten : wrong) += 1;
    if (first.size() < kShownMismatches) first.push_back({index, expected, got, never_written});
    if (!bad_runs.empty() && bad_runs.back().second == index) {
        bad_runs.back().second = index + 1;
    } else {
        ++bad_run_count;
        if (bad_runs.size() < kShownRuns) bad_runs.push_back({index, index + 1});
    }
    if (shape.matrix && shape.cols > 0) {
        const std::size_t cell = cell_of(index / shape.cols, shape.rows, map_rows()) * map_cols() +
                                 cell_of(index % shape.cols, shape.cols, map_cols());
        map_bad[cell] += 1;
        map_unwritten[cell] += never_written;
    }
}

std::string Comparison::map() const
{
    if (!shape.matrix || map_bad.empty()) return "";
    const std::size_t rows = map_rows(), cols = map_cols();
    std::ostringstream out;
    out << "  where the failures are (" << shape.rows << " x " << shape.cols << " " << name
        << ", row 0 at the top; each cell is about " << (shape.rows + rows - 1) / rows << " x "
        << (shape.cols + cols - 1) / cols << " elements):\n";
    out << "    +" << std::string(cols, '-') << "+\n";
    for (std::size_t r = 0; r < rows; ++r) {
        out << "    |";
        for (std::size_t c = 0; c < cols; ++c) {
            const std::size_t cell = r * cols + c;
            const std::size_t total = cell_size(r, shape.rows, rows) * cell_size(c, shape.cols, cols);
            const std::size_t bad_here = map_bad[cell], unwritten_here = map_unwritten[cell];
            char mark = '.';
            if (bad_here > unwritten_here) mark = bad_here == total ? 'X' : 'x';
            else if (bad_here > 0) mark = bad_here == total ? 'U' : 'u';
            out << mark;
        }
        out << "|\n";
    }
    out << "    +" << std::string(cols, '-') << "+\n";
    out << "    . all right   X all wrong   x some wrong   U never written   u some never written\n";
    return out.str();
}

std::string Comparison::report() const
{
    std::ostringstream out;
    const std::size_t total = shape.count();
    if (ok()) {
        out << name << ": all " << total << " elements match (" << tolerance.describe()
            << "; largest error " << number(max_error) << ")\n";
        return out.str();
    }
    out << name << ": " << bad() << " of " << total << " elements are wrong";
    if (unwritten > 0 && wrong > 0)
        out << " (" << unwritten << " never written, " << wrong << " with a wrong value)";
    else if (unwritten > 0)
        out << " (all of them never written: they still hold the poison value)";
    out << "\n  tolerance: " << tolerance.describe() << "\n";
    // When nothing was written, a few lines make the point; the rest would only repeat it.
    const std::size_t shown = wrong == 0 ? std::min<std::size_t>(first.size(), 3) : first.size();
    for (std::size_t k = 0; k < shown; ++k) {
        const Mismatch& m = first[k];
        out << "  " << element(m.index) << ": expected " << number(m.expected) << ", got ";
        out << (m.unwritten ? std::string("nothing (never written)") : number(m.got)) << "\n";
    }
    if (bad() > shown) out << "  ... and " << bad() - shown << " more\n";
    if (shape.matrix) {
        out << map();
    } else {
        out << "  failing indices:";
        for (const auto& run : bad_runs) {
            if (run.second - run.first == 1) out << " " << run.first;
            else out << " " << run.first << ".." << run.second - 1;
        }
        if (bad_run_count > bad_runs.size())
            out << " ... (" << bad_run_count << " separate runs in all)";
        out << "\n";
    }
    return out.str();
}

namespace {

// One pass over the output: counts the elements outside the bound and finds the largest error of
// the others. The bound is computed without fused multiply-adds, rounded as the host rounds it,
// so that both sides judge every element alike; an output the GPU fails is compared again on
// the host anyway.
template <class Expected>
__global__ void compare_kernel(const float* got, const Expected* expected, std::size_t n, double abs,
                               double rel, unsigned long long* bad, unsigned long long* largest_error)
{
    unsigned long long local_bad = 0;
    double local_largest = 0;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        const double reference = expected[i];
        const double error = fabs(__dsub_rn(static_cast<double>(got[i]), reference));
        // As Tolerance::accepts: NaN (the poison too) and infinity never pass, on either side.
        if (isfinite(error) && isfinite(reference) && error <= __dadd_rn(abs, __dmul_rn(rel, fabs(reference))))
            local_largest = fmax(local_largest, error);
        else ++local_bad;
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        local_bad += __shfl_down_sync(0xffffffffu, local_bad, offset);
        local_largest = fmax(local_largest, __shfl_down_sync(0xffffffffu, local_largest, offset));
    }
    if (threadIdx.x % 32 == 0) {
        if (local_bad > 0) atomicAdd(bad, local_bad);
        // Non-negative doubles order as their bit patterns do.
        atomicMax(largest_error, static_cast<unsigned long long>(__double_as_longlong(local_largest)));
    }
}

// compare_on_device's work for a reference of either precision; `host_expected` reads the
// reference back, only when an element fails.
template <class Expected, class HostExpected>
Comparison compare_on_gpu(const std::string& name, const float* got, const Expected* expected, Shape shape,
                          const Tolerance& tolerance, HostExpected host_expected)
{
    const std::size_t n = shape.count();
    DeviceBuffer<unsigned long long> counts(2);  // failing elements, the largest error's bits
    counts.fill_bytes(0);
    if (n > 0) {
        const int blocks = static_cast<int>(std::min<std::size_t>((n + 255) / 256, 4096));
        compare_kernel<<<blocks, 256>>>(got, expected, n, tolerance.abs, tolerance.rel, counts.data(),
                                        counts.data() + 1);
        CUDA_CHECK_LAUNCH("the judge's comparison with the reference");
    }
    const std::vector<unsigned long long> result = counts.download();
    if (result[0] > 0) {
        // Read back and compared again on the host, which names every failure.
        std::vector<float> host(n);
        CUDA_CHECK(cudaMemcpy(host.data(), got, n * sizeof(float), cudaMemcpyDeviceToHost));
        return compare(name, host, host_expected(), shape, tolerance);
    }
    Comparison comparison;
    comparison.name = name;
    comparison.shape = shape;
    comparison.tolerance = tolerance;
    std::memcpy(&comparison.max_error, &result[1], sizeof(double));
    return comparison;
}

}  // namespace

Comparison compare_on_device(const std::string& name, const float* got, const Reference& expected, Shape shape,
                             const Tolerance& tolerance)
{
    if (expected.size() != shape.count())
        throw std::invalid_argument("compare_on_device: the reference's size is not the output's");
    return compare_on_gpu(name, got, expected.device(), shape, tolerance, [&] { return expected.host(); });
}

Comparison compare_on_device(const std::string& name, const float* got, const float* expected, Shape shape,
                             const Tolerance& tolerance)
{
    return compare_on_gpu(name, got, expected, shape, tolerance, [&] {
        std::vector<float> values(shape.count());
        CUDA_CHECK(cudaMemcpy(values.data(), expected, values.size() * sizeof(float), cudaMemcpyDeviceToHost));
        return std::vector<double>(values.begin(), values.end());
    });
}

}  // namespace workbook
