/// \file timing.hpp
/// \brief Timing GPU work with CUDA events: warm-up, L2 flush, median and spread.
///
/// Each repetition flushes the L2 cache first (outside the timed region), so a kernel whose data
/// would fit in the cache is measured reading device memory, as it would in real use. The
/// median of the repetitions is the figure reported; the interquartile spread says how much to
/// trust it. No check in the workbook compares a time with an absolute number: times are turned
/// into GB/s or GFLOP/s and set beside the device's measured ceilings or the reference solution
/// timed in the same run.
#pragma once

#include "stats.hpp"

#include <functional>
#include <string>

namespace workbook {

/// \brief How to time: warm-up runs, timed repetitions, and whether to flush L2 before each.
struct TimingOptions {
    int warmup = 2;         ///< untimed runs first (module load, caches, clocks)
    int repetitions = 15;   ///< timed runs; the median is reported
    bool flush_l2 = true;   ///< overwrite the L2 cache before each timed run
    /// Runs before each run, warm-ups included, outside the timed region (the judge poisons the
    /// output and starts recording the launched kernels here).
    std::function<void()> before_each;
    /// Runs after each run, outside the timed region (the judge verifies the output here).
    std::function<void()> after_each;
};

/// \brief The result of timing: a Summary of milliseconds per run.
struct Timing {
    Summary ms;  ///< milliseconds per run

    /// \brief Seconds per run (the median).
    double seconds() const { return ms.median * 1e-3; }
    /// \brief The rate for a given amount of work: units / seconds() / 1e9.
    /// \param units bytes for GB/s, floating-point operations for GFLOP/s
    /// \snippet common/judge.cu versus
    double giga_per_second(double units) const { return units / seconds() / 1e9; }
    /// \brief Text such as "0.412 ms (median of 15, spread 1.3%)".
    /// \snippet common/judge.cu versus
    std::string describe() const;
};

/// \brief Registers work that runs beside the checker on this GPU (the grading harness's early
/// tool runs, grading/tools.hpp): every measurement first waits for it.
/// \param wait_until_done returns once the work is over
void add_background_gpu_work(std::function<void()> wait_until_done);

/// \brief Waits until no background work (add_background_gpu_work) is using the GPU, so that a
/// measurement has it to itself: time_gpu calls it, and so does a test that lets student code
/// time the GPU.
/// \snippet tests/check_06_thread_sweep.cpp gpu alone
void have_gpu_alone();

/// \brief Installs the clock of runs whose work happens in another process (a checker's calls of
/// the student's code, which runs in a process of its own: grading/remote.hpp). Called before and
/// after each timed run, it returns the milliseconds it measured for the calls into that process
/// since it was last called, or a negative number when there were none; time_gpu then takes that
/// figure instead of its CUDA events, which cannot see another process's work.
/// \param milliseconds the clock
void set_call_clock(std::function<double()> milliseconds);

/// \brief Times a launch with CUDA events (or the clock of set_call_clock).
/// \param launch enqueues the work to time on the default stream (e.g. a kernel launch)
/// \param options warm-up, repetitions and L2 flushing
/// \return the per-run times; launch and execution errors throw CudaError
/// \snippet common/judge.cu timed runs
Timing time_gpu(const std::function<void()>& launch, const TimingOptions& options = {});

}  // namespace workbook
