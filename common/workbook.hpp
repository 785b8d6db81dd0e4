/// \file workbook.hpp
/// \brief Everything a lab checker uses, in one include.
#pragma once

#include "buffers.hpp"
#include "check.hpp"
#include "checker.hpp"
#include "compare.hpp"
#include "device.hpp"
#include "gemm_reference.hpp"
#include "random.hpp"
#include "stats.hpp"
#include "sweep.hpp"
#include "timing.hpp"
#include "tools.hpp"
