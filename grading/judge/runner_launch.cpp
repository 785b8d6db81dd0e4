// Starting a runner's process (Runner::launch): its sandboxed command, environment and output relay, apart from its calls.
#include "calls.hpp"

#include "sandbox.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace workbook::remote {

namespace {

// Whether the user nobody can reach and run `path`: every folder above it searchable by others.
bool others_can_run(const std::string& path)
{
    struct stat info;
    if (stat(path.c_str(), &info) != 0 || (info.st_mode & S_IXOTH) == 0) return false;
    for (std::string dir = path; dir.size() > 1;) {
        dir.resize(dir.find_last_of('/') == 0 ? 1 : dir.find_last_of('/'));
        if (stat(dir.c_str(), &info) != 0 || (info.st_mode & S_IXOTH) == 0) return false;
    }
    return true;
}

// A copy of the runner that the user nobody may run, when the build folder is private (without
// the minimal view, which binds the file itself).
std::string runnable_copy(const std::string& program)
{
    if (others_can_run(program)) return program;
    static std::map<std::string, std::string> copies;
    std::string& copy = copies[program];
    if (!copy.empty()) return copy;
    char dir[] = "/tmp/workbook-runner-XXXXXX";
    if (mkdtemp(dir) == nullptr) return program;
    chmod(dir, 0755);
    copy = std::string(dir) + "/" + program.substr(program.find_last_of('/') + 1);
    std::ifstream in(program, std::ios::binary);
    std::ofstream out(copy, std::ios::binary);
    out << in.rdbuf();
    out.close();
    chmod(copy.c_str(), 0755);
    return copy;
}

// A folder for this checker's runners as the user nobody, removed when the checker exits.
const std::string& runner_home()
{
    struct Home {
        std::string path = "/nonexistent";  // where no folder could be made: nothing to write
        std::string made;
        Home()
        {
            char dir[] = "/tmp/workbook-home-XXXXXX";
            const passwd* nobody = getpwnam("nobody");
            if (nobody == nullptr || mkdtemp(dir) == nullptr) return;
            made = dir;
            if (chown(dir, nobody->pw_uid, nobody->pw_gid) == 0) path = made;
        }
        ~Home()
        {
            std::error_code ignored;
            if (!made.empty()) std::filesystem::remove_all(made, ignored);
        }
    };
    static const Home home;
    return home.path;
}

// The descriptor of the runner's socket, in the runner.
constexpr int kRunnerFd = 3;

// Says once per checker what the sandbox holds, and what this machine could not give.
void tell_sandbox_once(const Sandbox& sandbox)
{
    static bool told = false;
    if (told) return;
    told = true;
    std::printf("runner sandbox: %s\n", sandbox.description.c_str());
    for (const std::string& missing : sandbox.missing) std::printf("runner sandbox: not here: %s\n", missing.c_str());
    std::fflush(stdout);
}

// The command that starts a runner: the sandbox's namespaces and user, the tool if any, the runner.
std::vector<std::string> runner_command(const Sandbox& sandbox, const std::vector<std::string>& tool,
                                        const std::string& program)
{
    // Every runner runs as the sandbox's user, under a tool too (Nsight Compute included: the
    // student's static initializers run inside whatever it starts). In the minimal view the
    // program file itself is bound where nobody can run it; otherwise nobody needs a copy it
    // can reach where the build folder is private.
    const bool copy = sandbox.as_nobody && !sandbox.minimal_view;
    return sandboxed_command(sandbox, tool, copy ? runnable_copy(program) : program);
}

// The runner's environment: this process's, less the judge's settings, plus where its socket is.
std::vector<std::string> runner_environment(const Sandbox& sandbox)
{
    // Nothing of the judge's settings (the seed, the ceilings) reaches the runner.
    // In the minimal view, the judge's home and temporary folder are not there: both are the
    // view's own empty /tmp.
    const auto replaced = [&](const char* setting) {
        return ((sandbox.as_nobody || sandbox.minimal_view) && std::strncmp(setting, "HOME=", 5) == 0) ||
               (sandbox.minimal_view && std::strncmp(setting, "TMPDIR=", 7) == 0);
    };
    std::vector<std::string> environment;
    for (char** e = environ; *e != nullptr; ++e)
        if (std::strncmp(*e, "WORKBOOK_", 9) != 0 && !replaced(*e)) environment.push_back(*e);
    // The user nobody gets a home of its own, where a tool (ncu) keeps its settings.
    if (sandbox.minimal_view) environment.push_back("HOME=/tmp");
    else if (sandbox.as_nobody) environment.push_back("HOME=" + runner_home());
    environment.push_back("WORKBOOK_RUNNER_FD=" + std::to_string(kRunnerFd));
    return environment;
}

// Relays what a runner prints (its standard output and error, through `fd`) to this process's
// output, each line quoted as the student's code's own ("your code: ..."), until kMostPrinted
// bytes; one line then says the rest is not shown. A thread of its own, which ends when every
// process of the runner has closed the pipe.
void relay_output(int fd)
{
    std::thread([fd] {
        constexpr std::size_t kMostPrinted = 64 * 1024, kLongestLine = 1000;
        std::size_t shown = 0;
        bool cut = false;
        std::string line;
        const auto emit = [&] {
            if (line.empty()) return;
            if (line.back() != '\n') line += '\n';
            if (shown + line.size() <= kMostPrinted) {
                std::fprintf(stdout, "your code: %s", line.c_str());
                std::fflush(stdout);
                shown += line.size();
            } else if (!cut) {
                cut = true;
                std::fprintf(stdout, "your code: ... (the rest is not shown: only the first %zu KiB of what the "
                                     "process that runs your code prints is kept)\n", kMostPrinted / 1024);
                std::fflush(stdout);
            }
            line.clear();
        };
        char buffer[4096];
        for (;;) {
            const ssize_t n = ::read(fd, buffer, sizeof buffer);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            for (ssize_t i = 0; i < n; ++i) {
                line += buffer[i];
                if (buffer[i] == '\n' || line.size() >= kLongestLine) emit();
            }
        }
        emit();
        ::close(fd);
    }).detach();
}
}  // namespace

