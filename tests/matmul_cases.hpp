// What the checkers of labs 04 and 05 share: the product's test data and float64 reference, the
// tolerance derived from k, the correctness check with a diagnosis, and the GFLOP/s test against
// the reference solution and cuBLAS.
#pragma once

#include "common/workbook.hpp"

#include <array>
#include <cmath>
#include <initializer_list>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace matmul {

using namespace workbook;

/// Every matmul launch: C (m x n) = A (m x k) · B (k x n), row-major, on the device.
using Launch = std::function<void(const float* a, const float* b, float* c, int m, int k, int n)>;

// The student's kernel may take up to 1.25x the reference's time before losing the points.
constexpr double kSpeedFloor = 0.8;
constexpr int kTimedSize = 4096;

struct Case {
    int m = 0, k = 0, n = 0;
    std::vector<float> a, b;
    std::vector<double> c;  // float64 reference
};

inline std::string shape(int m, int k, int n)
{
    return std::to_string(m) + " x " + std::to_string(k) + " x " + std::to_string(n);
}

inline Case make_case(int m, int k, int n)
{
    Case t;
    t.m = m, t.k = k, t.n = n;
    t.a = random_floats(static_cast<std::size_t>(m) * k, seed_for("a " + shape(m, k, n)));
    t.b = random_floats(static_cast<std::size_t>(k) * n, seed_for("b " + shape(m, k, n)));
    //! [reference]
    t.c = gemm_reference(t.a, t.b, m, k, n);
    //! [reference]
    return t;
}

/// The tolerance of every product with k terms (common/gemm_reference.hpp says why).
//! [tolerance]
inline Tolerance tolerance(int k) { return gemm_tolerance(k); }
//! [tolerance]

// What the pattern of failures suggests, the likeliest cause first.
inline std::string diagnose(const Case& t, const Comparison& result, const GuardReport& guards,
                            const std::vector<float>& got, bool changes_between_runs,
                            const std::string& lab_hint)
{
    if (!guards.intact())
        return "Threads wrote outside C. Blocks at the right and bottom edges stick out past C: only "
               "write when row < m and col < n.";
    if (result.unwritten == got.size())
        return "Nothing was written to C: does the kernel write c[row * n + col], and does the "
               "launch function launch it?";
    if (changes_between_runs)
        return "The result changes from one run to the next on the same input: a race. Does every "
               "thread wait at a __syncthreads() after loading the tiles, and again before the next "
               "phase overwrites them?";
    std::size_t nans = 0, transposed = 0;
    for (const Mismatch& m : result.first) {
        nans += !m.unwritten && std::isnan(m.got);
        const std::size_t i = m.index / t.n, j = m.index % t.n;
        transposed += t.m == t.n && !m.unwritten && std::fabs(m.got - t.c[j * t.n + i]) < 1e-3;
    }
    if (nans > 0 && nans == result.first.size())
        return "C holds NaN where sums belong: does the kernel add into C (c[...] += ...) before "
               "setting it? The checker fills C with NaN before each run, so that shows. Sum in a "
               "local variable and write C once.";
    if (transposed > 0 && transposed == result.first.size())
        return "C came out transposed: row and col are swapped. x (threadIdx.x, blockIdx.x) runs "
               "along the columns of C, y along its rows.";
    if (result.unwritten > 0)
        return "Some elements of C were never written: does the grid cover C, rounding up in both "
               "directions (grid.x along the n columns, grid.y along the m rows)?" + lab_hint;
    return "Wrong values: check the indices, A[row][p] = a[row * k + p] and B[p][col] = "
           "b[p * n + col], and the map above." + lab_hint;
}

/// Runs a product on poisoned, guarded C twice (three times on a failure, to tell a race).
inline void check(Launch launch, const char* function, int m, int k, int n, const std::string& lab_hint = "")
{
    if (missing(launch)) {
        have_function(nullptr, function);
        return;
    }
    const Case t = make_case(m, k, n);
    const DeviceBuffer<float> a(t.a), b(t.b);
    GuardedOutput<float> c(t.c.size());
    std::vector<float> first_failure;
    for (int run = 1; run <= 3; ++run) {
        c.poison();
        launch(a.data(), b.data(), c.data(), m, k, n);
        CUDA_CHECK_LAUNCH(function);
        const std::vector<float> got = c.download();
        const Comparison result = compare("C", got, t.c, Shape::grid(m, n), tolerance(k));
        const GuardReport guards = c.check_guards();
        if (result.ok() && guards.intact()) {
            if (run == 2) return;
            continue;
        }
        if (first_failure.empty() && run < 3) {
            first_failure = got;
            continue;
        }
        // Compared bit for bit: NaN != NaN would make any NaN output look like a race.
        const bool changes = !first_failure.empty() &&
                             std::memcmp(first_failure.data(), got.data(), got.size() * sizeof(float)) != 0;
        FAIL_CHECK(std::string(function) << ", m x k x n = " << shape(m, k, n) << ":\n"
                   << (guards.intact() ? "" : "  " + guards.describe("C", t.c.size()) + "\n")
                   << result.report() << "Hint: " << diagnose(t, result, guards, got, changes, lab_hint));
        return;
    }
}

