// What the checkers of labs 04 and 05 share: the product's test data and float64 reference, the
// tolerance derived from k and the precision of the inputs, the correctness check with a
// diagnosis, and the GFLOP/s test against the reference solution and cuBLAS in the same precision.
#pragma once

#include "grading/judge/checker.hpp"

#include <array>
#include <cmath>
#include <initializer_list>
#include <iomanip>
#include <memory>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace matmul {

using namespace workbook;

/// Every matmul launch: C (m x n) = A (m x k) · B (k x n), row-major, on the device.
using Launch = std::function<void(const float* a, const float* b, float* c, int m, int k, int n)>;

constexpr int kTimedSize = 4096;

inline std::string shape(int m, int k, int n)
{
    return std::to_string(m) + " x " + std::to_string(k) + " x " + std::to_string(n);
}

struct Case {
    Case(int m, int k, int n);
    int m = 0, k = 0, n = 0;
    std::vector<float> a, b;
    Reference c;  // float64
    DeviceBuffer<float> device_a, device_b;
};

inline Case::Case(int m_, int k_, int n_)
    : m(m_), k(k_), n(n_),
      a(random_floats(static_cast<std::size_t>(m_) * k_, seed_for("a " + shape(m_, k_, n_)))),
      b(random_floats(static_cast<std::size_t>(k_) * n_, seed_for("b " + shape(m_, k_, n_)))),
      device_a(a), device_b(b)
{
    //! [reference]
    c = gemm_reference(a, b, m, k, n);
    //! [reference]
}

/// The case of this shape: at 4096 the correctness and performance tests share one.
inline std::shared_ptr<const Case> shared_case(int m, int k, int n)
{
    return cached_case<Case>(static_cast<double>(m) * n, m, k, n);
}

/// What a step multiplies: FP32 inputs (labs 04 and 05, and 05's steps 1 and 2), or TF32 on the
/// tensor cores, rounded by the kernel (step 3) or cut by the hardware (step 4).
using Inputs = GemmInputs;

/// The tolerance of a product with k terms (common/gemm_reference.hpp says why).
//! [tolerance]
inline Tolerance tolerance(int k, Inputs inputs = Inputs::fp32) { return gemm_tolerance(k, inputs); }
//! [tolerance]

// Errors spread over C (one element in a thousand or more), none larger than TF32 inputs can
// make: the signature of a product computed in TF32.
inline bool errors_of_tf32_size(const Case& t, const Failure& f)
{
    const Comparison& result = f.comparison;
    return result.unwritten == 0 && result.wrong * 1000 >= f.got.size() &&
           result.max_error <= tolerance(t.k, Inputs::tf32_truncated).abs;  // false for NaN
}

// What the pattern of failures suggests, the likeliest cause first (the judge explains races).
inline std::string diagnose(const Case& t, const Failure& f, const std::string& lab_hint, Inputs inputs)
{
    const Comparison& result = f.comparison;
    if (!f.guards.intact())
        return "Threads wrote outside C. Blocks at the right and bottom edges stick out past C: only "
               "write when row < m and col < n.";
    if (result.unwritten == f.got.size())
        return "Nothing was written to C: does the kernel write c[row * n + col], and does the "
               "launch function launch it?";
    std::size_t nans = 0, transposed = 0;
    for (const Mismatch& m : result.first) {
        nans += !m.unwritten && std::isnan(m.got);
        const std::size_t i = m.index / t.n, j = m.index % t.n;
        transposed += t.m == t.n && !m.unwritten && std::fabs(m.got - t.c.host()[j * t.n + i]) < 1e-3;
    }
    if (nans > 0 && nans == result.first.size())
        return "C holds NaN where sums belong: does the kernel add into C (c[...] += ...) before "
               "setting it? The checker fills C with NaN before each run, so that shows. Sum in a "
               "local variable and write C once.";
    if (transposed > 0 && transposed == result.first.size())
        return "C came out transposed: row and col are swapped. x (threadIdx.x, blockIdx.x) runs "
               "along the columns of C, y along its rows.";
    if (inputs == Inputs::fp32 && errors_of_tf32_size(t, f)) {
        std::ostringstream text;
        text << "Every element is close, but " << result.wrong << " are beyond the FP32 tolerance, by errors of "
             << "the size inputs rounded to TF32 give (the largest " << std::setprecision(3) << result.max_error
             << ", where " << result.tolerance.abs << " is allowed): this step is graded in FP32, and tensor cores "
             << "(TF32) or inputs rounded to fewer bits do not meet its tolerance. Multiply the floats as they are.";
        return text.str();
    }
    if (result.unwritten > 0)
        return "Some elements of C were never written: does the grid cover C, rounding up in both "
               "directions (grid.x along the n columns, grid.y along the m rows)?" + lab_hint;
    return "Wrong values: check the indices, A[row][p] = a[row * k + p] and B[p][col] = "
           "b[p * n + col], and the map above." + lab_hint;
}

