/// \file clock.hpp
/// \brief The judge's clock: how a checker times the student's code, which runs in another
/// process (the runner), on a clock that process cannot touch. The whole timing discipline of
/// a checker is here and in Runner::call (calls.hpp), which stops the clock.
///
/// One call is timed from the moment the judge sends it to the moment the GPU runs a kernel of
/// the judge's own after the runner said "done" (a runner that answers before its work is done
/// gains nothing: the judge's kernel runs once the runner's work is off the GPU), less an empty
/// round trip (round_trip_ms). No figure the runner reports counts: its process is the
/// student's.
///
/// A round trip costs about as much as a short call: two switches of the GPU between the two
/// processes, the socket, the waits. Its noise would swamp a 0.2 ms call. So short calls are
/// timed in **batches**: the judge queues N runs of the call (calls.hpp, begin_batches), each
/// with its own copy of every array it is given (fresh inputs, its own poisoned output, nothing
/// left in L2 by the run before), flushes L2, sends the N runs as one message and times the
/// whole; a run's time is the batch's less one round trip, over N. Then, if the batch is the
/// fastest so far (the one that counts), each run's arrays are copied back and checked, as an
/// unbatched run is. N is what makes a batch last about
/// kBatchMs, within kBatchMemoryShare of the GPU's free memory and kBatchMemoryMost.
///
/// A batch costs more than an empty round trip plus its runs: the GPU switches to the runner's
/// work and back, the first launch waits for the runner's host code, the last waits end. On the
/// reference's runner the judge measures that fixed cost (batches that run each slot twice,
/// against the timed ones), and time_call (judge.hpp) takes it off both sides' batches.
#pragma once

#include "common/timing.hpp"

#include <chrono>
#include <functional>

namespace workbook::remote {

/// \brief How long a batch of timed runs should last: long enough that the noise of one round
/// trip (tens of microseconds on an H100) is under 1% of it, and so is the noise of the batch's
/// fixed cost taken off (0.1 to 0.25 ms there, shared among its runs).
constexpr double kBatchMs = 5.0;

/// \brief Runs in a batch at most.
constexpr int kMaxBatch = 64;

/// \brief Timed batches a measurement takes (each already the mean of many runs); the fastest
/// counts (Timing::ms_per_run).
constexpr int kTimedBatches = 3;

/// \brief The share of the GPU's free memory the copies of a batch's arrays may take.
constexpr double kBatchMemoryShare = 0.25;

/// \brief The most memory, in bytes, the copies of a batch's arrays may take. On the H100 a run in
/// a batch of 32 slots of 512 MiB once read 10% more than in-process on the same arrays; in a batch
/// of 15, since both sides' waits spin (wire::poll_for_message), what the bench reads, within 0.5%
/// (docs/grading.md, the twelfth measurement). Larger batches were not measured again.
constexpr double kBatchMemoryMost = 8.0 * (1ull << 30);

/// \brief The most a batch's fixed cost (Timing::batch_cost_ms) is taken to be, in milliseconds.
/// On the H100, 32 estimates of it read 0.03 to 0.27 ms, and a few, each a process's first,
/// 0.33 to 0.5 ms: a cost taken as too large would credit both sides with time they took.
constexpr double kMostBatchCostMs = 0.3;

/// \brief The most a round trip is taken to be, as a multiple of the fastest this process has
/// measured (measure_round_trip).
constexpr double kRoundTripDrift = 1.5;

/// \brief Measures the time of an empty round trip to a runner, in milliseconds: the fastest of
/// 11 pings to the reference solution's runner (no student code there), on the judge's clock
/// exactly as a call is timed. The fastest, since whatever else runs only ever lengthens a ping,
/// and a round trip taken as too long would credit every call with less than it took. Measured
/// again before each timing (time_gpu's), so that a machine busy for a while is not taken for
/// the round trip's own cost; a series slower than kRoundTripDrift times the fastest seen is
/// measured again, and the round trip never taken as longer than that. A timed call (or batch)
/// is charged its time less this.
double measure_round_trip();

/// \brief The median of `runs` launches of an empty kernel of the judge's, each waited for and
/// each a millisecond after the last, in milliseconds: while another process's kernel holds the
/// GPU, each waits for its time slice to end. device_query measures it on an idle GPU before any
/// student's code runs (WORKBOOK_IDLE_TURN_MS).
double median_turn_ms(int runs);

/// \brief Whether nothing but the judge's own work runs on the GPU: an empty kernel of the
/// judge's runs about as soon as it did on the idle GPU (median_turn_ms), as device_query measured
/// it before any student's code ran (WORKBOOK_IDLE_TURN_MS, from the grader). Another process's kernel still
/// running, even one that a paused process had queued, holds the GPU until its time slice ends.
/// \return false also where the grader gave no such figure (a checker run by hand)
bool gpu_idle();

/// \brief How long the GPU went on running another process's work after `since` (the moment a
/// runner said "done"), in milliseconds, or 0 when it was idle at once. Called once that runner is
/// paused, so that it can queue nothing more: a kernel of the judge's runs at once on an idle
/// GPU, and waits while another context's work holds it. A slow turn counts only where this
/// thread was not preempted meanwhile (its involuntary context switches, from getrusage), so that
/// a busy CPU is never taken for a busy GPU. Waits until the GPU is idle, at most `most_ms`.
/// \param since when the call returned
/// \param most_ms how long to wait for the GPU at most
double gpu_busy_after_ms(std::chrono::steady_clock::time_point since, double most_ms);

/// \brief The round trip measure_round_trip measured last (measured now if never).
double round_trip_ms();

/// \brief How many runs a batch holds, for a call that takes `call_ms` and whose arrays'
/// allocations take `bytes`.
/// \param call_ms one run's time on the judge's clock
/// \param bytes the device memory one run's arrays take (each slot copies them)
int batch_size(double call_ms, std::size_t bytes);

/// \brief WORKBOOK_CLOCK_TRACE, read once: 0 when unset; 1 prints each timing's phases, each
/// call over 30 ms and each stop of a runner; 2 also a sweep of batch sizes after each timing.
int clock_trace();

/// \brief Installs the judge's clock as time_gpu's clock of calls into another process
/// (set_call_clock in timing.hpp).
void install_judge_clock();

}  // namespace workbook::remote
