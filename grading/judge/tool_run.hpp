/// \file tool_run.hpp
/// \brief What the tool runs of tools.hpp share inside the grading library: the registry of
/// probes, the probe runs under a tool that the checker drives itself, and the early starts that
/// start_tool_runs_early sets going.
///
/// Private to grading/: a checker includes tools.hpp. tool_run.cpp holds the probes and runs this
/// program under a tool; sanitizers.cpp and ncu.cpp each start their own kind of run early.
#pragma once

#include "tools.hpp"

#include "calls.hpp"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace workbook {

/// \brief A probe run under a tool that this checker drives itself: a runner of the student's
/// code starts under the tool at once (the tool's start and its CUDA's overlap what follows), and
/// the probe runs here, every call going to that runner, the first time its result is asked
/// for; then the runner ends, and the tool writes its report. No second judge process: its CUDA
/// start would cost as much as the runner's, and CUDA starts one process at a time.
class ProbeRun {
public:
    /// \brief Starts the runner under the tool.
    /// \param tool_and_args the tool's name (looked up with find_tool) and its arguments
    /// \param probe the probe's name
    /// \snippet grading/judge/ncu.cpp run under ncu
    ProbeRun(const std::vector<std::string>& tool_and_args, std::string probe);

    /// \brief The run: the tool's report and exit status (1 when the probe itself failed, its
    /// message at the end of the output), or why the tool could not run. Runs the probe the
    /// first time.
    const ToolRun& result();

private:
    std::string probe_;
    std::unique_ptr<remote::Runner> runner_;
    ToolRun result_;
    bool done_ = false;
};

/// \brief A probe as WORKBOOK_PROBE registered it.
struct Probe {
    ProbeFunction body = nullptr;              ///< the GPU work
    std::vector<std::string> sanitizer_tools;  ///< the compute-sanitizer tools the checker's tests run on it
};

/// \brief Every registered probe, by name (register_probe adds to it; tool_run.cpp).
std::map<std::string, Probe>& probes();

/// \brief Starts, for every probe, a ProbeRun under each compute-sanitizer tool it names;
/// sanitize() then takes its result instead of starting one (sanitizers.cpp).
/// \return for each run started, a wait until it is done
std::vector<std::function<void()>> start_sanitizer_runs_early();

/// \brief Starts a ProbeRun under ncu for every counter reading asked for with
/// read_counters_early; read_counters() then takes its result (ncu.cpp).
/// \return for each run started, a wait until it is done
std::vector<std::function<void()>> start_counter_readings_early();

/// \brief Waits for one byte on a pipe, then closes it: how a checker held for its turn waits
/// (checker_main.cpp).
/// \param fd the pipe's read end
/// \return false when the pipe closed with no byte: the wait ended without a go
bool wait_for_byte(int fd);

}  // namespace workbook
