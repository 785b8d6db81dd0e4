// compute-sanitizer's runs of a probe (sanitize in tools.hpp): the run, its verdict from the exit
// status, the report lines worth showing, and the runners that start early, beside the
// checker's first tests.
#include "tools.hpp"
#include "tool_run.hpp"

#include <cstdlib>
#include <memory>
#include <sstream>
#include <utility>

namespace workbook {

namespace {

// The compute-sanitizer runs started early, by (tool, probe).
std::map<std::pair<std::string, std::string>, std::shared_ptr<ProbeRun>>& early_runs()
{
    static std::map<std::pair<std::string, std::string>, std::shared_ptr<ProbeRun>> runs;
    return runs;
}

constexpr int kFoundSomething = 86;  // any status the probe itself never uses

// compute-sanitizer with one of its tools, as every run starts it.
std::vector<std::string> sanitizer_command(const std::string& tool)
{
    return {"compute-sanitizer", "--tool", tool, "--error-exitcode", std::to_string(kFoundSomething), "--print-limit", "20"};
}

// The first lines of a tool's report worth showing a student.
std::string report_lines(const std::string& output, std::size_t limit)
{
    std::istringstream in(output);
    std::string line, kept;
    std::size_t n = 0;
    while (std::getline(in, line) && n < limit) {
        if (line.rfind("========= ", 0) != 0) continue;
        kept += line + "\n";
        ++n;
    }
    return kept;
}

// Whether the tool's report holds an error record: a line "========= " followed by a heading
// ("Invalid __global__ read of size 4 bytes", "Program hit cudaErrorLaunchFailure ...", "Barrier
// error detected ...") rather than the tool's banner or summary, or a summary that counts errors.
// memcheck stops a kernel at its first bad access, so the probe fails before the tool can exit
// with kFoundSomething: the probe's own failure comes back, and the findings still stand.
bool reports_an_error(const std::string& output)
{
    std::istringstream in(output);
    std::string line;
    const std::string mark = "========= ", summary = "ERROR SUMMARY: ";
    while (std::getline(in, line)) {
        if (line.rfind(mark, 0) != 0 || line.size() == mark.size() || line[mark.size()] == ' ') continue;
        const std::string heading = line.substr(mark.size());
        if (heading.rfind(summary, 0) == 0) {
            if (std::strtol(heading.c_str() + summary.size(), nullptr, 10) > 0) return true;
            continue;
        }
        // The tool's own lines: its banner, other summaries, and what it says of the exit status.
        const bool the_tools = heading.rfind("COMPUTE-SANITIZER", 0) == 0 || heading.find("SUMMARY") != std::string::npos ||
                               heading.rfind("Target application", 0) == 0 || heading.rfind("Error: process didn't", 0) == 0;
        if (!the_tools) return true;
    }
    return false;
}

SanitizerReport report_of(const ToolRun& run)
{
    SanitizerReport report;
    if (!run.ran) {
        report.why_not = run.why_not;
    } else if (run.exit_code == kFoundSomething || (run.exit_code != 0 && reports_an_error(run.output))) {
        report.verdict = SanitizerReport::Verdict::findings;
        report.findings = report_lines(run.output, 30);
    } else if (run.exit_code == 0) {
        report.verdict = SanitizerReport::Verdict::clean;
    } else if (run.output.find("Device not supported") != std::string::npos ||
               run.output.find("Unable to find injection library") != std::string::npos) {
        report.why_not = "compute-sanitizer cannot run on this machine:\n" + run.output.substr(0, 1000);
    } else {
        report.verdict = SanitizerReport::Verdict::probe_failed;
        report.why_not = "the probe failed under compute-sanitizer (exit status " +
                         std::to_string(run.exit_code) + "):\n" + run.output.substr(0, 2000);
    }
    return report;
}

}  // namespace

SanitizerReport sanitize(const std::string& tool, const std::string& probe)
{
    const auto early = early_runs().find({tool, probe});
    if (early != early_runs().end()) return report_of(early->second->result());
    return report_of(ProbeRun(sanitizer_command(tool), probe).result());
}

std::vector<std::function<void()>> start_sanitizer_runs_early()
{
    std::vector<std::function<void()>> waits;
    for (const auto& [name, probe] : probes())
        for (const std::string& tool : probe.sanitizer_tools) {
            auto run = std::make_shared<ProbeRun>(sanitizer_command(tool), name);
            early_runs()[{tool, name}] = run;
            waits.push_back([run] { run->result(); });
        }
    return waits;
}

}  // namespace workbook
