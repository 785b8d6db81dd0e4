// Force-included (nvcc --pre-include) in each reference solution that make handout compiles for
// the student edition (grading/handout/make_handout.py), and in nothing else.
//
// common/check.hpp's CUDA_CHECK(call) keeps the call's source text (#call) and __FILE__, the
// absolute path of the file, for its error message: in a shipped object those are the solution's
// own lines and the instructor's path. Included first, check.hpp is read once (#pragma once), and
// the two macros are defined again here without either: a failing call of the reference names
// neither its text nor its file. The machine code is the same; only the error messages differ.
#pragma once

#include "../../common/check.hpp"  // by its path from here: CMake's compiler check has no include path

#undef CUDA_CHECK
#define CUDA_CHECK(call) ::workbook::check_cuda((call), "a CUDA call of the reference solution", "reference", 0)

#undef CUDA_CHECK_LAUNCH
#define CUDA_CHECK_LAUNCH(what) ::workbook::check_launch("a launch of the reference solution", "reference", 0)
