// Finding the sandbox this machine gives the runner (sandbox.hpp), the minimal view of the files
// bubblewrap builds for it, and the reaper's fallback.
#include "sandbox.hpp"

#include "tools.hpp"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

namespace workbook {

namespace {

namespace fs = std::filesystem;

// What a command did: whether it exited 0, and what it wrote on the stream that was kept.
struct Outcome {
    bool succeeded = false;
    std::string status;  // "exited with status 1", say, where it did not succeed
    std::string output;
};

// Runs a command (its first word a path) with this process's environment and no other
// descriptor of ours, and keeps what it writes on `kept` (1: standard output, 2: standard
// error); the other stream, and its input, are /dev/null.
Outcome run_command(std::vector<std::string> command, int kept)
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

// Whether a command, followed by /bin/true, exits 0.
bool succeeds(std::vector<std::string> command)
{
    command.push_back("/bin/true");
    return run_command(std::move(command), 2).succeeded;
}

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b)
{
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

// The system's dynamic loader: the one that loaded this process, as its map of files names it
// (ld-linux-x86-64.so.2 on x86-64, ld-linux-aarch64.so.1 on ARM), or "".
const std::string& dynamic_loader()
{
    static const std::string loader = [] {
        std::ifstream maps("/proc/self/maps");
        for (std::string line; std::getline(maps, line);) {
            const std::size_t path = line.find('/');
            if (path == std::string::npos) continue;
            const std::string file = line.substr(path);
            if (starts_with(file.substr(file.find_last_of('/') + 1), "ld-linux")) return file;
        }
        return std::string();
    }();
    return loader;
}

// The files the system's loader opens to start `object` (a program or a library): its DT_NEEDED
// closure and the loader itself, under the names it opens them by, as `ld.so --list` says.
// That loader is always the system's, never the one `object` names (PT_INTERP): listing maps
// the files and runs none of their code. Asked once per object and process.
std::vector<std::string> libraries_of(const std::string& object)
{
    static std::mutex mutex;
    static std::map<std::string, std::vector<std::string>> known;
    const std::lock_guard<std::mutex> lock(mutex);
    const auto found = known.find(object);
    if (found != known.end()) return found->second;
    std::vector<std::string>& libraries = known[object];
    if (dynamic_loader().empty()) return libraries;
    // Lines such as "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" and, for the loader,
    // "/lib64/ld-linux-x86-64.so.2 (0x...)"; a library not found says "=> not found" and is left
    // out (the program then fails to start, saying which).
    std::istringstream lines(run_command({dynamic_loader(), "--list", object}, 1).output);
    for (std::string line; std::getline(lines, line);) {
        std::istringstream words(line);
        std::string word, path;
        words >> word;
        if (starts_with(word, "/")) path = word;
        else if (words >> word && word == "=>" && words >> word && starts_with(word, "/")) path = word;
        if (!path.empty()) libraries.push_back(path);
    }
    return libraries;
}

// The CUDA driver's libraries, which the CUDA runtime opens at run time (no DT_NEEDED names
// them): libcuda.so*, libcudadebugger.so* and libnvidia-*.so* (the PTX compiler, NVML, ...)
// beside libcuda.so.1, where this process finds it and where the file it names is, and what
// libcuda.so.1 needs in turn. None where there is no driver (no GPU).
const std::vector<std::string>& driver_libraries()
{
    static const std::vector<std::string> libraries = [] {
        std::vector<std::string> files;
        // The judge loads the driver anyway; loading it here finds it where the runner's loader
        // will, with the same LD_LIBRARY_PATH and cache.
        void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
        link_map* map = nullptr;
        if (driver == nullptr || dlinfo(driver, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr ||
            map->l_name == nullptr || map->l_name[0] != '/')
            return files;
        const fs::path as_found = map->l_name;
        std::error_code error;
        std::set<fs::path> folders = {as_found.parent_path()};
        if (const fs::path real = fs::canonical(as_found, error); !error) folders.insert(real.parent_path());
        for (const fs::path& folder : folders)
            for (const fs::directory_entry& entry : fs::directory_iterator(folder, error)) {
                const std::string name = entry.path().filename();
                const bool driver_file = starts_with(name, "libcuda.so") || starts_with(name, "libcudadebugger.so") ||
                                         (starts_with(name, "libnvidia-") && name.find(".so") != std::string::npos);
                std::error_code ignored;
                if (driver_file && entry.is_regular_file(ignored)) files.push_back(entry.path());
            }
        // Those of the others a CUDA program opens (the PTX compiler, NVVM, NVML) need no more of
        // the system's than libcuda.so.1 does (libc, libm, libdl, libpthread, librt; seen on the
        // H100 machine, driver 580); the graphics ones need X11's, and no CUDA program opens them.
        for (const std::string& library : libraries_of(as_found)) files.push_back(library);
        return files;
    }();
    return libraries;
}

// Whether `path` is an executable in ELF, for this machine's processor (as this process is).
bool is_native_executable(const std::string& path)
{
    const auto machine = [](const std::string& file) {
        unsigned char header[20] = {};
        std::ifstream in(file, std::ios::binary);
        in.read(reinterpret_cast<char*>(header), sizeof header);
        if (!in || std::memcmp(header, "\177ELF", 4) != 0) return -1;
        return header[18] | header[19] << 8;  // e_machine, little-endian on the machines CUDA runs on
    };
    return access(path.c_str(), X_OK) == 0 && machine(path) >= 0 && machine(path) == machine("/proc/self/exe");
}

// The GPU's device files: /dev/nvidia0..., nvidiactl, nvidia-uvm, nvidia-uvm-tools, nvidia-caps/.
std::vector<std::string> gpu_devices()
{
    std::vector<std::string> devices;
    std::error_code error;
    for (const fs::directory_entry& entry : fs::directory_iterator("/dev", error))
        if (starts_with(entry.path().filename(), "nvidia")) devices.push_back(entry.path());
    std::sort(devices.begin(), devices.end());
    return devices;
}

// What Nsight Compute shares between its runs on this machine: /tmp/nvidia, where it keeps one
// lock file per GPU (nsight_compute/lock.<the GPU's UUID>, seen with ncu 2025.3) by which one
// process at a time profiles it. The runner's own /tmp must hold the machine's folder, or a
// reading in one view would profile while another does. Made if missing, open to every user as
// /tmp is (ncu as root outside the view, and as nobody inside, both use it).
std::vector<std::string> nsight_compute_shared()
{
    const std::string folder = "/tmp/nvidia";
    if (mkdir(folder.c_str(), 01777) == 0) chmod(folder.c_str(), 01777);
    struct stat info;
    if (lstat(folder.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) return {folder};
    return {};
}

// The words that build the runner's view of the files with bubblewrap: an empty root (its
// tmpfs) into which only the folders and files named are bound, read-only, at their own paths;
// and what a tool shares with its other runs, writable.
class View {
public:
    void folder(const std::string& path) { folders_.push_back(path); }
    void file(const std::string& path) { files_.insert(path); }
    void files(const std::vector<std::string>& paths) { files_.insert(paths.begin(), paths.end()); }
    void shared(const std::string& path) { shared_.push_back(path); }

    std::vector<std::string> words(const std::string& program, const std::string& program_inside) const
    {
        // What is bound, at which path: a file in a folder bound already is there (bubblewrap
        // could not make its mount point in a read-only folder).
        std::vector<std::pair<std::string, std::string>> binds;
        for (const std::string& folder : folders_) binds.emplace_back(folder, folder);
        for (const std::string& file : files_) {
            const bool inside = std::any_of(folders_.begin(), folders_.end(), [&](const std::string& folder) {
                return starts_with(file, folder + "/");
            });
            if (!inside) binds.emplace_back(file, file);
        }
        // The loader's cache of where each library is, read when the CUDA runtime opens libcuda.so.1.
        if (access("/etc/ld.so.cache", R_OK) == 0) binds.emplace_back("/etc/ld.so.cache", "/etc/ld.so.cache");
        binds.emplace_back(program, program_inside);
        // The folders above them, made first and open to every user: bubblewrap makes those it
        // needs open to root alone (0700).
        std::set<std::string> above;
        for (const auto& bind : binds)
            for (fs::path folder = fs::path(bind.second).parent_path(); folder != folder.root_path();
                 folder = folder.parent_path())
                above.insert(folder);
        std::vector<std::string> words;
        for (const std::string& folder : above)  // in order: a folder before what it holds
            words = words + std::vector<std::string>{"--perms", "0755", "--dir", folder};
        for (const auto& [from, to] : binds) words = words + std::vector<std::string>{"--ro-bind", from, to};
        // Its own /proc, which CUDA IPC needs to show the namespace's processes; a /dev of the
        // usual few (null, zero, urandom, ...) and the GPU's; an empty /tmp and /dev/shm that
        // every user may write (sticky), as on any machine. And /sys, read-only: CUPTI reads the
        // clock source there (devices/system/clocksource) to put the GPU's timestamps on the
        // CPU's clock, and the NUMA nodes and PCI devices. Without it, on the H100 machine, the
        // recordings of lab 03's runner missed every kernel from its twelfth test on
        // ("launched no kernel"), and lab 02's bandwidth varied by 38%.
        words = words + std::vector<std::string>{"--proc", "/proc", "--dev", "/dev", "--ro-bind-try", "/sys", "/sys"};
        for (const std::string& device : gpu_devices()) words = words + std::vector<std::string>{"--dev-bind", device, device};
        words = words + std::vector<std::string>{"--perms", "1777", "--tmpfs", "/dev/shm", "--perms", "1777", "--tmpfs", "/tmp"};
        for (const std::string& path : shared_) words = words + std::vector<std::string>{"--bind", path, path};
        return words + std::vector<std::string>{"--chdir", "/"};
    }

private:
    std::vector<std::string> folders_;
    std::set<std::string> files_;
    std::vector<std::string> shared_;
};

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

ToolInstall find_tool_install(const std::string& tool, const std::vector<std::string>& homes)
{
    ToolInstall install;
    std::error_code error;
    const fs::path real = fs::canonical(tool, error);
    if (error) {
        install.why_not = tool + " cannot be followed: " + error.message();
        return install;
    }
    if (is_native_executable(real)) {
        install.executable = real;
        install.folder = real.parent_path();
        return install;
    }
    // A script. The real tool is an executable of the script's name, at most five folders down
    // from the folder above the script's (the toolkit's: nsight-compute-<version>/target/<platform>/ncu),
    // or else from NVIDIA's other homes (the .deb's nsight-compute/<version>/target/<platform>/ncu).
    const std::string name = real.filename();
    std::vector<fs::path> roots = {real.parent_path().parent_path()};
    roots.insert(roots.end(), homes.begin(), homes.end());
    std::string looked;
    for (const fs::path& root : roots) {
        looked += (looked.empty() ? "" : " or ") + root.string();
        std::vector<fs::path> found;
        fs::recursive_directory_iterator walk(root, fs::directory_options::skip_permission_denied, error);
        for (; !error && walk != fs::recursive_directory_iterator(); walk.increment(error)) {
            const fs::directory_entry& entry = *walk;
            std::error_code ignored;
            if (entry.path() == real.parent_path() || walk.depth() >= 4) walk.disable_recursion_pending();
            if (entry.path().filename() == name && entry.is_regular_file(ignored) && !entry.is_symlink(ignored) &&
                is_native_executable(entry.path()))
                found.push_back(entry.path());
        }
        error.clear();
        if (found.empty()) continue;
        // Several versions side by side (nsight-compute-2025.3.0 and 2025.3.1): the last by name.
        std::sort(found.begin(), found.end());
        install.executable = found.back();
        install.folder = root / *found.back().lexically_relative(root).begin();
        return install;
    }
    install.why_not = "no executable named " + name + " below " + looked + ", which " + real.string() +
                      " (not an executable for this machine) could start";
    return install;
}

std::vector<std::string> sandboxed_command(const Sandbox& sandbox, const std::vector<std::string>& tool,
                                           const std::string& program)
{
    std::vector<std::string> argv = sandbox.spaces, tool_words = tool;
    std::string program_inside = program;
    if (sandbox.minimal_view) {
        View view;
        view.files(libraries_of(program));
        if (!sandbox.user.empty()) {
            view.file(sandbox.user[0]);
            view.files(libraries_of(sandbox.user[0]));
        }
        if (!tool.empty()) {
            // The tool's real executable, its install folder, and what it and the libraries
            // beside it (those it puts into the runner: LD_PRELOAD) load. A tool not found is
            // named as given, bubblewrap then says it cannot run it, and this says why.
            const ToolInstall install = find_tool_install(tool[0]);
            if (!install.why_not.empty())
                std::fprintf(stderr, "runner sandbox: cannot run %s in the runner's view: %s\n", tool[0].c_str(),
                             install.why_not.c_str());
            else {
                tool_words[0] = install.executable;
                view.folder(install.folder);
                view.files(libraries_of(install.executable));
                std::error_code error;
                for (const fs::directory_entry& entry : fs::directory_iterator(fs::path(install.executable).parent_path(), error))
                    if (entry.path().filename().string().find(".so") != std::string::npos)
                        view.files(libraries_of(entry.path()));
                if (fs::path(install.executable).filename() == "ncu")
                    for (const std::string& path : nsight_compute_shared()) view.shared(path);
            }
        }
        view.files(driver_libraries());
        program_inside = "/runner/" + fs::path(program).filename().string();
        argv = argv + view.words(program, program_inside);
    }
    return argv + sandbox.user + tool_words + std::vector<std::string>{program_inside};
}

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
