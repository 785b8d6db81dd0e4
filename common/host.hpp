/// \file host.hpp
/// \brief The CPU side of a comparison: a loop over rows on one thread or on every core, timed
/// honestly, and never allowed to run for minutes.
///
/// A GPU figure means more beside the same work done by the CPU, but only when the CPU loop is
/// a fair one: compiled with optimisation, run on one thread (as the source documents did) and
/// on all of the machine's cores. Such loops are cubic for a matrix product, so a size can take
/// an hour on one thread. time_host() therefore watches the loop's pace while it runs: when the
/// rows done so far say the whole loop would pass the time limit, it stops and reports the size
/// as left out. It never reports an extrapolated time.
#pragma once

#include "stats.hpp"

#include <functional>
#include <string>

namespace workbook {

/// \brief The number of threads "all cores" means here: std::thread::hardware_concurrency(), at least 1.
/// \snippet tests/check_06_thread_sweep.cpp host threads
int host_threads();

/// \brief Runs row(i) for every i in [0, rows), spread over `threads` threads.
///
/// Threads take the next row from a shared counter, so uneven rows do not leave threads idle.
/// \param rows how many rows; row(i) must only write what row i owns
/// \param threads how many threads (1 runs on the calling thread)
/// \param row the work of one row
/// \snippet common/tests/test_common.cpp for rows
void for_rows(int rows, int threads, const std::function<void(int)>& row);

/// \brief How time_host() runs a loop.
struct HostTimingOptions {
    double limit_seconds = 30;  ///< a loop whose pace says it would take longer is stopped and left out
    double settle_seconds = 1;  ///< the pace is judged after this long (or after 10% of the rows)
    int max_runs = 5;           ///< short loops are repeated, up to this many runs...
    double min_total_seconds = 2;  ///< ...until they have run this long in all; the median is kept
};

/// \brief What time_host() measured, or why it measured nothing.
struct HostTiming {
    bool measured = false;  ///< false: left out, see note
    Summary ms;             ///< milliseconds per whole loop, over the runs made
    std::string note;       ///< why it was left out, e.g. "left out: over 30 s on 1 thread"
};

/// \brief Times a loop over rows on `threads` threads, unless it would pass the time limit.
/// \param rows how many rows the loop has
/// \param threads how many threads share them (see for_rows())
/// \param row the work of one row
/// \param options the time limit and the repetitions
/// \snippet tests/check_06_thread_sweep.cpp time host
HostTiming time_host(int rows, int threads, const std::function<void(int)>& row,
                     const HostTimingOptions& options = {});

/// \brief The host baseline of a matrix product, one row at a time: row i of C = A·B (A m x k,
/// B k x n, C m x n, row-major floats), one dot product per output, the sources' plain loop.
///
/// The sums are kept in double, for every host baseline of the workbook (this one and
/// host_convolution_row): the IJCEE paper's host function (MulH) sums in double, and a double
/// sum keeps the CPU's result inside the same float64 tolerance the GPU's is held to, so a CPU
/// figure is always the time of a verified result. On the CPU it costs no more than float.
/// \param a A, m x k
/// \param b B, k x n
/// \param c C, m x n: row i is written
/// \param k columns of A, rows of B
/// \param n columns of B and C
/// \param i the row of C
/// \snippet common/tests/test_common.cpp host baselines
void host_matmul_row(const float* a, const float* b, float* c, int k, int n, int i);

/// \brief The host baseline of the workbook's convolution, one output row at a time: out[y][x]
/// sums mask[i][j] * in[y + i - r][x + j - r] over the k x k window (r = (k - 1) / 2), with
/// cells outside the image counting as zero. Summed in double (see host_matmul_row()).
/// \param in the image, height x width
/// \param out the output, height x width: row y is written
/// \param height rows of the image
/// \param width columns of the image
/// \param mask the k x k mask, row-major
/// \param k the mask's edge, odd
/// \param y the output row
/// \snippet common/tests/test_common.cpp host baselines
void host_convolution_row(const float* in, float* out, int height, int width, const float* mask, int k, int y);

}  // namespace workbook
