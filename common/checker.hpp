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

#include <string>

namespace workbook {

/// Exit status of a checker that found no usable GPU (ctest's and automake's "skipped").
constexpr int exit_no_device = 77;
/// Exit status of a checker that stopped because a sticky CUDA error destroyed its context.
constexpr int exit_context_lost = 75;

/// \brief A test-case decorator: the test is worth n points.
/// \param n points, 0 to 20
doctest::description points(int n);

/// \brief A test-case decorator: the test earns n bonus points (beyond the lab's total).
/// \param n points, 0 to 20
doctest::description bonus(int n);

}  // namespace workbook
