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

#include <doctest/doctest.h>

#include <functional>
#include <string>

namespace workbook {

/// Exit status of a checker that found no usable GPU (ctest's and automake's "skipped").
constexpr int exit_no_device = 77;
/// Exit status of a checker that stopped because a sticky CUDA error destroyed its context.
constexpr int exit_context_lost = 75;

/// Declares a function the student's file defines, weakly: when the file lacks it, the checker
/// still links, the function's address is null, and only the tests that call it fail (through
/// have_function). Every lab's API header (tests/NN_name.hpp) uses it.
#define WORKBOOK_STUDENT_FUNCTION __attribute__((weak))

/// \brief Whether a std::function holds nothing, or a student function the file does not define.
///
/// std::function treats a function passed by name as a reference and reports it as non-empty
/// even when the weak symbol behind it is null, so the stored pointer itself is looked at.
/// \param f a launch or other callable built from a student function
template <class Signature>
bool missing(const std::function<Signature>& f)
{
    if (!f) return true;
    const auto* pointer = f.template target<Signature*>();
    return pointer != nullptr && *pointer == nullptr;
}

/// \brief Whether a student function exists; if not, fails the current test saying so.
/// \param address the function's address (null when the student's file does not define it)
/// \param name the function's name, for the message
/// \snippet tests/check_01_vector_add.cpp have function
bool have_function(const void* address, const char* name);

/// Fails the current test and returns from it when the student's file lacks `function`.
#define REQUIRE_STUDENT_FUNCTION(function)                                                     \
    do {                                                                                       \
        if (!::workbook::have_function(reinterpret_cast<const void*>(&function), #function)) \
            return;                                                                            \
    } while (0)

/// \brief A graded compute-sanitizer test: runs a probe (see tools.hpp) under one of its tools.
///
/// Skipped, never passed, when compute-sanitizer is missing; failed with the tool's report
/// (the kind of error, the kernel, the source line) when it finds something; failed when the
/// probe itself fails. Call it after checking that the student's kernels write their output,
/// so that a kernel that does nothing cannot pass.
/// \param tool "memcheck", "racecheck", "synccheck" or "initcheck"
/// \param probe the probe to run
/// \param hint what to look at when the tool finds something
/// \snippet tests/check_01_vector_add.cpp memcheck
void sanitizer_test(const std::string& tool, const std::string& probe, const std::string& hint);

/// \brief A test-case decorator: the test is worth n points.
/// \param n points, 0 to 20
/// \snippet tests/check_01_vector_add.cpp graded test
doctest::description points(int n);

/// \brief A test-case decorator: the test earns n bonus points (beyond the lab's total).
/// \param n points, 0 to 20
/// \snippet tests/check_05_register_blocking.cpp bonus
doctest::description bonus(int n);

}  // namespace workbook
