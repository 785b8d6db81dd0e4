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
    int repetitions = 15;   ///< timed runs at most; the median is reported
    bool flush_l2 = true;   ///< overwrite the L2 cache before each timed run
    /// Runs before each run, warm-ups included, outside the timed region (the judge poisons the
    /// output and starts recording the launched kernels here).
    std::function<void()> before_each;
    /// Runs after each run, outside the timed region (the judge verifies the output here).
    std::function<void()> after_each;
    /// Timed runs stop early, after at least min_repetitions, once they add up to enough_ms: a
    /// 25 ms matmul's spread is a tenth of a percent, and ten more runs of it would only add a
    /// quarter of a second to every grade run (nvbench stops on a time budget the same way).
    int min_repetitions = 5;
    double enough_ms = 100;  ///< see min_repetitions
};

/// \brief The result of timing: a Summary of milliseconds per run.
struct Timing {
    Summary ms;      ///< milliseconds per run
    /// For runs whose work happened in another process: the judge's own clock over the same
    /// runs (less an empty round trip per call); empty otherwise.
    Summary judged;
    /// Set when the reported times fell further below the judge's clock than its noise allows:
    /// then ms holds the judge's figures, and this says what was seen.
    std::string disagreement;

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

/// \brief What a timed run's calls into another process took (a checker's calls of the
/// student's code, which runs in a process of its own: grading/remote.hpp).
struct CallTime {
    int calls = 0;          ///< calls made in the run
    double reported = 0;    ///< milliseconds, by the CUDA events of the process that ran them
    double judged = 0;      ///< milliseconds, by the judge's own clock, less an empty round trip each
};

/// \brief Installs the clock of runs whose work happens in another process. Called before and
/// after each timed run, it returns what the calls since it was last called took; a run that made
/// calls is timed by their reported figure (time_gpu's own events cannot see another process's
/// work), and the judge's figure is kept beside it (Timing::judged) to check it against.
/// \param clock the clock
void set_call_clock(std::function<CallTime()> clock);

/// \brief How far a reported median may fall below the judge's fastest run before the judge's
/// figure is taken instead: this many milliseconds, plus kJudgeClockSlackShare of the reported
/// time. (The fastest run, because noise only lengthens the judge's clock: on an H100 a correct
/// 0.05 ms matmul once read 0.7 ms at the judge's median, three slow round trips in five.) Read
/// off an H100: an honest runner's figure fell up to 0.5 ms (2%) below the judge's clock on a
/// 25 ms product, and up to 0.33 ms on a 0.3 ms vector add whose process had used managed memory
/// before (the cost of switching the GPU between the judge's process and the runner's varies with
/// the runner's state). So a runner that forged its own figure could gain up to this much a call.
constexpr double kJudgeClockSlackMs = 0.5;
/// \brief The share of the reported time added to kJudgeClockSlackMs.
constexpr double kJudgeClockSlackShare = 0.1;

/// \brief Times a launch with CUDA events (or the clock of set_call_clock).
/// \param launch enqueues the work to time on the default stream (e.g. a kernel launch)
/// \param options warm-up, repetitions and L2 flushing
/// \return the per-run times; launch and execution errors throw CudaError
/// \snippet common/judge.cu timed runs
Timing time_gpu(const std::function<void()>& launch, const TimingOptions& options = {});

}  // namespace workbook
