// What the checkers of labs 02 and 03 share: the transpose's test data, its correctness check
// with a diagnosis, and its bandwidth test against the reference solution.
#pragma once

#include "common/workbook.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace transpose {

using namespace workbook;

/// The signature of every transpose launch: out (cols x rows) = in (rows x cols)^T, on the device.
using Launch = void (*)(const float* in, float* out, int rows, int cols);

// The student's kernel may take up to 1.25x the reference's time before losing the points.
constexpr double kSpeedFloor = 0.8;

inline const Tolerance& exact_copy()
{
    static const Tolerance t{0, 0, "a transpose moves values without changing them"};
    return t;
}

struct Case {
    int rows = 0, cols = 0;
    std::vector<float> in;
    std::vector<double> out;  // the reference: out[c][r] = in[r][c]
};

inline Case make_case(int rows, int cols)
{
    Case t;
    t.rows = rows;
    t.cols = cols;
    t.in = random_floats(static_cast<std::size_t>(rows) * cols,
                         seed_for("in " + std::to_string(rows) + "x" + std::to_string(cols)));
    t.out.resize(t.in.size());
    // In 32 x 32 blocks, so that the strided writes stay in cache: at 8192 x 8192 a plain
    // row-by-row loop takes seconds, and the grader runs this for every student.
    constexpr std::size_t block = 32;
    const std::size_t R = static_cast<std::size_t>(rows), C = static_cast<std::size_t>(cols);
    for (std::size_t r0 = 0; r0 < R; r0 += block)
        for (std::size_t c0 = 0; c0 < C; c0 += block)
            for (std::size_t r = r0; r < std::min(r0 + block, R); ++r)
                for (std::size_t c = c0; c < std::min(c0 + block, C); ++c) t.out[c * R + r] = t.in[r * C + c];
    return t;
}

/// The case of this size, built once per process: the correctness and the bandwidth tests at
/// 8192 x 8192 share it. One slot, so that only the largest case stays in memory.
inline const Case& shared_case(int rows, int cols)
{
    static Case last;
    if (last.rows != rows || last.cols != cols) {
        last = Case{};  // free the old one before building the new one
        last = make_case(rows, cols);
    }
    return last;
}

