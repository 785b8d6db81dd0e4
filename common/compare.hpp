/// \file compare.hpp
/// \brief Comparing a kernel's output with a float64 reference, and saying where it differs.
///
/// The reference is computed in double precision, on the CPU or, for large cases, on the GPU
/// (a Reference holds it wherever it was made). Each check states its tolerance and why (a
/// Tolerance carries the reason), integers are compared exactly, and an element that still holds
/// the poison pattern is reported as never written rather than as a wrong value.
///
/// The judge compares on the GPU (compare_on_device): every element, the same bound, and no
/// copy of a large output to the host. Only an output that fails is read back and compared
/// again on the host, which is the authority and writes the report.
/// For 2-D outputs, a small text map shows where the mismatches fall: a swapped index, a
/// missing border or an unwritten tail each have a shape one recognises at a glance.
#pragma once

#include "buffers.hpp"
#include "random.hpp"

#include <cmath>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace workbook {

/// \brief How far a result may be from the float64 reference: |got - ref| <= abs + rel * |ref|.
struct Tolerance {
    double abs = 0;   ///< absolute part of the bound
    double rel = 0;   ///< part of the bound proportional to |ref|
    std::string why;  ///< where the numbers come from, printed with every failure

    /// \brief Exact equality, for integer results.
    static Tolerance exact() { return {0, 0, "integers must match exactly"}; }

    /// \brief Whether a result is close enough to its reference.
    /// \param got the kernel's value
    /// \param expected the reference value
    bool accepts(double got, double expected) const
    {
        // Not a number, or infinite, never passes: the labs' exact results are all finite, and
        // with an infinite reference the bound itself would be infinite.
        if (!std::isfinite(got) || !std::isfinite(expected)) return false;
        return std::fabs(got - expected) <= abs + rel * std::fabs(expected);
    }

    /// \brief The bound as text, e.g. "|got - ref| <= 1.2e-07*|ref| (one rounding of a + b)".
    std::string describe() const;
};

/// \brief The logical shape of an output: a vector of n, or a rows x cols row-major matrix.
struct Shape {
    std::size_t rows = 1;  ///< rows (1 for a vector)
    std::size_t cols = 0;  ///< columns (the length, for a vector)
    bool matrix = false;   ///< whether (row, col) is how an element is named

    /// \brief A vector of n elements.
    /// \param n the length
    /// \snippet common/judge.cu judge
    static Shape vector(std::size_t n) { return {1, n, false}; }
    /// \brief A rows x cols matrix, row-major.
    /// \param rows the number of rows
    /// \param cols the number of columns
    static Shape grid(std::size_t rows, std::size_t cols) { return {rows, cols, true}; }
    /// \brief The number of elements.
    std::size_t count() const { return rows * cols; }
};

/// \brief One element that failed the comparison.
struct Mismatch {
    std::size_t index = 0;   ///< flat index
    double expected = 0;     ///< the reference value
    double got = 0;          ///< the kernel's value (NaN when never written)
    bool unwritten = false;  ///< whether it still held the poison pattern
};

/// \brief The outcome of comparing one output with its reference.
struct Comparison {
    std::string name;               ///< the output's name in the lab, e.g. "c"
    Shape shape;                    ///< its shape
    Tolerance tolerance;            ///< the bound that was applied
    std::size_t wrong = 0;          ///< elements written with a value outside the bound
    std::size_t unwritten = 0;      ///< elements that still held the poison pattern
    double max_error = 0;           ///< largest |got - ref| among written elements (NaN if one is NaN)
    std::vector<Mismatch> first;    ///< the first few failing elements, in index order
    std::vector<std::pair<std::size_t, std::size_t>> bad_runs;  ///< first few runs [begin, end) of failing indices
    std::size_t bad_run_count = 0;  ///< how many such runs in all
    std::size_t first_bad = 0;      ///< lowest failing index (valid when !ok())
    std::size_t last_bad = 0;       ///< highest failing index (valid when !ok())
    std::vector<std::size_t> map_bad;        ///< failing elements per map cell (matrices)
    std::vector<std::size_t> map_unwritten;  ///< unwritten elements per map cell (matrices)

    /// \brief True when every element was written and within the tolerance.
    bool ok() const { return wrong == 0 && unwritten == 0; }
    /// \brief The number of failing elements.
    std::size_t bad() const { return wrong + unwritten; }
    /// \brief Names an element the way the lab does: "c[12]" or "out[3][4]".
    /// \param index the flat index
    std::string element(std::size_t index) const;
    /// \brief The map of a matrix output as text lines with a legend (empty for vectors).
    std::string map() const;
    /// \brief A multi-line account: counts, the tolerance, the first failures, the runs or map.
    std::string report() const;

    /// \brief Rows of the mismatch map for a matrix of this shape.
    std::size_t map_rows() const;
    /// \brief Columns of the mismatch map for a matrix of this shape.
    std::size_t map_cols() const;
    /// \brief Records one failing element; compare() calls it.
    /// \param index the flat index
    /// \param expected the reference value
    /// \param got the kernel's value
    /// \param never_written whether it held the poison pattern
    void record(std::size_t index, double expected, double got, bool never_written);
};

