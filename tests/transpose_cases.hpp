// What the checkers of labs 02 and 03 share: the transpose's test data, its correctness check
// with a diagnosis, and its bandwidth test against the reference solution.
#pragma once

#include "grading/judge/checker.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace transpose {

using namespace workbook;

/// The signature of every transpose launch: out (cols x rows) = in (rows x cols)^T, on the device.
using Launch = void (*)(const float* in, float* out, int rows, int cols);

inline const Tolerance& exact_copy()
{
    static const Tolerance t{0, 0, "a transpose moves values without changing them"};
    return t;
}

struct Case {
    Case(int rows, int cols);
    int rows = 0, cols = 0;
    std::vector<float> in;
    DeviceBuffer<float> device_in;
    Reference out;  // out[c][r] = in[r][c]
};

inline Case::Case(int rows_, int cols_)
    : rows(rows_), cols(cols_),
      in(random_floats(static_cast<std::size_t>(rows_) * cols_,
                       seed_for("in " + std::to_string(rows_) + "x" + std::to_string(cols_)))),
      device_in(in)
{
    //! [reference]
    out = transpose_reference(in, rows, cols);
    //! [reference]
}

/// The case of this size: at 8192 x 8192 the correctness and the bandwidth tests share one.
inline std::shared_ptr<const Case> shared_case(int rows, int cols)
{
    //! [cached case]
    return cached_case<Case>(static_cast<double>(rows) * cols, rows, cols);
    //! [cached case]
}

// What the pattern of failures suggests, the likeliest cause first (the judge explains races).
inline std::string diagnose(const Case& t, const Failure& f)
{
    const Comparison& result = f.comparison;
    if (!f.guards.intact())
        return "Threads wrote outside `out`. A tile at the right or bottom edge sticks out past the "
               "matrix: only write when the element exists (row < rows and col < cols on the read "
               "side; in `out`, which is cols x rows, the row is below cols and the column below rows).";
    if (result.unwritten == f.got.size())
        return "Nothing was written to `out`: does the kernel write it, and does the launch "
               "function launch the kernel?";
    std::size_t copies = 0;  // failing elements that hold in[i] at the same flat index: no transpose
    for (const Mismatch& m : result.first) copies += !m.unwritten && f.got[m.index] == t.in[m.index];
    if (result.wrong > 0 && copies == result.first.size())
        return "`out` holds `in` copied as it is: the write must swap the roles of row and column, "
               "out[col][row] = in[row][col], and out has `rows` columns.";
    if (result.wrong == 0)
        return "Some elements were never written: does the grid cover the whole matrix, rounding "
               "up in both directions (x along the columns, y along the rows), and does each thread "
               "move all 4 of its rows?";
    return "Wrong values: check the index arithmetic against the map above (row-major: element "
           "[r][c] of a matrix with C columns is at r * C + c).";
}

/// A transpose of a rows x cols matrix: what the judge runs and compares.
inline Call call(Launch launch, const char* function, int rows, int cols)
{
    const std::shared_ptr<const Case> t = shared_case(rows, cols);
    Call c;
    c.function = function;
    c.address = reinterpret_cast<const void*>(launch);
    c.what = std::to_string(rows) + " x " + std::to_string(cols) + " in, " + std::to_string(cols) + " x " +
             std::to_string(rows) + " out";
    c.shape = Shape::grid(cols, rows);
    c.tolerance = exact_copy();
    c.expected = [t]() -> const Reference& { return t->out; };
    c.run = [t, launch](float* out) { launch(t->device_in.data(), out, t->rows, t->cols); };
    c.inputs = {{t->device_in.data(), t->device_in.size(), "in"}};
    c.diagnose = [t](const Failure& f) { return diagnose(*t, f); };
    c.race_hint = "Either several threads write the same element (check the write index), or threads "
                  "read shared memory before other threads have loaded it (is there a __syncthreads() "
                  "between loading the tile and reading it?).";
    return c;
}

/// Effective bandwidth (2 * rows * cols * 4 bytes over the time) against the reference's.
inline void check_bandwidth(Launch yours, Launch reference, const char* function, int rows, int cols)
{
    const std::shared_ptr<const Case> t = shared_case(rows, cols);
    const double bytes = 2.0 * rows * cols * sizeof(float);  // each element read once, written once
    const SpeedVerdict verdict = check_speed(call(yours, function, rows, cols), [t, reference](float* out) {
        reference(t->device_in.data(), out, t->rows, t->cols);
    }, {bytes, Ceiling::copy});
    if (!verdict.ok) return;
    // The source post's size, for its Tesla P100 table (see the lab's README).
    const Case post(2000, 5000);
    DeviceBuffer<float> post_out(post.in.size());
    const Timing at_post = time_gpu([&] { yours(post.device_in.data(), post_out.data(), 2000, 5000); });
    MESSAGE("your kernel at 2000 x 5000, the source post's size: " << at_post.describe());
}

/// The small awkward shapes the sanitizer probes run.
inline std::vector<Call> small_sizes(Launch launch, const char* function)
{
    return {call(launch, function, 31, 33), call(launch, function, 33, 31), call(launch, function, 1, 40)};
}

}  // namespace transpose
