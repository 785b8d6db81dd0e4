/// \file sandbox.hpp
/// \brief How the runner, the process that holds the student's code, is fenced in.
///
/// Four levels, each taken where this machine allows it and named in the log where it does not:
///
/// 1. **Its own PID namespace**, so that when the runner ends, every process it started ends
///    too: double forks, `setsid` and orphans included (the kernel kills a namespace's processes
///    when its first process dies). Through bubblewrap (`bwrap --unshare-pid`), as root or in an
///    unprivileged user namespace; where bubblewrap is missing or fails, as root through
///    util-linux's `unshare --pid --fork --kill-child --mount-proc`, otherwise through an
///    unprivileged user namespace. The chain holds when the checker itself is killed: `bwrap`
///    (or `unshare`) dies with the checker (PR_SET_PDEATHSIG), and the namespace's first process
///    with it (`--die-with-parent`; `unshare --kill-child`, kept across the change of user by
///    `setpriv --pdeathsig keep`); the checker also kills that first process itself when it
///    stops a runner, whatever runs as it (a tool such as compute-sanitizer, say). Where no
///    namespace works, the checker becomes the reaper of its orphans (PR_SET_CHILD_SUBREAPER) and
///    kills every process left below it when the runner stops.
/// 2. **No write access to the grader's files**: as root, the runner runs as the user `nobody`
///    (util-linux's `setpriv`), which cannot write the build or grade folders; otherwise the
///    view of level 4 holds none of them.
/// 3. **No network**: a network namespace of its own, with nothing in it.
/// 4. **A minimal view of the files** (bubblewrap, a mount namespace whose root is empty): the
///    runner's own executable (at /runner/\<its name\>), the libraries it loads (its DT_NEEDED
///    closure as the system's loader finds it, and the CUDA driver's, which the CUDA runtime
///    loads at run time), /etc/ld.so.cache, the GPU's devices, its own /proc, /sys (read-only:
///    CUPTI reads the clock source there) and an empty, private /tmp, which is also its home. No
///    project tree, no build folder (no other runner, no reference solution), no compiler, no
///    home folder. A tool wrapped around the runner (compute-sanitizer, ncu) is run from its
///    real executable, its install folder bound too, and ncu shares /tmp/nvidia (its lock) with
///    the machine.
///
/// CUDA IPC needs /proc to show the namespace's own processes, hence a /proc of its own.
#pragma once

#include <string>
#include <vector>

namespace workbook {

/// \brief The sandbox this machine gives the runner.
struct Sandbox {
    std::vector<std::string> spaces;   ///< the command words that give the namespaces (or none)
    std::vector<std::string> user;     ///< the words that follow them to switch to nobody (or none)
    std::vector<std::string> missing;  ///< one line per level this machine could not give
    std::string description;           ///< one line: what holds, e.g. "PID namespace, user nobody, no network"
    bool reaper = false;               ///< no PID namespace: the checker reaps and kills what is left
    bool as_nobody = false;            ///< the runner runs as the user nobody
    bool minimal_view = false;         ///< `spaces` is bubblewrap, which builds the view of level 4
};

/// \brief The command that starts `program` in the sandbox, under `tool` if any.
///
/// With the minimal view: bubblewrap's namespaces, the view (the program at /runner/\<its name\>,
/// the libraries it, the user switch and the tool load, the CUDA driver's libraries, the GPU's
/// devices, /proc, an empty /tmp), the user switch, the tool's real executable, the program.
/// Otherwise: the namespaces, the user switch, the tool and the program, as given.
/// \param sandbox what this machine gives (runner_sandbox())
/// \param tool a tool and its arguments, run as the namespace's first process (or empty)
/// \param program the executable to start
/// \return the command's words, the first a path
std::vector<std::string> sandboxed_command(const Sandbox& sandbox, const std::vector<std::string>& tool,
                                           const std::string& program);

/// \brief Where a tool is installed: its real executable and the folder that holds what it needs.
struct ToolInstall {
    std::string executable;  ///< the real executable (a script that starts it is looked through)
    std::string folder;      ///< its install folder, bound read-only into the runner's view
    std::string why_not;     ///< why neither was found, or ""
};

/// \brief Finds a tool's real executable, looking through the shell script that starts it.
///
/// CUDA's `bin/compute-sanitizer` and `bin/ncu` are scripts that start the real tool in a folder
/// beside theirs (`compute-sanitizer/compute-sanitizer`, `nsight-compute-<version>/target/<platform>/ncu`)
/// or, for Nsight Compute installed from NVIDIA's .deb, in `/opt/nvidia/nsight-compute/<version>`.
/// Running that executable directly, the runner's view needs no shell and no toolkit folder.
/// \param tool the tool's path (symbolic links are followed)
/// \param homes where else a script's tool may be installed, after the folder above the script's
/// \return an ELF executable itself, in its own folder; for a script, the ELF executable of the
///         same name at most five folders below the folder above the script's, else below a home
///         (the newest version where several are), in the top folder of it there
ToolInstall find_tool_install(const std::string& tool, const std::vector<std::string>& homes = {"/opt/nvidia"});

/// \brief The sandbox for runners on this machine, found once per process by trying each level.
/// Setting WORKBOOK_SANDBOX=none turns it off (for debugging the workbook itself).
const Sandbox& runner_sandbox();

/// \brief Kills (SIGKILL) every process below a process, its children first: the namespace's
/// first process, below the `bwrap` or `unshare` the checker started, takes every process of its
/// namespace with it, and nothing between them is left to kill it later.
/// \param parent the process whose descendants are killed
/// \return the processes it killed
std::vector<int> kill_children(int parent);

/// \brief The CPU time, in milliseconds, that a process and every process below it have taken,
/// as the kernel counts it in /proc (user and system time of all their threads, and of the
/// children they reaped): the processes themselves cannot change it. Processes are found through
/// each thread's `children` file; one that ends between two readings takes its time with it,
/// which only ever understates.
/// \param top the process (nothing is counted for a pid of 0 or less)
double cpu_ms_below(int top);

/// \brief Every live process below any of `parents` (not themselves), children first.
/// \param parents the processes
std::vector<int> descendants(const std::vector<int>& parents);

/// \brief Kills (SIGKILL) every live process below any of `parents`, children first.
/// \param parents the processes whose descendants are killed (themselves spared)
/// \return the processes it killed
std::vector<int> kill_below(const std::vector<int>& parents);

/// \brief A process's state as /proc/PID/stat gives it ('R', 'S', 'T' once stopped, 'Z' once its
/// exit is done, ...), or '\0' when it is gone.
/// \param pid the process
char process_state(int pid);

/// \brief The PID namespace a process is in ("pid:[4026532...]", from /proc), or "" when gone.
/// \param pid the process
std::string pid_namespace_of(int pid);

/// \brief Kills every process of a PID namespace (other than this process's own) until none is
/// left: what stop_and_wait relies on before the reference is timed.
/// \param space the namespace, as pid_namespace_of gives it
/// \param ms how long to wait at most, in milliseconds
/// \return whether none was left in time
bool end_namespace(const std::string& space, int ms);

/// \brief Waits until a process that is not a child of this one has ended: gone, or a zombie
/// (its exit done). A PID namespace's first process becomes a zombie only once every process of
/// its namespace has ended, and after its own GPU context was released with its files.
/// \param pid the process
/// \param ms how long to wait at most, in milliseconds
/// \return whether it ended in time
bool wait_until_ended(int pid, int ms);

/// \brief Kills every process below this one except `keep` (the reaper's last step).
/// \param keep a process to spare (-1 for none)
void kill_descendants(int keep = -1);

}  // namespace workbook
