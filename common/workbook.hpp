/// \file workbook.hpp
/// \brief Everything a lab checker uses, in one include.
#pragma once

/// \namespace workbook
/// \brief The common library of the checkers: error checking, device buffers with poison and
/// guard zones, seeded data, comparison with a float64 reference, timing, the GPU's ceilings,
/// and NVIDIA's tools. Each function's documentation shows it at work in a tested file.

#include "buffers.hpp"
#include "check.hpp"
#include "checker.hpp"
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
#include "tools.hpp"
