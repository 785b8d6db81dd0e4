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
/// \snippet tests/unit/test_common.cpp for rows
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

}  // namespace workbook
