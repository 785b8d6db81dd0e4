#include "tools.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace workbook {

namespace {

std::map<std::string, ProbeFunction>& probes()
{
    static std::map<std::string, ProbeFunction> registry;
    return registry;
}

std::string g_skip_reason;

std::string quoted(const std::string& arg)
{
    std::string out = "'";
    for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::string self_path()
{
    char path[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    return n > 0 ? std::string(path, static_cast<std::size_t>(n)) : std::string();
}

bool contains(const std::string& text, const char* what) { return text.find(what) != std::string::npos; }

// Splits one CSV line of ncu's output ("a","b","1,234") into fields.
std::vector<std::string> csv_fields(const std::string& line)
{
    std::vector<std::string> fields;
    std::string field;
    bool in_quotes = false;
    for (char c : line) {
        if (c == '"') in_quotes = !in_quotes;
        else if (c == ',' && !in_quotes) fields.push_back(field), field.clear();
        else field += c;
    }
    fields.push_back(field);
    return fields;
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

}  // namespace

bool register_probe(const char* name, ProbeFunction body)
{
    probes()[name] = body;
    return true;
}

bool run_probe(const std::string& name)
{
    const auto found = probes().find(name);
    if (found == probes().end()) return false;
    found->second();
    return true;
}

std::string find_tool(const std::string& name)
{
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "";
    dirs += ":/usr/local/cuda/bin";
    std::istringstream in(dirs);
    std::string dir;
    while (std::getline(in, dir, ':')) {
        if (dir.empty()) continue;
        const std::string candidate = dir + "/" + name;
        if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    return "";
}

ToolRun run_probe_under(const std::vector<std::string>& tool_and_args, const std::string& probe,
                        int timeout_s)
{
    ToolRun run;
    //! [find tool]
    const std::string tool = find_tool(tool_and_args.at(0));
    //! [find tool]
    if (tool.empty()) {
        run.why_not = tool_and_args[0] + " is not installed (not on PATH, not in /usr/local/cuda/bin)";
        return run;
    }
    std::string command = "timeout -k 5 " + std::to_string(timeout_s) + " " + quoted(tool);
    for (std::size_t i = 1; i < tool_and_args.size(); ++i) command += " " + quoted(tool_and_args[i]);
    command += " " + quoted(self_path()) + " " + quoted("--workbook-probe=" + probe) + " 2>&1";
    std::fflush(stdout);
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) {
        run.why_not = "could not start " + tool;
        return run;
    }
    char buffer[4096];
    std::size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) run.output.append(buffer, n);
    const int status = pclose(pipe);
    run.ran = true;
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return run;
}

CounterReading read_counters(const std::string& probe, const std::string& kernel_regex,
                             const std::vector<std::string>& metrics)
{
    CounterReading reading;
    std::string list;
    for (const auto& m : metrics) list += (list.empty() ? "" : ",") + m;
    //! [run under ncu]
    const ToolRun run = run_probe_under({"ncu", "--csv", "--metrics", list, "--kernel-name",
                                         "regex:" + kernel_regex},
                                        probe);
    //! [run under ncu]
    if (!run.ran) {
        reading.why_not = run.why_not;
        return reading;
    }
    if (contains(run.output, "ERR_NVGPUCTRPERM")) {
        reading.why_not = "ncu may not read the GPU's counters here (ERR_NVGPUCTRPERM: profiling "
                          "needs root or NVreg_RestrictProfilingToAdminUsers=0)";
        return reading;
    }
    std::istringstream in(run.output);
    std::string line;
    int name_col = -1, value_col = -1, id_col = -1;
    std::map<std::string, bool> launches;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] != '"') continue;
        const std::vector<std::string> fields = csv_fields(line);
        if (name_col < 0) {
            for (std::size_t i = 0; i < fields.size(); ++i) {
                if (fields[i] == "Metric Name") name_col = static_cast<int>(i);
                if (fields[i] == "Metric Value") value_col = static_cast<int>(i);
                if (fields[i] == "ID") id_col = static_cast<int>(i);
            }
            continue;
        }
        if (value_col < 0 || static_cast<int>(fields.size()) <= value_col) continue;
        std::string digits;
        for (char c : fields[value_col])
            if (c != ',') digits += c;  // ncu writes 16,515,072
        reading.values[fields[name_col]] += std::atof(digits.c_str());
        if (id_col >= 0) launches[fields[id_col]] = true;
    }
    reading.launches = static_cast<int>(launches.size());
    if (reading.launches == 0) {
        reading.why_not = "ncu profiled no kernel matching \"" + kernel_regex + "\" (exit status " +
                          std::to_string(run.exit_code) + "):\n" + run.output.substr(0, 2000);
        reading.values.clear();
        return reading;
    }
    reading.available = true;
    return reading;
}

SanitizerReport sanitize(const std::string& tool, const std::string& probe)
{
    constexpr int kFoundSomething = 86;  // any status the probe itself never uses
    SanitizerReport report;
    const ToolRun run = run_probe_under({"compute-sanitizer", "--tool", tool, "--error-exitcode",
                                         std::to_string(kFoundSomething), "--print-limit", "20"},
                                        probe);
    if (!run.ran) {
        report.why_not = run.why_not;
        return report;
    }
    if (run.exit_code == kFoundSomething) {
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

void skip_test(const std::string& reason)
{
    g_skip_reason = reason.empty() ? "skipped" : reason;
}

const std::string& skip_reason() { return g_skip_reason; }

void clear_skip() { g_skip_reason.clear(); }

}  // namespace workbook
