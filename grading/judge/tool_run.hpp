/// \file tool_run.hpp
/// \brief What the tool runs of tools.hpp share inside the grading library: the registry of
/// probes, and the early starts that start_tool_runs_early sets going.
///
/// Private to grading/: a checker includes tools.hpp. tool_run.cpp holds the probes and runs this
/// program under a tool; sanitizers.cpp and ncu.cpp each start their own kind of run early.
#pragma once

#include "tools.hpp"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace workbook {

/// \brief A probe as WORKBOOK_PROBE registered it.
struct Probe {
    ProbeFunction body = nullptr;              ///< the GPU work
    std::vector<std::string> sanitizer_tools;  ///< the compute-sanitizer tools the checker's tests run on it
};

/// \brief Every registered probe, by name (register_probe adds to it; tool_run.cpp).
std::map<std::string, Probe>& probes();

/// \brief Starts in the background, for every probe, the compute-sanitizer run of each tool it
/// names; sanitize() then collects the run instead of starting one (sanitizers.cpp).
/// \param timeout_s seconds before each run is stopped
/// \param environment settings "NAME=value" for each run
/// \return for each run started, a wait until it is done
std::vector<std::function<void()>> start_sanitizer_runs_early(int timeout_s, const std::vector<std::string>& environment);

/// \brief Starts in the background every counter reading asked for with read_counters_early;
/// read_counters() then collects the reading instead of starting one (ncu.cpp).
/// \param environment settings "NAME=value" for each run
/// \return for each reading started, a wait until it is done
std::vector<std::function<void()>> start_counter_readings_early(const std::vector<std::string>& environment);

/// \brief Waits for one byte on a pipe, then closes it: how a checker held for its turn, and each
/// of its tool runs behind the gate of start_tool_runs_early, wait (checker_main.cpp).
/// \param fd the pipe's read end
/// \return false when the pipe closed with no byte: the wait ended without a go
bool wait_for_byte(int fd);

/// \brief Inside a probe run (checker_main.cpp): whether it was started behind a gate
/// (start_tool_runs_early with a gate), so must not touch the GPU before pass_probe_gate.
bool probe_behind_gate();

/// \brief Inside a probe run (checker_main.cpp): waits at the gate of start_tool_runs_early when
/// the run has one.
/// \return false when the gate closed without opening: the run is not needed
bool pass_probe_gate();

}  // namespace workbook
