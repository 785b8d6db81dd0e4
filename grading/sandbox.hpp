/// \file sandbox.hpp
/// \brief How the runner, the process that holds the student's code, is fenced in.
///
/// Three levels, each taken where this machine allows it and named in the log where it does not:
///
/// 1. **Its own PID namespace**, so that when the runner ends, every process it started ends
///    too: double forks, `setsid` and orphans included (the kernel kills a namespace's processes
///    when its first process dies). As root through util-linux's `unshare --pid --fork
///    --kill-child --mount-proc`; otherwise through bubblewrap (`bwrap --unshare-pid`) or an
///    unprivileged user namespace. The chain holds when the checker itself is killed: `unshare`
///    dies with the checker (PR_SET_PDEATHSIG), and the namespace's first process with `unshare`
///    (`--kill-child`, kept across the change of user by `setpriv --pdeathsig keep`); the checker
///    also kills that first process itself when it stops a runner, whatever runs as it (a tool
///    such as compute-sanitizer, say). Where no namespace works, the checker becomes the reaper of its
///    orphans (PR_SET_CHILD_SUBREAPER) and kills every process left below it when the runner
///    stops.
/// 2. **No write access to the grader's files**: as root, the runner runs as the user `nobody`
///    (util-linux's `setpriv`), which cannot write the build or grade folders; otherwise
///    bubblewrap gives it a read-only view of the whole filesystem.
/// 3. **No network**: a network namespace of its own, with nothing in it.
///
/// CUDA IPC needs /proc to show the namespace's own processes, hence `--mount-proc`.
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
};

/// \brief The sandbox for runners on this machine, found once per process by trying each level.
/// Setting WORKBOOK_SANDBOX=none turns it off (for debugging the workbook itself).
const Sandbox& runner_sandbox();

/// \brief Kills (SIGKILL) every child of a process: the namespace's first process, below the
/// `unshare` the checker started, which takes every process of its namespace with it.
/// \param parent the process whose children are killed
/// \return the children it killed
std::vector<int> kill_children(int parent);

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
