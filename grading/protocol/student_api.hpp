/// \file student_api.hpp
/// \brief What a lab's API header (tests/NN_name.hpp) needs: the marker of a student's function
/// and the types its functions use. Both the judge (through checker.hpp) and the runner include it.
#pragma once

#include "common/sweep.hpp"

#include <vector>

#ifndef WORKBOOK_STUDENT_FUNCTION
/// Declares a function the student's file defines, weakly: when the file lacks it, the runner
/// still links, the function's address there is null, and only the tests that call it fail
/// (through have_function). Every lab's API header (tests/NN_name.hpp) uses it.
#define WORKBOOK_STUDENT_FUNCTION __attribute__((weak))
#endif
