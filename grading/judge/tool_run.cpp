// Running this very program's probes under a tool (tools.hpp): the registry of probes, finding
// the tool, a probe run on a runner under a tool that this process drives (ProbeRun), the
// whole program run again under a tool (a shell command under `timeout`, read through a pipe),
// and the early start of every tool's runner; also the skip reason, by which a test reports a
// tool that could not run. What is run, and how its output is read, is in ncu.cpp, slowness.cpp and
// sanitizers.cpp.
#include "tools.hpp"
#include "tool_run.hpp"

#include "common/check.hpp"
#include "common/launch_record.hpp"
#include "common/timing.hpp"

#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace workbook {

namespace {

std::string g_skip_reason;

// Why a tool that find_tool did not find cannot run.
std::string not_installed(const std::string& tool)
{
    return tool + " is not installed (not on PATH, not in /usr/local/cuda/bin)";
}

std::string quoted(const std::string& arg)
{
    std::string out = "'";
    for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

}  // namespace

std::map<std::string, Probe>& probes()
{
    static std::map<std::string, Probe> registry;
    return registry;
}

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
        run.why_not = not_installed(tool_and_args[0]);
        return run;
    }
    std::string command = "timeout -k 5 " + std::to_string(timeout_s) + " env";
    for (const std::string& setting : environment) command += " " + quoted(setting);
    if (target == Target::runner) {
        // The judge starts its runner under the tool, inside the runner's sandbox (calls.hpp).
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

ProbeRun::ProbeRun(const std::vector<std::string>& tool_and_args, std::string probe) : probe_(std::move(probe))
{
    std::vector<std::string> words = tool_and_args;
    words.at(0) = find_tool(tool_and_args.at(0));
    if (words[0].empty()) {
        result_.why_not = not_installed(tool_and_args[0]);
        done_ = true;
        return;
    }
    runner_ = std::make_unique<remote::Runner>(this_program() + "_runner", "your code", words);
    runner_->keep_tool_output();
    runner_->start_early();
}

const ToolRun& ProbeRun::result()
{
    if (std::exchange(done_, true)) return result_;
    std::string failure;
    try {
        remote::with_runner(*runner_, [&] {
            if (!run_probe(probe_)) throw std::runtime_error("no probe named \"" + probe_ + "\"");
            CUDA_CHECK(cudaDeviceSynchronize());
        });
    } catch (const std::exception& e) {
        failure = "probe " + probe_ + " failed: " + e.what() + "\n";
    }
    // The tool writes its report as the runner exits, and its exit status is the tool's verdict.
    const int status = runner_->finish();
    result_.ran = true;
    result_.output = runner_->tool_output() + failure;
    result_.exit_code = !failure.empty() ? 1 : status > 0 ? status : 0;
    runner_.reset();
    return result_;
}

void start_tool_runs_early()
{
    std::vector<std::function<void()>> waits = start_sanitizer_runs_early();
    // Counts of events in a kernel do not depend on what else runs on the GPU.
    for (std::function<void()>& wait : start_counter_readings_early()) waits.push_back(std::move(wait));
    // No measurement shares the GPU with them: time_gpu has each run done first. A runner of the
    // student's code left waiting under its tool could run the student's threads meanwhile.
    for (std::function<void()>& wait : waits) add_background_gpu_work(std::move(wait));
}

bool wait_for_byte(int fd)
{
    char byte = 0;
    ssize_t n;
    while ((n = ::read(fd, &byte, 1)) < 0 && errno == EINTR) {
    }
    ::close(fd);
    return n == 1;
}

void skip_test(const std::string& reason)
{
    g_skip_reason = reason.empty() ? "skipped" : reason;
}

const std::string& skip_reason() { return g_skip_reason; }

void clear_skip() { g_skip_reason.clear(); }

}  // namespace workbook
