// Finding the sandbox this machine gives the runner (sandbox.hpp), and the reaper's fallback.
// The minimal view of the files bubblewrap builds for it is in sandbox_view.cpp.
#include "sandbox.hpp"

#include "sandbox_detail.hpp"
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

using namespace sandbox_detail;

// Shared with sandbox_view.cpp (sandbox_detail.hpp says what it does).
Outcome sandbox_detail::run_command(std::vector<std::string> command, int kept)
{
    Outcome outcome;
    std::vector<char*> argv;
    for (std::string& word : command) argv.push_back(word.data());
    argv.push_back(nullptr);
    int pipe[2];
    if (pipe2(pipe, O_CLOEXEC) != 0) {
        outcome.status = std::string("could not make a pipe: ") + std::strerror(errno);
        return outcome;
    }
    const pid_t pid = fork();
    if (pid == 0) {
        // Only async-signal-safe calls between fork and exec: this process may have threads.
        const int null = open("/dev/null", O_RDWR);
        dup2(null, 0);
        dup2(pipe[1], kept);
        dup2(null, kept == 1 ? 2 : 1);
        close_range(3, ~0U, 0);
        execv(argv[0], argv.data());
        _exit(127);
    }
    ::close(pipe[1]);
    if (pid < 0) {
        ::close(pipe[0]);
        outcome.status = std::string("could not start it: ") + std::strerror(errno);
        return outcome;
    }
    char buffer[4096];
    for (ssize_t n; (n = read(pipe[0], buffer, sizeof buffer)) != 0;) {
        if (n > 0) outcome.output.append(buffer, static_cast<std::size_t>(n));
        else if (errno != EINTR) break;
    }
    ::close(pipe[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return outcome;
    outcome.succeeded = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (WIFEXITED(status)) outcome.status = "exited with status " + std::to_string(WEXITSTATUS(status));
    else if (WIFSIGNALED(status)) outcome.status = "was killed by signal " + std::to_string(WTERMSIG(status));
    return outcome;
}

namespace {

// Whether a command, followed by /bin/true, exits 0.
bool succeeds(std::vector<std::string> command)
{
    command.push_back("/bin/true");
    return run_command(std::move(command), 2).succeeded;
}

// The sandbox bubblewrap gives where it works: namespaces for processes and the network, the
// view of the files, and as root the user nobody (setpriv, bound into the view), else no
// capabilities. What went wrong goes to `why_not`.
Sandbox bubblewrap_sandbox(const std::string& bwrap, const std::vector<std::string>& to_nobody, std::string& why_not)
{
    Sandbox box;
    if (bwrap.empty()) {
        why_not = "bubblewrap (bwrap) is not installed";
        return box;
    }
    box.minimal_view = true;
    // `--die-with-parent` gives the namespace's first process (bubblewrap's, which stays as
    // its init) the death signal: it ends with the bwrap the checker started, and every
    // process of the namespace with it. `--new-session`: no terminal to push keystrokes into.
    box.spaces = {bwrap, "--unshare-pid", "--unshare-net", "--die-with-parent", "--new-session"};
    box.user = to_nobody;
    // Root without setpriv keeps no capability either: none to mount its way out of the view.
    if (geteuid() == 0 && to_nobody.empty()) box.spaces = box.spaces + std::vector<std::string>{"--cap-drop", "ALL"};
    const Outcome tried = run_command(sandboxed_command(box, {}, "/bin/true"), 2);
    if (tried.succeeded) return box;
    std::string said = tried.output.substr(0, tried.output.find('\n'));
    why_not = "bubblewrap (" + bwrap + ") could not start /bin/true in the runner's view: it " + tried.status +
              (said.empty() ? "" : ", saying \"" + said + "\"");
    return Sandbox();
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

    // Level 2 as root: another user, through setpriv.
    std::vector<std::string> to_nobody;
    const passwd* nobody = getpwnam("nobody");
    if (root && !setpriv.empty() && nobody != nullptr)
        to_nobody = {setpriv, "--reuid=" + std::to_string(nobody->pw_uid), "--regid=" + std::to_string(nobody->pw_gid),
                     "--clear-groups", "--no-new-privs"};

    // Every level at once through bubblewrap, where it works.
    std::string no_view;
    box = bubblewrap_sandbox(bwrap, to_nobody, no_view);
    bool network = box.minimal_view;
    box.as_nobody = box.minimal_view && !box.user.empty();
    if (!box.minimal_view) box.missing.push_back(no_view + ": the runner sees every file its user may read");

    // Otherwise level 1 and 3 through util-linux's unshare: namespaces for processes and the network.
    std::vector<std::string>& spaces = box.spaces;
    const std::vector<std::string> pid_space = {"--pid", "--fork", "--kill-child", "--mount-proc"};
    if (spaces.empty() && root && !unshare.empty()) {
        if (succeeds(std::vector<std::string>{unshare} + pid_space + std::vector<std::string>{"--net"})) {
            spaces = std::vector<std::string>{unshare} + pid_space + std::vector<std::string>{"--net"};
            network = true;
        } else if (succeeds(std::vector<std::string>{unshare} + pid_space)) {
            spaces = std::vector<std::string>{unshare} + pid_space;
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

    // And level 2 after unshare: setpriv.
    std::vector<std::string>& user = box.user;
    if (!box.minimal_view && !to_nobody.empty()) {
        user = to_nobody;
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
        box.missing.push_back("no PID namespace (neither bubblewrap, unshare nor a user namespace worked here): the "
                              "checker reaps the runner's orphans and kills them when the runner stops, but a "
                              "process that outlives the checker itself is not caught");
    }
    if (box.as_nobody) holds.push_back("user nobody");
    else if (!box.minimal_view)
        box.missing.push_back(std::string("the runner can write whatever this user can (") +
                              (root ? "setpriv or the user nobody is missing" : "not root, and no bubblewrap") +
                              "): the grade folder is not protected from it");
    if (network) holds.push_back("no network");
    else box.missing.push_back("the runner can reach the network: no network namespace here");
    if (box.minimal_view) holds.push_back("a minimal view of the files: its own executable, its libraries, the GPU's devices");
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

// The start of a file of /proc (up to 4 KiB), or "" when it cannot be read. Read with read(2),
// not a stream: a process that ends while it is read fails the read with ESRCH, on which
// libstdc++'s streams throw.
std::string proc_file(const std::string& path)
{
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "";
    char buffer[4096];
    const ssize_t n = read(fd, buffer, sizeof buffer);
    close(fd);
    return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "";
}

// What /proc/PID/stat says after the command's name: "S 1234 ..." (state, parent, group,
// session, ...), or "" when the process is gone.
std::string stat_fields(const std::string& pid)
{
    const std::string text = proc_file("/proc/" + pid + "/stat");
    const std::size_t end_of_name = text.rfind(')');
    return end_of_name == std::string::npos || end_of_name + 2 >= text.size() ? "" : text.substr(end_of_name + 2);
}

// Every process this one can see: its parent and its session, from /proc/PID/stat.
struct Process {
    pid_t parent = 0, session = 0;
    char state = '?';  // 'Z' once its exit is done
};

// Whether a process in this /proc state has ended: its exit done (a zombie) or dead.
bool has_ended(char state) { return state == 'Z' || state == 'X'; }

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
        pid_t group;
        Process& process = found[pid];
        fields >> process.state >> process.parent >> group >> process.session;
    }
    closedir(proc);
    return found;
}

}  // namespace

std::vector<int> kill_children(int parent) { return kill_below({parent}); }

double cpu_ms_below(int top)
{
    if (top <= 0) return 0;
    static const double ms_per_tick = 1000.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
    double total = 0;
    std::vector<std::string> pending = {std::to_string(top)};
    while (!pending.empty()) {
        const std::string pid = pending.back();
        pending.pop_back();
        std::istringstream fields(stat_fields(pid));
        std::string skip;
        for (int field = 3; field < 14; ++field) fields >> skip;  // state .. cmajflt
        double user = 0, system = 0, children_user = 0, children_system = 0;
        fields >> user >> system >> children_user >> children_system;
        total += (user + system + children_user + children_system) * ms_per_tick;
        // Its children, as each of its threads lists those it started.
        if (DIR* tasks = opendir(("/proc/" + pid + "/task").c_str())) {
            while (dirent* task = readdir(tasks)) {
                if (task->d_name[0] == '.') continue;
                std::istringstream children(proc_file("/proc/" + pid + "/task/" + task->d_name + "/children"));
                for (std::string child; children >> child;) pending.push_back(child);
            }
            closedir(tasks);
        }
    }
    return total;
}

std::vector<int> descendants(const std::vector<int>& parents)
{
    // In the order found: children first.
    const std::map<pid_t, Process> all = processes();
    std::vector<int> below = parents;
    for (std::size_t i = 0; i < below.size(); ++i)
        for (const auto& [pid, process] : all)
            if (process.parent == below[i] && !has_ended(process.state)) below.push_back(pid);
    below.erase(below.begin(), below.begin() + static_cast<std::ptrdiff_t>(parents.size()));
    return below;
}

std::vector<int> kill_below(const std::vector<int>& parents)
{
    // Every live process below the parents, not only their children: bubblewrap stands between
    // the judge's child and the namespace's first process. Children first (a namespace's first
    // process takes its namespace along).
    std::vector<int> killed;
    for (const int pid : descendants(parents))
        if (kill(pid, SIGKILL) == 0) killed.push_back(pid);
    return killed;
}

char process_state(int pid)
{
    const std::string text = stat_fields(std::to_string(pid));
    return text.empty() ? '\0' : text[0];
}

std::string pid_namespace_of(int pid)
{
    char link[128] = {};
    const ssize_t n = readlink(("/proc/" + std::to_string(pid) + "/ns/pid").c_str(), link, sizeof link - 1);
    return n > 0 ? std::string(link, static_cast<std::size_t>(n)) : "";
}

bool end_namespace(const std::string& space, int ms)
{
    if (space.empty() || space == pid_namespace_of(getpid())) return true;
    for (int waited = 0;; waited += 5) {
        int alive = 0;
        for (const auto& [pid, process] : processes())
            if (!has_ended(process.state) && pid_namespace_of(pid) == space) {
                kill(pid, SIGKILL);
                ++alive;
            }
        if (alive == 0) return true;
        if (waited >= ms) return false;
        usleep(5000);
    }
}

bool wait_until_ended(int pid, int ms)
{
    for (int waited = 0;; waited += 5) {
        const std::string text = stat_fields(std::to_string(pid));
        if (text.empty() || has_ended(text[0])) return true;  // gone, or its exit done
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