/// \brief Compares an output with its float64 reference.
/// \param name the output's name in the lab, used in every message
/// \param got the kernel's output, read back to the host
/// \param expected the reference, same length
/// \param shape how to name elements (vector or matrix)
/// \param tolerance the bound, with its reason
/// \snippet common/judge.cu judge
template <class T>
Comparison compare(const std::string& name, const std::vector<T>& got,
                   const std::vector<double>& expected, Shape shape, const Tolerance& tolerance)
{
    Comparison result;
    result.name = name;
    result.shape = shape;
    result.tolerance = tolerance;
    if (shape.matrix) {
        result.map_bad.assign(result.map_rows() * result.map_cols(), 0);
        result.map_unwritten.assign(result.map_bad.size(), 0);
    }
    const std::size_t n = got.size() < expected.size() ? got.size() : expected.size();
    for (std::size_t i = 0; i < n; ++i) {
        const double value = static_cast<double>(got[i]);
        const bool never_written = is_poison(got[i]);
        const double error = std::fabs(value - expected[i]);
        if (!never_written && !(error <= result.max_error)) result.max_error = error;  // NaN stays NaN
        if (!tolerance.accepts(value, expected[i])) result.record(i, expected[i], value, never_written);
    }
    // A length mismatch is a checker bug, not a student's: report every missing element.
    for (std::size_t i = n; i < expected.size(); ++i) result.record(i, expected[i], NAN, true);
    return result;
}

/// \brief A float64 reference, computed on the host or on the GPU, and copied to the other side
/// only when asked: the judge compares on the GPU (device()), and reads the values on the host
/// (host()) only to report a failure.
///
/// \snippet tests/matmul_cases.hpp reference
class Reference {
public:
    Reference() = default;
    /// \brief A reference computed on the host.
    /// \param values one value per output element
    explicit Reference(std::vector<double> values) : host_(std::move(values)), size_(host_.size()) {}
    /// \brief A reference computed on the GPU.
    /// \param values one value per output element, in device memory
    explicit Reference(DeviceBuffer<double> values)
        : device_(std::make_shared<DeviceBuffer<double>>(std::move(values))), size_(device_->size())
    {
    }
    /// \brief The number of values.
    std::size_t size() const { return size_; }
    /// \brief The values on the host (read back from the GPU the first time, if made there).
    const std::vector<double>& host() const
    {
        if (host_.size() != size_) host_ = device_->download();
        return host_;
    }
    /// \brief The values on the GPU (copied there the first time, if made on the host).
    const double* device() const
    {
        if (!device_) device_ = std::make_shared<DeviceBuffer<double>>(host_);
        return device_->data();
    }

private:
    mutable std::vector<double> host_;
    mutable std::shared_ptr<DeviceBuffer<double>> device_;
    std::size_t size_ = 0;
};

/// \brief Checks a reference computed on the GPU against the CPU's float64 loop before any output
/// is compared with it: at the four corners of its rows x cols grid, where edges and padding
/// matter most, and at 256 elements drawn at random. A disagreement is a bug in the checker,
/// not the student's, and throws std::runtime_error.
/// \param values the reference's values, read one at a time with at(index): a DeviceBuffer (or,
///        in a test, a std::vector)
/// \param rows its rows (1 for a vector)
/// \param cols its columns, row-major
/// \param on_cpu (row, col) -> std::pair{the CPU's value, the largest difference allowed}
/// \param what the reference's name, for the message and the seed, e.g. "gemm"
/// \snippet common/tests/test_common.cpp spot check
template <class Values, class OnCpu>
void spot_check(const Values& values, std::size_t rows, std::size_t cols, OnCpu on_cpu, const std::string& what)
{
    constexpr int kCorners = 4, kRandom = 256;
    Rng rng(seed_for(what + " reference spot checks"));
    for (int s = 0; s < kCorners + kRandom; ++s) {
        std::size_t row = static_cast<std::size_t>(rng.next() % rows);
        std::size_t col = static_cast<std::size_t>(rng.next() % cols);
        if (s < kCorners) {
            row = s % 2 == 1 ? rows - 1 : 0;
            col = s / 2 == 1 ? cols - 1 : 0;
        }
        const std::pair<double, double> cpu = on_cpu(row, col);
        const double gpu = values.at(row * cols + col);
        if (!(std::fabs(gpu - cpu.first) <= cpu.second))  // NaN fails too
            throw std::runtime_error("checker bug: the GPU's " + what + " reference and the CPU disagree at [" +
                                     std::to_string(row) + "][" + std::to_string(col) + "]: " +
                                     std::to_string(gpu) + " against " + std::to_string(cpu.first));
    }
}

/// \brief Compares an output in device memory with its reference, on the GPU.
///
/// Every element is held to the same bound as compare(). When all pass, only the largest error
/// comes back to the host. When any fails, the output and the reference are read back and
/// compared on the host, whose Comparison (first failures, runs, map) is returned.
/// \param name the output's name in the lab
/// \param got the output, shape.count() floats in device memory
/// \param expected the reference, shape.count() values
/// \param shape how to name elements
/// \param tolerance the bound, with its reason
/// \snippet common/judge.cu judge
Comparison compare_on_device(const std::string& name, const float* got, const Reference& expected, Shape shape,
                             const Tolerance& tolerance);

/// \brief Compares an output in device memory with another float output there, on the GPU, as
/// compare_on_device does with a float64 reference (the judge sets a timed run's output beside
/// the reference solution's for the same input).
/// \param name the output's name in the lab
/// \param got the output, shape.count() floats in device memory
/// \param expected the other output, shape.count() floats in device memory
/// \param shape how to name elements
/// \param tolerance the bound, with its reason
/// \snippet common/judge_speed.cu fresh inputs
Comparison compare_on_device(const std::string& name, const float* got, const float* expected, Shape shape,
                             const Tolerance& tolerance);

}  // namespace workbook