// What the pattern of failures suggests, the likeliest cause first.
inline std::string diagnose(const Case& t, const Comparison& result, const GuardReport& guards,
                            const std::vector<float>& got, bool changes_between_runs)
{
    if (!guards.intact())
        return "Threads wrote outside `out`. A tile at the right or bottom edge sticks out past the "
               "matrix: only write when the element exists (row < rows and col < cols on the read "
               "side; in `out`, which is cols x rows, the row is below cols and the column below rows).";
    if (result.unwritten == got.size())
        return "Nothing was written to `out`: does the kernel write it, and does the launch "
               "function launch the kernel?";
    if (changes_between_runs)
        return "The result changes from one run to the next on the same input. Either several "
               "threads write the same element (check the write index), or threads read shared "
               "memory before other threads have loaded it (is there a __syncthreads() between "
               "loading the tile and reading it?).";
    std::size_t copies = 0;  // failing elements that hold in[i] at the same flat index: no transpose
    for (const Mismatch& m : result.first) copies += !m.unwritten && got[m.index] == t.in[m.index];
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

/// Runs a transpose on poisoned, guarded output twice; fails the test with a diagnosis.
inline void check(Launch launch, const char* function, int rows, int cols)
{
    if (!have_function(reinterpret_cast<const void*>(launch), function)) return;
    const Case& t = shared_case(rows, cols);
    const DeviceBuffer<float> in(t.in);
    GuardedOutput<float> out(t.in.size());
    std::vector<float> first_failure;
    for (int run = 1; run <= 3; ++run) {
        out.poison();
        launch(in.data(), out.data(), rows, cols);
        CUDA_CHECK_LAUNCH(function);
        const std::vector<float> got = out.download();
        const Comparison result = compare("out", got, t.out, Shape::grid(cols, rows), exact_copy());
        const GuardReport guards = out.check_guards();
        if (result.ok() && guards.intact()) {
            if (run == 2) return;
            continue;
        }
        // A result that changes between identical runs is a race: run once more to find out.
        if (first_failure.empty() && run < 3) {
            first_failure = got;
            continue;
        }
        // Compared bit for bit: NaN != NaN would make any NaN output look like a race.
        const bool changes = !first_failure.empty() &&
                             std::memcmp(first_failure.data(), got.data(), got.size() * sizeof(float)) != 0;
        FAIL_CHECK(std::string(function) << ", " << rows << " x " << cols << " in, " << cols << " x " << rows
                            << " out:\n"
                            << (guards.intact() ? "" : "  " + guards.describe("out", t.in.size()) + "\n")
                            << result.report()
                            << "Hint: " << diagnose(t, result, guards, got, changes));
        return;
    }
}

/// Effective bandwidth (2 * rows * cols * 4 bytes over the time) against the reference's.
inline void check_bandwidth(Launch yours, Launch reference, const char* function, int rows, int cols)
{
    if (!have_function(reinterpret_cast<const void*>(yours), function)) return;
    const Case& t = shared_case(rows, cols);
    const DeviceBuffer<float> in(t.in);
    GuardedOutput<float> out(t.in.size());
    yours(in.data(), out.data(), rows, cols);
    CUDA_CHECK_LAUNCH(function);
    const Comparison result = compare("out", out.download(), t.out, Shape::grid(cols, rows), exact_copy());
    if (!result.ok() || !out.check_guards().intact()) {
        FAIL_CHECK("not timed: " << std::string(function) << " is wrong at " << rows << " x " << cols
                   << ". Make the correctness tests pass first.\n" << result.report());
        return;
    }
    const Timing mine = time_gpu([&] { yours(in.data(), out.data(), rows, cols); });
    const Timing theirs = time_gpu([&] { reference(in.data(), out.data(), rows, cols); });
    const double bytes = 2.0 * rows * cols * sizeof(float);  // each element read once, written once
    MESSAGE("your kernel: " << versus_copy(mine.giga_per_second(bytes)) << ", " << mine.describe());
    MESSAGE("reference:   " << versus_copy(theirs.giga_per_second(bytes)) << ", " << theirs.describe());
    // The source post's size, for its Tesla P100 table (see the lab's README).
    const Case post = make_case(2000, 5000);
    const DeviceBuffer<float> post_in(post.in);
    DeviceBuffer<float> post_out(post.in.size());
    const Timing at_post = time_gpu([&] { yours(post_in.data(), post_out.data(), 2000, 5000); });
    MESSAGE("your kernel at 2000 x 5000, the source post's size: " << at_post.describe());
    const double speed = theirs.seconds() / mine.seconds();
    if (speed < kSpeedFloor)
        FAIL_CHECK("your kernel takes " << 1 / speed << "x the reference's time (at most "
                   << 1 / kSpeedFloor << "x earns these points).");
}

/// Runs a transpose once and fails the test unless it wrote every element of `out`: the
/// precondition of the sanitizer tests, so that a kernel that does nothing cannot pass them.
inline bool writes_everything(Launch launch, const char* function, int rows, int cols)
{
    if (!have_function(reinterpret_cast<const void*>(launch), function)) return false;
    const Case t = make_case(rows, cols);
    const DeviceBuffer<float> in(t.in);
    GuardedOutput<float> out(t.in.size());
    launch(in.data(), out.data(), rows, cols);
    CUDA_CHECK_LAUNCH(function);
    if (count_poison(out.download().data(), t.in.size()) == 0 && out.check_guards().intact()) return true;
    FAIL_CHECK("not checked: " << std::string(function) << " leaves elements unwritten (or writes outside "
               "`out`) at " << rows << " x " << cols << ". Make the correctness tests pass first.");
    return false;
}

/// Runs a transpose on small awkward shapes: the work the sanitizer probes observe.
inline void run_small(Launch launch)
{
    for (const auto& shape : {std::pair<int, int>{31, 33}, {33, 31}, {1, 40}}) {
        const Case t = make_case(shape.first, shape.second);
        const DeviceBuffer<float> in(t.in);
        DeviceBuffer<float> out(t.in.size());
        launch(in.data(), out.data(), shape.first, shape.second);
        CUDA_CHECK_LAUNCH("a transpose");
    }
}

}  // namespace transpose
