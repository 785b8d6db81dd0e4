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
    /// Runs just before each after_each, with the number of the run about to be checked: its
    /// place among the calls of before_each, counted from 0 (warm-ups included). Runs queued in
    /// batches (grading's clock.hpp) are all prepared before any of them is checked, so the
    /// judge learns here which preparation, and so which fresh inputs, a check is about.
    std::function<void(int run)> before_check;
    /// Timed runs stop early, after at least min_repetitions, once they add up to enough_ms: a
    /// 25 ms matmul's spread is a tenth of a percent, and ten more runs of it would only add a
    /// quarter of a second to every grade run. (nvbench stops otherwise: once its samples' relative
    /// noise is under a bound, --max-noise, after a minimum time, with a timeout as the cap. A
    /// fixed budget is simpler, and enough for figures set beside a reference timed alike.)
    int min_repetitions = 5;
    double enough_ms = 100;  ///< see min_repetitions
};

/// \brief The result of timing: a Summary of milliseconds per run.
struct Timing {
    Summary ms;  ///< milliseconds per run (per sample: a batch's runs count as one, its mean)
    /// Runs in each sample: 1 for events around each run; more where calls into another process
    /// were timed in batches, each batch of fresh runs on the judge's clock (grading's clock.hpp).
    int runs_per_sample = 1;
    /// What a batch costs beyond its runs and a round trip, in milliseconds, as measured on the
    /// reference solution's runner (grading's clock.hpp); 0 where not measured.
    double batch_cost_ms = 0;
    /// The batch cost taken off each batch of this timing (less_batch_cost); 0 where none was.
    double batch_cost_taken_ms = 0;

    /// \brief This timing with `cost` milliseconds taken off each batch, shared among its runs
    /// (never below a microsecond a run); an unbatched timing is returned as it is.
    /// \param cost a batch's fixed cost, as a reference timing measured it (batch_cost_ms)
    Timing less_batch_cost(double cost) const;

    /// \brief Milliseconds per run: the median of the samples; for batches the fastest batch's
    /// mean, since what disturbs a batch (another process starting CUDA, a slow round trip) only
    /// ever adds time, and every run of the fastest batch was checked.
    double ms_per_run() const { return runs_per_sample > 1 ? ms.min : ms.median; }
    /// \brief Seconds per run (ms_per_run).
    double seconds() const { return ms_per_run() * 1e-3; }
    /// \brief The rate for a given amount of work: units / seconds() / 1e9.
    /// \param units bytes for GB/s, floating-point operations for GFLOP/s
    /// \snippet common/judge_speed.cu versus
    double giga_per_second(double units) const { return units / seconds() / 1e9; }
    /// \brief Text such as "0.412 ms (median of 15, spread 1.3%)", or "0.2 ms (fastest of 5
    /// batches of 12 runs, spread 0.4%)".
    /// \snippet common/judge_speed.cu versus
    std::string describe() const;
};

/// \brief Registers work that runs beside the checker on this GPU (the grading harness's early
/// tool runs, grading/judge/tools.hpp): every measurement first waits for it.
/// \param wait_until_done returns once the work is over
void add_background_gpu_work(std::function<void()> wait_until_done);

/// \brief Waits until no background work (add_background_gpu_work) is using the GPU, so that a
/// measurement has it to itself: time_gpu calls it, and so does a test that lets student code
/// time the GPU.
/// \snippet tests/check_06_thread_sweep.cpp gpu alone
void have_gpu_alone();

/// \brief The clock of work done in another process, where this process's CUDA events cannot
/// see it (a checker's calls of the student's code, which runs in a process of its own). A
/// checker installs the judge's clock (grading's clock.hpp); make bench installs none.
struct CallClock {
    /// How many calls into the other process were made since it was last asked.
    std::function<int()> calls_made;
    /// Times `launch` on this clock alone, with `options`; time_gpu hands over to it once a
    /// warm-up run has made calls (that run counts as the first of options.warmup).
    std::function<Timing(const std::function<void()>& launch, const TimingOptions& options)> time;
};

/// \brief Installs the clock of runs whose work happens in another process.
/// \param clock the clock
void set_call_clock(CallClock clock);

/// \brief Overwrites the L2 cache (twice its size, on the default stream), so that the next
/// run reads its data from device memory.
/// \param pass a number that changes from one flush to the next (the bytes written)
void flush_l2(int pass);

/// \brief Times a launch with CUDA events, or on the clock of set_call_clock when the launch
/// calls into another process.
/// \param launch enqueues the work to time on the default stream (e.g. a kernel launch)
/// \param options warm-up, repetitions and L2 flushing
/// \return the per-run times; launch and execution errors throw CudaError
/// \snippet common/judge_speed.cu timed runs
Timing time_gpu(const std::function<void()>& launch, const TimingOptions& options = {});

}  // namespace workbook