/// A product C = A·B of m x k by k x n: what the judge runs and compares. `address` is the
/// student's function that `launch` calls (null when the file lacks it); `inputs` the precision
/// the step multiplies in, which sets the tolerance.
inline Call call(const Launch& launch, const void* address, const std::string& function, int m, int k, int n,
                 const std::string& lab_hint = "", Inputs inputs = Inputs::fp32)
{
    const std::shared_ptr<const Case> t = shared_case(m, k, n);
    Call c;
    c.function = function;
    c.address = address;
    c.what = "m x k x n = " + shape(m, k, n);
    c.output = "C";
    c.shape = Shape::grid(m, n);
    c.tolerance = tolerance(k, inputs);
    c.expected = [t]() -> const Reference& { return t->c; };
    c.run = [t, launch](float* out) { launch(t->device_a.data(), t->device_b.data(), out, t->m, t->k, t->n); };
    c.inputs = {{t->device_a.data(), t->device_a.size(), "a"}, {t->device_b.data(), t->device_b.size(), "b"}};
    c.diagnose = [t, lab_hint, inputs](const Failure& f) { return diagnose(*t, f, lab_hint, inputs); };
    c.race_hint = "Does every thread wait at a __syncthreads() after loading the tiles, and again before "
                  "the next phase overwrites them?";
    return c;
}

/// What a product of these inputs is set beside: cuBLAS SGEMM for FP32, cuBLAS TF32 for TF32.
inline Ceiling ceiling_of(Inputs inputs) { return inputs == Inputs::fp32 ? Ceiling::fp32 : Ceiling::tf32; }

/// GFLOP/s (2mnk over the time) at 4096^3 against the reference and cuBLAS in the step's precision
/// (SGEMM in FP32, or TF32 on the tensor cores); 1024 and 2048 reported. `ceiling` is what the step
/// is set beside and bounded by, when its inputs do not say it (step 6: FP32's accuracy from the
/// tensor cores, set beside SGEMM and bounded by the TF32 peak).
inline void check_performance(const Launch& yours, const void* address, const Launch& reference,
                              const std::string& function, Inputs inputs, Ceiling ceiling)
{
    if (!have_function(address, function.c_str())) return;
    const int s = kTimedSize;
    const std::shared_ptr<const Case> t = shared_case(s, s, s);
    //! [versus sgemm]
    const SpeedVerdict verdict = check_speed(call(yours, address, function, s, s, s, "", inputs), [t, reference](float* out) {
        reference(t->device_a.data(), t->device_b.data(), out, t->m, t->k, t->n);
    }, {2.0 * s * s * static_cast<double>(s), ceiling});
    //! [versus sgemm]
    if (verdict.profiled || verdict.yours.empty()) return;
    const bool sgemm = ceiling != Ceiling::tf32;
    for (int size : {1024, 2048}) {
        const Case small(size, size, size);
        DeviceBuffer<float> c(small.c.size());
        const double flops = 2.0 * size * size * static_cast<double>(size);
        const double gflops = time_gpu([&] {
            yours(small.device_a.data(), small.device_b.data(), c.data(), size, size, size);
        }).giga_per_second(flops);
        //! [cublas]
        const double cublas = sgemm ? sgemm_gflops(size, size, size) : tf32_gemm_gflops(size, size, size);
        //! [cublas]
        MESSAGE("your kernel at " << size << ": " << std::lround(gflops) << " GFLOP/s = "
                << std::lround(100 * gflops / cublas) << "% of cuBLAS " << std::string(sgemm ? "SGEMM" : "TF32")
                << " at this size (" << std::lround(cublas) << " GFLOP/s)");
    }
}

/// The same, set beside the ceiling of the step's inputs.
inline void check_performance(const Launch& yours, const void* address, const Launch& reference,
                              const std::string& function, Inputs inputs = Inputs::fp32)
{
    check_performance(yours, address, reference, function, inputs, ceiling_of(inputs));
}

}  // namespace matmul
