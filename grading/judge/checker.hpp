/// \file checker.hpp
/// \brief What a lab checker is made of: doctest test cases that carry points, and the main()
/// that runs them and reports each result to the grader.
///
/// A checker is one doctest program per lab. Each TEST_CASE carries its points:
///
/// \snippet tests/check_01_vector_add.cpp graded test
///
/// The main() in checker_main.cpp (linked into every checker) probes the GPU, prints the device
/// and the seed, and runs the tests. Results reach the grader through a channel of their own
/// (a pipe whose descriptor the grader passes in WORKBOOK_RESULTS_FD), never through stdout, so
/// text that student code prints cannot raise a score.
#pragma once

#include "common/workbook.hpp"
#include "grading/protocol/student_api.hpp"
#include "tools.hpp"

#include <doctest/doctest.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace workbook {

/// Exit status of a checker that found no usable GPU (ctest's and automake's "skipped").
constexpr int exit_no_device = 77;
/// Exit status of a checker that stopped because a sticky CUDA error destroyed its context.
constexpr int exit_context_lost = 75;


/// \brief Whether a student function exists; if not, fails the current test saying so.
/// \param address the function's address (null when the student's file does not define it)
/// \param name the function's name, for the message
/// \snippet grading/judge/checker_support.cpp have function
bool have_function(const void* address, const char* name);

/// Fails the current test and returns from it when the student's file lacks `function`.
#define REQUIRE_STUDENT_FUNCTION(function)                                                     \
    do {                                                                                       \
        if (!::workbook::have_function(reinterpret_cast<const void*>(&function), #function)) \
            return;                                                                            \
    } while (0)

/// \brief The address of a student function, for Call::address (null when the file lacks it).
#define WORKBOOK_ADDRESS(function) reinterpret_cast<const void*>(&function)

/// \brief A correctness test: the judge runs the call (judge.hpp) and the test fails with its
/// message, which says what went wrong, where, and what to look at.
/// \param call the graded call
/// \return whether it passed
/// \snippet tests/check_01_vector_add.cpp graded test
bool check(const Call& call);

/// \brief The precondition of a test that measures something other than correctness (a tool, a
/// counter): the judge must find the call correct first, else the test fails with "not checked".
/// \param call the call the measurement is about
/// \param what what would have been measured, e.g. "compute-sanitizer racecheck"
/// \return whether the call is correct
/// \snippet tests/check_03_shared_transpose.cpp counters
bool require_correct(const Call& call, const std::string& what);

/// \brief A performance test: the call timed beside the reference with every timed run verified
/// (time_call in judge.hpp). Prints both figures against this GPU's ceiling; when the kernel is
/// too slow, the failure carries Nsight Compute's side-by-side explanation (explain_slowness).
/// \param yours the student's call
/// \param reference the reference solution's launch, writing the same output
/// \param work what one call does, and the ceiling it is set beside
/// \return the verdict (its lines are already printed)
/// \snippet tests/check_01_vector_add.cpp speed
SpeedVerdict check_speed(const Call& yours, const std::function<void(float* out)>& reference, const Work& work);

/// \brief A graded compute-sanitizer test that credits only correct kernels.
///
/// First the judge checks every call the probe makes (the same list the probe runs): a kernel
/// that is wrong at the probe's sizes fails here, because an output that is wrong or never
/// written proves nothing about memory safety. Then the probe runs under the tool (see
/// tools.hpp). Skipped, never passed, when compute-sanitizer is missing; failed with the tool's
/// report (the kind of error, the kernel, the source line) when it finds something.
/// \param tool "memcheck", "racecheck", "synccheck" or "initcheck"
/// \param probe the probe to run
/// \param calls the calls the probe makes
/// \param hint what to look at when the tool finds something
/// \snippet tests/check_01_vector_add.cpp memcheck
void sanitizer_test(const std::string& tool, const std::string& probe, const std::vector<Call>& calls,
                    const std::string& hint);

/// \brief Runs each call once with no checks: the body of a probe that a tool watches.
/// \param calls the calls, as given to sanitizer_test
/// \snippet tests/check_01_vector_add.cpp probe
void run_calls(const std::vector<Call>& calls);

/// \brief Whether this GPU runs code built for `needed` (common/device.hpp). If not, the running
/// test is skipped (never passed), saying which architecture it needs and which this GPU is.
/// \param needed the architecture
/// \return whether the test can go on
/// \snippet tests/check_05_wgmma.cpp architecture
bool gpu_runs(const Architecture& needed);

/// \brief The device memory that the student's code holds on this GPU now: NVML's per-process
/// figure for the student's runner and every process below it, summed (nvml.hpp). Unlike
/// cudaMemGetInfo, other processes on the GPU (another lab's tool run, another student's
/// grading) do not move it.
/// \param why_not where to say why there is no figure, when there is none (may be null)
/// \return the bytes, or nothing where NVML is missing, gives no figure per process, or lists
/// none of the runner's processes (a PID namespace whose numbers NVML does not report, say); or
/// while no runner is running
/// \snippet tests/check_01_vector_add.cpp runner memory
std::optional<std::size_t> runner_device_bytes(std::string* why_not = nullptr);

/// \brief Tells the checker library that a test starts (the result listener calls it).
/// \param name the test's name
void test_started(const std::string& name);

/// \brief A test-case decorator: the test is worth n points.
/// \param n points, 0 to 20
/// \snippet tests/check_01_vector_add.cpp graded test
doctest::description points(int n);

/// \brief A test-case decorator: the test earns n bonus points (beyond the lab's total).
/// \param n points, 0 to 20
/// \snippet tests/check_05_register_blocking.cpp bonus
doctest::description bonus(int n);

}  // namespace workbook
