// Nsight Compute's hardware counters for a probe (read_counters in tools.hpp): running a probe
// on a runner under ncu, reading its CSV output (ncu.hpp, shared with slowness.cpp), and the
// runners that start early, beside the checker's first tests.
#include "tools.hpp"
#include "ncu.hpp"
#include "tool_run.hpp"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <tuple>
#include <utility>

namespace workbook {

namespace {

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
std::map<CounterRequest, std::shared_ptr<ProbeRun>>& early_runs()
{
    static std::map<CounterRequest, std::shared_ptr<ProbeRun>> runs;
    return runs;
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

}  // namespace

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

std::string counters_forbidden(const std::string& output)
{
    if (!contains(output, "ERR_NVGPUCTRPERM")) return "";
    return "ncu may not read the GPU's counters here (ERR_NVGPUCTRPERM: profiling needs root or "
           "NVreg_RestrictProfilingToAdminUsers=0)";
}

namespace {

// ncu reading these metrics of the kernels that match, as every reading starts it.
std::vector<std::string> ncu_command(const std::string& kernel_regex, const std::vector<std::string>& metrics)
{
    std::string list;
    for (const auto& m : metrics) list += (list.empty() ? "" : ",") + m;
    //! [run under ncu]
    return {"ncu", "--csv", "--metrics", list, "--kernel-name", "regex:" + kernel_regex};
    //! [run under ncu]
}

CounterReading reading_of(const ToolRun& run, const std::string& kernel_regex)
{
    CounterReading reading;
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
    const auto early = early_runs().find({probe, kernel_regex, metrics});
    if (early != early_runs().end()) return reading_of(early->second->result(), kernel_regex);
    return reading_of(ProbeRun(ncu_command(kernel_regex, metrics), probe).result(), kernel_regex);
}

bool read_counters_early(const std::string& probe, const std::string& kernel_regex,
                         const std::vector<std::string>& metrics)
{
    early_counter_requests().push_back({probe, kernel_regex, metrics});
    return true;
}

std::vector<std::function<void()>> start_counter_readings_early()
{
    std::vector<std::function<void()>> waits;
    for (const CounterRequest& request : early_counter_requests()) {
        auto run = std::make_shared<ProbeRun>(ncu_command(request.kernel_regex, request.metrics), request.probe);
        early_runs()[request] = run;
        waits.push_back([run] { run->result(); });
    }
    return waits;
}

}  // namespace workbook
