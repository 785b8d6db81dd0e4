// Finding the sandbox this machine gives the runner (sandbox.hpp), and the reaper's fallback.
#include "sandbox.hpp"

#include "tools.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

namespace workbook {

namespace {

// Runs a command with no output and returns whether it exited 0.
bool succeeds(std::vector<std::string> command)
{
    command.push_back("/bin/true");
    std::vector<char*> argv;
    for (std::string& word : command) argv.push_back(word.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) return false;
    if (pid == 0) {
        const int null = open("/dev/null", O_RDWR);
        dup2(null, 1);
        dup2(null, 2);
        execv(argv[0], argv.data());
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return false;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b)
{
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

Sandbox find_sandbox()
{
    Sandbox box;
    if (const char* off = std::getenv("WORKBOOK_SANDBOX"); off && std::strcmp(off, "none") == 0) {
        box.reaper = true;
        box.description = "none (WORKBOOK_SANDBOX=none)";
        box.missing = {"the sandbox is turned off (WORKBOOK_SANDBOX=none): the runner shares this user's "
                       "files and network, and only the checker's reaping ends what it leaves"};
        return box;
    }
    const bool root = geteuid() == 0;
    const std::string unshare = find_tool("unshare"), setpriv = find_tool("setpriv"), bwrap = find_tool("bwrap");

    // Level 1 and 3: namespaces for processes and the network.
    std::vector<std::string>& spaces = box.spaces;
    bool network = false, read_only = false;
    const std::vector<std::string> pid_space = {"--pid", "--fork", "--kill-child", "--mount-proc"};
    if (root && !unshare.empty()) {
        if (succeeds(std::vector<std::string>{unshare} + pid_space + std::vector<std::string>{"--net"})) {
            spaces = std::vector<std::string>{unshare} + pid_space + std::vector<std::string>{"--net"};
            network = true;
        } else if (succeeds(std::vector<std::string>{unshare} + pid_space)) {
            spaces = std::vector<std::string>{unshare} + pid_space;
        }
    }
    if (spaces.empty() && !root && !bwrap.empty()) {
        const std::vector<std::string> candidate = {bwrap, "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev",
                                                    "--proc", "/proc", "--unshare-pid", "--unshare-net",
                                                    "--die-with-parent"};
        if (succeeds(candidate)) {
            spaces = candidate;
            network = read_only = true;
        }
    }
    if (spaces.empty() && !root && !unshare.empty()) {
        const std::vector<std::string> candidate =
            std::vector<std::string>{unshare, "--user", "--map-root-user"} + pid_space + std::vector<std::string>{"--net"};
        if (succeeds(candidate)) {
            spaces = candidate;
            network = true;
        }
    }

    // Level 2: another user (root only), else the read-only view bubblewrap gave.
    std::vector<std::string>& user = box.user;
    const passwd* nobody = getpwnam("nobody");
    if (root && !setpriv.empty() && nobody != nullptr) {
        user = {setpriv, "--reuid=" + std::to_string(nobody->pw_uid), "--regid=" + std::to_string(nobody->pw_gid),
                "--clear-groups", "--no-new-privs"};
        // A change of user clears the death signal `unshare --kill-child` gave the namespace's
        // first process; `--pdeathsig keep` (util-linux 2.33) sets it again afterwards.
        std::vector<std::string> keeping = user;
        keeping.insert(keeping.begin() + 1, {"--pdeathsig", "keep"});
        if (succeeds(spaces + keeping)) {
            user = keeping;
            box.as_nobody = true;
        } else if (succeeds(spaces + user)) {
            box.as_nobody = true;
            box.missing.push_back("setpriv has no --pdeathsig (util-linux before 2.33): a runner whose checker is "
                                  "killed may outlive it, with what it started");
        } else {
            user.clear();
        }
    }

    std::vector<std::string> holds;
    if (!spaces.empty()) holds.push_back("its own PID namespace");
    else {
        box.reaper = true;
        box.missing.push_back("no PID namespace (neither unshare, bubblewrap nor a user namespace worked here): the "
                              "checker reaps the runner's orphans and kills them when the runner stops, but a "
                              "process that outlives the checker itself is not caught");
    }
    if (box.as_nobody) holds.push_back("user nobody");
    else if (read_only) holds.push_back("a read-only view of the files");
    else
        box.missing.push_back(std::string("the runner can write whatever this user can (") +
                              (root ? "setpriv or the user nobody is missing" : "not root, and no bubblewrap") +
                              "): the grade folder is not protected from it");
    if (network) holds.push_back("no network");
    else box.missing.push_back("the runner can reach the network: no network namespace here");
    for (const std::string& level : holds) box.description += (box.description.empty() ? "" : ", ") + level;
    if (box.description.empty()) box.description = "none";
    return box;
}

}  // namespace

const Sandbox& runner_sandbox()
{
    static const Sandbox sandbox = [] {
        Sandbox box = find_sandbox();
        if (box.reaper) prctl(PR_SET_CHILD_SUBREAPER, 1);
        return box;
    }();
    return sandbox;
}

namespace {

// What /proc/PID/stat says after the command's name: "S 1234 ..." (state, parent, group,
// session, ...), or "" when the process is gone. Read with read(2), not a stream: a process that
// ends while it is read fails the read with ESRCH, on which libstdc++'s streams throw.
std::string stat_fields(const std::string& pid)
{
    const int fd = open(("/proc/" + pid + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "";
    char buffer[1024];
    const ssize_t n = read(fd, buffer, sizeof buffer);
    close(fd);
    const std::string text = n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "";
    const std::size_t end_of_name = text.rfind(')');
    return end_of_name == std::string::npos || end_of_name + 2 >= text.size() ? "" : text.substr(end_of_name + 2);
}

// Every process this one can see: its parent and its session, from /proc/PID/stat.
struct Process {
    pid_t parent = 0, session = 0;
};

std::map<pid_t, Process> processes()
{
    std::map<pid_t, Process> found;
    DIR* proc = opendir("/proc");
    if (proc == nullptr) return found;
    while (dirent* entry = readdir(proc)) {
        const pid_t pid = std::atoi(entry->d_name);
        if (pid <= 0) continue;
        const std::string text = stat_fields(entry->d_name);
        if (text.empty()) continue;
        std::istringstream fields(text);
        char state;
        pid_t group;
        Process& process = found[pid];
        fields >> state >> process.parent >> group >> process.session;
    }
    closedir(proc);
    return found;
}

}  // namespace

std::vector<int> kill_children(int parent)
{
    std::vector<int> killed;
    for (const auto& [pid, process] : processes())
        if (process.parent == parent && kill(pid, SIGKILL) == 0) killed.push_back(pid);
    return killed;
}

bool wait_until_ended(int pid, int ms)
{
    for (int waited = 0;; waited += 5) {
        const std::string text = stat_fields(std::to_string(pid));
        if (text.empty() || text[0] == 'Z' || text[0] == 'X') return true;  // gone, or its exit done
        if (waited >= ms) return false;
        usleep(5000);
    }
}

void kill_descendants(int keep)
{
    // Kill every descendant in another session than ours: the runner's (it starts a session of
    // its own in this mode) and any a student's process made with setsid. The tool runs the
    // checker starts itself stay in its session and are spared.
    const pid_t self = getpid(), session = getsid(0);
    for (int round = 0; round < 5; ++round) {
        const std::map<pid_t, Process> all = processes();
        const auto parent_of = [&](pid_t pid) { return all.count(pid) ? all.at(pid).parent : 0; };
        std::vector<pid_t> killed;
        for (const auto& [pid, process] : all) {
            if (pid == keep || process.session == session) continue;
            for (pid_t up = process.parent; up > 1; up = parent_of(up))
                if (up == self) {
                    kill(pid, SIGKILL);
                    killed.push_back(pid);
                    break;
                }
        }
        // Reap our own children among them; orphans come to us (the reaper) in a later round.
        for (pid_t pid : killed)
            if (parent_of(pid) == self) waitpid(pid, nullptr, 0);
        if (killed.empty()) return;
        usleep(20000);
    }
}

}  // namespace workbook
