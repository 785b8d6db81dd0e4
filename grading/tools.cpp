#include "tools.hpp"

#include "common/launch_record.hpp"
#include "common/timing.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <tuple>
#include <utility>
#include <sstream>

namespace workbook {

namespace {

struct Probe {
    ProbeFunction body = nullptr;
    std::vector<std::string> sanitizer_tools;  // the tools the checker's tests run on it
};

std::map<std::string, Probe>& probes()
{
    static std::map<std::string, Probe> registry;
    return registry;
}

// The compute-sanitizer runs started early, by (tool, probe).
std::map<std::pair<std::string, std::string>, std::shared_future<SanitizerReport>>& early_runs()
{
    static std::map<std::pair<std::string, std::string>, std::shared_future<SanitizerReport>> runs;
    return runs;
}

// The counter readings asked for early (read_counters_early), and those started, by request.
struct CounterRequest {
    std::string probe, kernel_regex;
    std::vector<std::string> metrics;
    bool operator<(const CounterRequest& o) const
    {
        return std::tie(probe, kernel_regex, metrics) < std::tie(o.probe, o.kernel_regex, o.metrics);
    }
};
std::vector<CounterRequest>& early_counter_requests()
{
    static std::vector<CounterRequest> requests;
    return requests;
}
std::map<CounterRequest, std::shared_future<CounterReading>>& early_counters()
{
    static std::map<CounterRequest, std::shared_future<CounterReading>> readings;
    return readings;
}

std::string g_skip_reason;

std::string quoted(const std::string& arg)
{
    std::string out = "'";
    for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
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

// One launch that ncu profiled, read from its --csv output: the kernel and its metrics.
struct Profile {
    std::string kernel;
    std::map<std::string, double> metrics;

    double get(const std::string& name) const
    {
        const auto found = metrics.find(name);
        return found == metrics.end() ? NAN : found->second;
    }
    // What explain_slowness reads from them (defined below, beside the metrics they name).
    double conflicts_per_request() const;
    std::pair<double, std::string> blocks_per_sm() const;
    std::pair<std::string, double> top_stall() const;
};

// The launches in ncu's CSV output, one Profile per launch ID: the one reader of that output.
std::vector<Profile> read_profiles(const std::string& output)
{
    std::map<std::string, Profile> by_id;
    std::istringstream in(output);
    std::string line;
    int id = -1, kernel = -1, name = -1, value = -1;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] != '"') continue;
        const std::vector<std::string> fields = csv_fields(line);
        if (name < 0) {
            for (std::size_t i = 0; i < fields.size(); ++i) {
                if (fields[i] == "ID") id = static_cast<int>(i);
                if (fields[i] == "Kernel Name" || fields[i] == "Function Name") kernel = static_cast<int>(i);
                if (fields[i] == "Metric Name") name = static_cast<int>(i);
                if (fields[i] == "Metric Value") value = static_cast<int>(i);
            }
            continue;
        }
        if (id < 0 || value < 0 || static_cast<int>(fields.size()) <= std::max({id, name, value, kernel})) continue;
        std::string digits;
        for (char c : fields[value])
            if (c != ',') digits += c;  // ncu writes 16,515,072
        Profile& p = by_id[fields[id]];
        if (kernel >= 0) p.kernel = fields[kernel];
        p.metrics[fields[name]] = std::atof(digits.c_str());
    }
    std::vector<Profile> profiles;
    for (auto& entry : by_id) profiles.push_back(std::move(entry.second));
    return profiles;
}

