/// \file workbook.hpp
/// \brief The checker library in one include: what a checker, the bench and a lab use to build,
/// run, compare and time GPU work. The grading harness (grading/: the checkers' main, the
/// results channel and its signing, the runs under NVIDIA's tools) builds on it; checkers
/// include grading/judge/checker.hpp, which includes this.
#pragma once

/// \namespace workbook
/// \brief The checker library (common/) and the grading harness (grading/): error checking,
/// device buffers with poison and guard zones, seeded data, comparison with a float64 reference,
/// the judge, timing and the GPU's ceilings; and the checkers' main, results channel and NVIDIA's
/// tools. Each function's documentation shows it at work in a tested file.

#include "buffers.hpp"
#include "check.hpp"
#include "compare.hpp"
#include "convolution_reference.hpp"
#include "device.hpp"
#include "exact_references.hpp"
#include "gemm_reference.hpp"
#include "host.hpp"
#include "judge.hpp"
#include "launch_record.hpp"
#include "random.hpp"
#include "stats.hpp"
#include "sweep.hpp"
#include "timing.hpp"
