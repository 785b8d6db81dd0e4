// Why a kernel is slower than the reference, in Nsight Compute's words (explain_slowness in
// tools.hpp): the failing test runs twice more under ncu, once for each side's timed call; the
// two kernels are set side by side, and a hint is drawn from their largest difference.
#include "tools.hpp"
#include "ncu.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <utility>

namespace workbook {

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

// Bank conflicts per shared-memory request, loads and stores together.
double conflicts_per_request(const Profile& p)
{
    const double requests = p.get(kSharedRequests[0]) + p.get(kSharedRequests[1]);
    return requests > 0 ? (p.get(kConflicts[0]) + p.get(kConflicts[1])) / requests : 0;
}

// How many blocks fit on an SM, and which resource decides it.
std::pair<double, std::string> blocks_per_sm(const Profile& p)
{
    std::pair<double, std::string> fit{INFINITY, ""};
    for (const auto& limit : kLimits)
        if (p.get(limit[0]) < fit.first) fit = {p.get(limit[0]), limit[1]};
    return fit;
}

// The reason warps stall most, and its ratio (stalled warps per issued instruction).
std::pair<std::string, double> top_stall(const Profile& p)
{
    std::pair<std::string, double> top{"", 0};
    for (const auto& m : p.metrics) {
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
    // namespace), which it cannot attach to: it would wait for them. At most the call's first 16
    // kernels: a call that launches one kernel per chunk, thousands of them, kept ncu busy until
    // its time limit (120 s, measured on an H100 with 2049 launches), and the hint never came.
    const ToolRun run = run_self_under({"ncu", "--csv", "--target-processes", "application-only", "--nvtx",
                                        "--nvtx-include", "workbook-profile/", "--launch-count", "16",
                                        "--metrics", metrics},
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
    const auto fit = blocks_per_sm(yours);
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
    const double conflicts = conflicts_per_request(yours), their_conflicts = conflicts_per_request(theirs);
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
    const auto stall = top_stall(yours), their_stall = top_stall(theirs);
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
    const auto fit = [](const Profile& p) { return number(blocks_per_sm(p).first) + " (" + blocks_per_sm(p).second + ")"; };
    const auto stall = [](const Profile& p) {
        const auto top = top_stall(p);
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
    text += row("bank conflicts per shared request", number(conflicts_per_request(yours), 2),
                number(conflicts_per_request(theirs), 2));
    text += row("top warp stall (per issue)", stall(yours), stall(theirs));
    return text + "Hint: " + hint_from(yours, theirs);
}

}  // namespace workbook