void Runner::launch()
{
    const Sandbox& sandbox = runner_sandbox();
    tell_sandbox_once(sandbox);
    std::vector<std::string> argv = runner_command(sandbox, tool_, program_);

    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
        throw std::runtime_error(std::string("cannot make a socket for the runner: ") + std::strerror(errno));
    std::vector<std::string> environment = runner_environment(sandbox);

    std::vector<char*> args, envp;
    for (std::string& word : argv) args.push_back(word.data());
    args.push_back(nullptr);
    for (std::string& setting : environment) envp.push_back(setting.data());
    envp.push_back(nullptr);

    // What the runner prints comes through a pipe of the judge's, relayed as the student's own
    // words (relay_output). Under a tool, the tool's report goes straight to this process's
    // output, which the judge that started it as a probe reads, or to the file of
    // keep_tool_output, which a judge running the tool itself reads (tool_output).
    int printed[2] = {-1, -1};
    if (tool_.empty() && pipe2(printed, O_CLOEXEC) != 0)
        throw std::runtime_error(std::string("cannot make a pipe for the runner's output: ") + std::strerror(errno));
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error(std::string("cannot start the runner: ") + std::strerror(errno));
    if (pid == 0) {
        // Only async-signal-safe calls between fork and exec.
        if (sandbox.reaper) setsid();  // its own session, which kill_descendants ends
        // Killed with the checker (by a grader's timeout, say), and so is the namespace below it.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (printed[1] >= 0) {
            dup2(printed[1], 1);
            dup2(printed[1], 2);
        } else if (tool_output_ >= 0) {
            dup2(tool_output_, 1);  // dup2 clears close-on-exec; both share one offset
            dup2(tool_output_, 2);
        }
        // The runner gets its socket and the standard streams, no other descriptor of the
        // judge's (the results pipe above all).
        if (pair[1] != kRunnerFd) dup2(pair[1], kRunnerFd);
        fcntl(kRunnerFd, F_SETFD, 0);
        close_range(kRunnerFd + 1, ~0U, 0);
        if (chdir("/") != 0) _exit(126);
        execve(args[0], args.data(), envp.data());
        _exit(127);
    }
    ::close(pair[1]);
    if (printed[1] >= 0) {
        ::close(printed[1]);
        relay_output(printed[0]);
    }
    pid_ = pid;
    socket_ = pair[0];
    record_pending_ = false;
    greeted_ = false;
    defined_.clear();
}

}  // namespace workbook::remote