/// GFLOP/s (2mnk over the time) at 4096^3 against the reference and cuBLAS; 1024 and 2048 reported.
inline void check_performance(Launch yours, Launch reference, const char* function)
{
    if (missing(yours)) {
        have_function(nullptr, function);
        return;
    }
    for (int size : {1024, 2048}) {
        const Case t = make_case(size, size, size);
        const DeviceBuffer<float> a(t.a), b(t.b);
        DeviceBuffer<float> c(t.c.size());
        const double flops = 2.0 * size * size * static_cast<double>(size);
        const double gflops = time_gpu([&] { yours(a.data(), b.data(), c.data(), size, size, size); })
                                  .giga_per_second(flops);
        //! [cublas]
        const double cublas = sgemm_gflops(size, size, size);
        //! [cublas]
        MESSAGE("your kernel at " << size << ": " << std::lround(gflops) << " GFLOP/s = "
                << std::lround(100 * gflops / cublas) << "% of cuBLAS SGEMM at this size ("
                << std::lround(cublas) << " GFLOP/s)");
    }
    const int s = kTimedSize;
    const Case t = make_case(s, s, s);
    const DeviceBuffer<float> a(t.a), b(t.b);
    GuardedOutput<float> c(t.c.size());
    yours(a.data(), b.data(), c.data(), s, s, s);
    CUDA_CHECK_LAUNCH(function);
    const Comparison result = compare("C", c.download(), t.c, Shape::grid(s, s), tolerance(s));
    if (!result.ok() || !c.check_guards().intact()) {
        FAIL_CHECK("not timed: " << std::string(function) << " is wrong at " << shape(s, s, s)
                   << ". Make the correctness tests pass first.\n" << result.report());
        return;
    }
    const double flops = 2.0 * s * s * static_cast<double>(s);
    const Timing mine = time_gpu([&] { yours(a.data(), b.data(), c.data(), s, s, s); });
    const Timing theirs = time_gpu([&] { reference(a.data(), b.data(), c.data(), s, s, s); });
    //! [versus sgemm]
    MESSAGE("your kernel at 4096: " << versus_sgemm(mine.giga_per_second(flops)) << ", " << mine.describe());
    //! [versus sgemm]
    MESSAGE("reference at 4096:   " << versus_sgemm(theirs.giga_per_second(flops)) << ", " << theirs.describe());
    const double speed = theirs.seconds() / mine.seconds();
    if (speed < kSpeedFloor)
        FAIL_CHECK("your kernel takes " << 1 / speed << "x the reference's time (at most "
                   << 1 / kSpeedFloor << "x earns these points).");
}

/// Runs a product once and fails the test unless it wrote every element of C: the precondition
/// of the sanitizer tests, so that a kernel that does nothing cannot pass them.
inline bool writes_everything(Launch launch, const char* function, int m, int k, int n)
{
    if (missing(launch)) return have_function(nullptr, function);
    const Case t = make_case(m, k, n);
    const DeviceBuffer<float> a(t.a), b(t.b);
    GuardedOutput<float> c(t.c.size());
    launch(a.data(), b.data(), c.data(), m, k, n);
    CUDA_CHECK_LAUNCH(function);
    if (count_poison(c.download().data(), t.c.size()) == 0 && c.check_guards().intact()) return true;
    FAIL_CHECK("not checked: " << std::string(function) << " leaves elements of C unwritten (or writes "
               "outside C) at " << shape(m, k, n) << ". Make the correctness tests pass first.");
    return false;
}

/// Runs a product on small awkward shapes: the work the sanitizer probes observe.
inline void run_small(const Launch& launch, std::initializer_list<std::array<int, 3>> shapes)
{
    for (const auto& s : shapes) {
        const Case t = make_case(s[0], s[1], s[2]);
        const DeviceBuffer<float> a(t.a), b(t.b);
        DeviceBuffer<float> c(t.c.size());
        launch(a.data(), b.data(), c.data(), s[0], s[1], s[2]);
        CUDA_CHECK_LAUNCH("a matrix product");
    }
}

}  // namespace matmul