// Why ncu read no counters, when it says it may not read them here; otherwise "".
std::string counters_forbidden(const std::string& output)
{
    if (!contains(output, "ERR_NVGPUCTRPERM")) return "";
    return "ncu may not read the GPU's counters here (ERR_NVGPUCTRPERM: profiling needs root or "
           "NVreg_RestrictProfilingToAdminUsers=0)";
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

bool register_probe(const std::vector<std::string>& name_and_tools, ProbeFunction body)
{
    Probe& probe = probes()[name_and_tools.at(0)];
    probe.body = body;
    probe.sanitizer_tools.assign(name_and_tools.begin() + 1, name_and_tools.end());
    return true;
}

bool run_probe(const std::string& name)
{
    const auto found = probes().find(name);
    if (found == probes().end()) return false;
    found->second.body();
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

ToolRun run_self_under(const std::vector<std::string>& tool_and_args, const std::vector<std::string>& self_args,
                       const std::vector<std::string>& environment, int timeout_s, Target target)
{
    ToolRun run;
    //! [find tool]
    const std::string tool = find_tool(tool_and_args.at(0));
    //! [find tool]
    if (tool.empty()) {
        run.why_not = tool_and_args[0] + " is not installed (not on PATH, not in /usr/local/cuda/bin)";
        return run;
    }
    std::string command = "timeout -k 5 " + std::to_string(timeout_s) + " env";
    for (const std::string& setting : environment) command += " " + quoted(setting);
    if (target == Target::runner) {
        // The judge starts its runner under the tool, inside the runner's sandbox (remote.hpp).
        std::string words = tool;
        for (std::size_t i = 1; i < tool_and_args.size(); ++i) words += "\n" + tool_and_args[i];
        command += " " + quoted("WORKBOOK_RUNNER_TOOL=" + words);
    } else {
        command += " " + quoted(tool);
        for (std::size_t i = 1; i < tool_and_args.size(); ++i) command += " " + quoted(tool_and_args[i]);
    }
    command += " " + quoted(this_program());
    for (const std::string& arg : self_args) command += " " + quoted(arg);
    command += " 2>&1";
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

ToolRun run_probe_under(const std::vector<std::string>& tool_and_args, const std::string& probe,
                        int timeout_s)
{
    return run_self_under(tool_and_args, {"--workbook-probe=" + probe}, {}, timeout_s, Target::runner);
}

namespace {

CounterReading run_ncu(const std::string& probe, const std::string& kernel_regex,
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
    reading.why_not = counters_forbidden(run.output);
    if (!reading.why_not.empty()) return reading;
    const std::vector<Profile> profiles = read_profiles(run.output);
    for (const Profile& launch : profiles)
        for (const auto& metric : launch.metrics) reading.values[metric.first] += metric.second;
    reading.launches = static_cast<int>(profiles.size());
    if (reading.launches == 0) {
        reading.why_not = "ncu profiled no kernel matching \"" + kernel_regex + "\" (exit status " +
                          std::to_string(run.exit_code) + "):\n" + run.output.substr(0, 2000);
        reading.values.clear();
        return reading;
    }
    reading.available = true;
    return reading;
}

}  // namespace

CounterReading read_counters(const std::string& probe, const std::string& kernel_regex,
                             const std::vector<std::string>& metrics)
{
    const auto early = early_counters().find({probe, kernel_regex, metrics});
    if (early != early_counters().end()) return early->second.get();
    return run_ncu(probe, kernel_regex, metrics);
}

bool read_counters_early(const std::string& probe, const std::string& kernel_regex,
                         const std::vector<std::string>& metrics)
{
    early_counter_requests().push_back({probe, kernel_regex, metrics});
    return true;
}

namespace {

SanitizerReport run_sanitizer(const std::string& tool, const std::string& probe, int timeout_s)
{
    constexpr int kFoundSomething = 86;  // any status the probe itself never uses
    SanitizerReport report;
    const ToolRun run = run_probe_under({"compute-sanitizer", "--tool", tool, "--error-exitcode",
                                         std::to_string(kFoundSomething), "--print-limit", "20"},
                                        probe, timeout_s);
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

}  // namespace

SanitizerReport sanitize(const std::string& tool, const std::string& probe)
{
    const auto early = early_runs().find({tool, probe});
    if (early != early_runs().end()) return early->second.get();
    return run_sanitizer(tool, probe, 180);
}

void start_tool_runs_early()
{
    // A minute each: a probe that hangs under a tool must not hold up the measurements for long.
    constexpr int kEarlyTimeout = 60;
    for (const auto& [name, probe] : probes())
        for (const std::string& tool : probe.sanitizer_tools)
            early_runs()[{tool, name}] =
                std::async(std::launch::async, run_sanitizer, tool, name, kEarlyTimeout).share();
    // Counts of events in a kernel do not depend on what else runs on the GPU.
    for (const CounterRequest& request : early_counter_requests())
        early_counters()[request] = std::async(std::launch::async, run_ncu, request.probe, request.kernel_regex,
                                               request.metrics).share();
    // No measurement shares the GPU with them (and Nsight Compute locks its clocks while it
    // profiles): time_gpu waits for each first.
    for (const auto& [key, run] : early_runs()) add_background_gpu_work([run = run] { run.wait(); });
    for (const auto& [key, reading] : early_counters()) add_background_gpu_work([reading = reading] { reading.wait(); });
}

namespace {

// What explain_slowness asks Nsight Compute for, about the timed kernel and the reference's.
const char* const kBlock = "launch__block_size";
const char* const kRegisters = "launch__registers_per_thread";
const char* const kOccupancy = "sm__warps_active.avg.pct_of_peak_sustained_active";
const char* const kDram = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
const char* const kDuration = "gpu__time_duration.sum";
const char* const kConflicts[] = {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                                  "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"};
const char* const kSharedRequests[] = {"smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum"};
// Each limit is how many blocks fit on an SM by one resource; the smallest one rules.
// (On a tie the first named rules: the hardware's cap on blocks per SM, then threads.)
const char* const kLimits[][2] = {{"launch__occupancy_limit_blocks", "blocks per SM"},
                                  {"launch__occupancy_limit_warps", "threads"},
                                  {"launch__occupancy_limit_registers", "registers"},
                                  {"launch__occupancy_limit_shared_mem", "shared memory"}};
const char* const kStallPrefix = "smsp__average_warps_issue_stalled_";
const char* const kStallSuffix = "_per_issue_active.ratio";

double Profile::conflicts_per_request() const
{
    const double requests = get(kSharedRequests[0]) + get(kSharedRequests[1]);
    return requests > 0 ? (get(kConflicts[0]) + get(kConflicts[1])) / requests : 0;
}

// How many blocks fit on an SM, and which resource decides it.
std::pair<double, std::string> Profile::blocks_per_sm() const
{
    std::pair<double, std::string> fit{INFINITY, ""};
    for (const auto& limit : kLimits)
        if (get(limit[0]) < fit.first) fit = {get(limit[0]), limit[1]};
    return fit;
}

// The reason warps stall most, and its ratio (stalled warps per issued instruction).
std::pair<std::string, double> Profile::top_stall() const
{
    std::pair<std::string, double> top{"", 0};
    for (const auto& m : metrics) {
        if (m.first.rfind(kStallPrefix, 0) != 0 || m.first.size() < std::strlen(kStallSuffix)) continue;
        std::string reason = m.first.substr(std::strlen(kStallPrefix));
        reason.resize(reason.size() - std::min(reason.size(), std::strlen(kStallSuffix)));
        if (reason == "selected" || reason.find("not_issued") != std::string::npos) continue;
        if (m.second > top.second) top = {reason, m.second};
    }
    return top;
}

// Profiles one side's timed call of a test (see time_call in judge.hpp) and returns its
// longest kernel, or sets why_not.
bool profile_side(const std::string& test, int call, const char* who, Profile& longest, std::string& why_not)
{
    std::string metrics = std::string(kBlock) + "," + kRegisters + "," + kOccupancy + "," + kDram + "," + kDuration;
    for (const char* m : kConflicts) metrics += std::string(",") + m;
    for (const char* m : kSharedRequests) metrics += std::string(",") + m;
    for (const auto& limit : kLimits) metrics += std::string(",") + limit[0];
    metrics += std::string(",regex:") + kStallPrefix + ".*" + kStallSuffix;
    std::string filter = test;  // doctest: ',' separates filters, '*' and '?' are wildcards
    std::replace(filter.begin(), filter.end(), ',', '?');
    //! [profile]
    // On the judge, ncu must not follow it into the runners it starts (another user, another PID
    // namespace), which it cannot attach to: it would wait for them.
    const ToolRun run = run_self_under({"ncu", "--csv", "--target-processes", "application-only", "--nvtx",
                                        "--nvtx-include", "workbook-profile/", "--metrics", metrics},
                                       {"--test-case=" + filter},
                                       {std::string("WORKBOOK_PROFILE=") + who, "WORKBOOK_PROFILE_CALL=" + std::to_string(call)},
                                       120, std::strcmp(who, "yours") == 0 ? Target::runner : Target::judge);
    //! [profile]
    if (!run.ran) {
        why_not = run.why_not;
        return false;
    }
    why_not = counters_forbidden(run.output);
    if (!why_not.empty()) return false;
    const std::vector<Profile> profiles = read_profiles(run.output);
    if (profiles.empty()) {
        why_not = "ncu profiled no kernel (exit status " + std::to_string(run.exit_code) + "):\n" +
                  run.output.substr(run.output.size() > 1500 ? run.output.size() - 1500 : 0);
        return false;
    }
    longest = *std::max_element(profiles.begin(), profiles.end(), [](const Profile& a, const Profile& b) {
        return a.get(kDuration) < b.get(kDuration);
    });
    return true;
}

std::string number(double v, int decimals = 0)
{
    if (std::isnan(v)) return "?";
    char text[32];
    std::snprintf(text, sizeof text, "%.*f", decimals, v);
    return text;
}

std::string stall_words(const std::string& reason)
{
    static const std::map<std::string, std::string> words = {
        {"long_scoreboard", "waiting for global memory"},
        {"short_scoreboard", "waiting for shared memory"},
        {"barrier", "waiting at __syncthreads()"},
        {"mio_throttle", "shared-memory queue full"},
        {"lg_throttle", "global-memory queue full"},
        {"math_pipe_throttle", "arithmetic units busy"},
        {"wait", "fixed-latency dependencies"},
        {"not_selected", "ready, another warp issued"},
        {"imc_miss", "constant-cache miss"},
        {"no_instruction", "instruction-cache miss"},
        {"dispatch_stall", "dispatch stall"},
        {"membar", "memory barrier"},
        {"branch_resolving", "resolving branches"}};
    const auto found = words.find(reason);
    return found == words.end() ? reason : found->second + " (" + reason + ")";
}

// A one-line hint from the largest difference between the two profiles.
std::string hint_from(const Profile& yours, const Profile& theirs)
{
    std::vector<std::pair<double, std::string>> candidates;
    const double block = yours.get(kBlock);
    const auto fit = yours.blocks_per_sm();
    const std::string blocks_text = "your blocks have " + number(block) + " threads and " + number(yours.get(kRegisters)) +
                                    " registers per thread: only " + number(fit.first) + " fit on an SM (limited by " +
                                    fit.second + ")";
    const double occupancy = yours.get(kOccupancy), their_occupancy = theirs.get(kOccupancy);
    if (occupancy < 0.8 * their_occupancy)
        candidates.push_back({their_occupancy / std::max(occupancy, 1.0),
                              blocks_text + ", so the SMs keep " + number(occupancy) + "% of their warps busy against the "
                              "reference's " + number(their_occupancy) + "%. " +
                              (block >= 512 ? "Large blocks also idle while their warps wait at a barrier: try 128 to 256 "
                                              "threads per block, each thread doing more than one element."
                               : block < 64 ? "Small blocks leave warps empty and hit the blocks-per-SM limit: use 128 "
                                              "to 512 threads per block."
                                            : "Use fewer registers or less shared memory per block, or smaller blocks.")});
    const double conflicts = yours.conflicts_per_request(), their_conflicts = theirs.conflicts_per_request();
    if (conflicts > their_conflicts + 0.5)
        candidates.push_back({(conflicts + 1) / (their_conflicts + 1),
                              "each shared-memory request of yours has " + number(conflicts, 1) + " bank conflicts (the "
                              "reference's " + number(their_conflicts, 1) + "): the threads of a warp hit the same bank. "
                              "Give each tile row one spare float, so that a column spreads over all 32 banks."});
    const double dram = yours.get(kDram), their_dram = theirs.get(kDram);
    if (dram < 0.8 * their_dram)
        candidates.push_back({their_dram / std::max(dram, 1.0),
                              "your kernel draws " + number(dram) + "% of DRAM's bandwidth, the reference " +
                              number(their_dram) + "%: are consecutive threads (threadIdx.x) on consecutive addresses in "
                              "every load and store, so that each warp's accesses coalesce?"});
    const auto stall = yours.top_stall(), their_stall = theirs.top_stall();
    if (!stall.first.empty() && stall.first != their_stall.first)
        candidates.push_back({1.1, "your warps stall most " + stall_words(stall.first) + ", the reference's " +
                                       stall_words(their_stall.first) + "."});
    if (candidates.empty())
        return block != theirs.get(kBlock)
                   ? blocks_text + "; the reference's have " + number(theirs.get(kBlock)) + ". Try its block size."
                   : "the counters show no single cause: compare the two columns above.";
    return std::max_element(candidates.begin(), candidates.end())->second;
}

}  // namespace

std::string explain_slowness(const std::string& test_name, int timed_call)
{
    Profile yours, theirs;
    std::string why_not;
    if (!profile_side(test_name, timed_call, "yours", yours, why_not) ||
        !profile_side(test_name, timed_call, "reference", theirs, why_not))
        return "Nsight Compute could not explain it, so the timing above is all there is: " + why_not;
    const auto row = [](const std::string& label, const std::string& a, const std::string& b) {
        char text[256];
        std::snprintf(text, sizeof text, "  %-36s %-22s %s\n", label.c_str(), a.c_str(), b.c_str());
        return std::string(text);
    };
    const auto fit = [](const Profile& p) { return number(p.blocks_per_sm().first) + " (" + p.blocks_per_sm().second + ")"; };
    const auto stall = [](const Profile& p) {
        const auto top = p.top_stall();
        return top.first.empty() ? std::string("?") : top.first + " " + number(top.second, 1);
    };
    const auto short_name = [](const std::string& name) { return name.size() > 22 ? name.substr(0, 21) + "~" : name; };
    std::string text = "Nsight Compute, the timed kernel beside the reference's:\n";
    text += row("", "yours", "reference");
    text += row("kernel", short_name(yours.kernel), short_name(theirs.kernel));
    text += row("time (ms, under the profiler)", number(yours.get(kDuration) / 1e6, 3), number(theirs.get(kDuration) / 1e6, 3));
    text += row("threads per block", number(yours.get(kBlock)), number(theirs.get(kBlock)));
    text += row("registers per thread", number(yours.get(kRegisters)), number(theirs.get(kRegisters)));
    text += row("blocks that fit on an SM", fit(yours), fit(theirs));
    text += row("achieved occupancy (%)", number(yours.get(kOccupancy)), number(theirs.get(kOccupancy)));
    text += row("DRAM throughput (% of peak)", number(yours.get(kDram)), number(theirs.get(kDram)));
    text += row("bank conflicts per shared request", number(yours.conflicts_per_request(), 2),
                number(theirs.conflicts_per_request(), 2));
    text += row("top warp stall (per issue)", stall(yours), stall(theirs));
    return text + "Hint: " + hint_from(yours, theirs);
}

void skip_test(const std::string& reason)
{
    g_skip_reason = reason.empty() ? "skipped" : reason;
}

const std::string& skip_reason() { return g_skip_reason; }

void clear_skip() { g_skip_reason.clear(); }

}  // namespace workbook
