"""Talking to Slurm: what the workbook's graders ask of sbatch, squeue, sacct, scancel and srun.

    options(partition, account, time, gres, cpus)  the settings every job gets, as options
    check_placement(settings)                whether a task so placed could run (sbatch --test-only)
    submit_array(...)                        one job array through sbatch: its job id
    task_states(job, count)                  each array task's state, from squeue, then sacct
    cancel(job)                              scancel, and wait until none of its tasks is left
    srun_command(settings, command)          a command run on a GPU of the cluster, output live
    process_tracking()                       one line: whether Slurm itself ends what a task leaves

A task's state is Slurm's own word: PENDING, RUNNING, COMPLETED, FAILED, TIMEOUT, CANCELLED,
OUT_OF_MEMORY, NODE_FAIL, ... A task that Slurm no longer knows (squeue forgets a job MinJobAge
seconds after its end, and sacct needs accounting) is UNKNOWN.
"""
import re
import shutil
import subprocess
import time

# The states in which a task is over; COMPLETED is the only one in which it ran to its end.
FINISHED = {"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "OUT_OF_MEMORY", "NODE_FAIL",
            "PREEMPTED", "BOOT_FAIL", "DEADLINE", "UNKNOWN"}
WAITING = {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"}
NO_GRES = ("", "none")   # --gres "" or none: ask for no generic resource (a cluster without GPUs)


PLACEMENT_HINT = ("Hint: where no node has what each task asks for, lower SLURM_CPUS, or change "
                  "SLURM_GRES, SLURM_TIME or SLURM_PARTITION")


class SlurmError(Exception):
    pass


def require(command):
    """The command's path, or a SlurmError saying that this is no Slurm login node."""
    path = shutil.which(command)
    if path is None:
        raise SlurmError("%s is not on PATH: RUNNER=slurm needs Slurm's commands (sbatch, squeue, "
                         "sacct, scancel, srun), as on a cluster's login node" % command)
    return path


def options(partition=None, account=None, time_limit=None, gres="gpu:1", cpus=None):
    """The options that place a job: partition, account, time limit, generic resources and CPUs.

    CPUs matter because each task builds its student's checkers: a cluster that binds a task to
    the CPUs it asked for (task/affinity, task/cgroup) gives it one by default, and nvcc on one
    core takes minutes where 8 take under one."""
    opts = []
    if partition:
        opts.append("--partition=" + partition)
    if account:
        opts.append("--account=" + account)
    if time_limit:
        opts.append("--time=" + str(time_limit))
    if gres is not None and gres.strip().lower() not in NO_GRES:
        opts.append("--gres=" + gres.strip())
    if cpus:
        opts.append("--cpus-per-task=%d" % int(cpus))
    return opts


def run(cmd):
    """Runs a Slurm command: (exit status, stdout, stderr)."""
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors="replace", stdin=subprocess.DEVNULL)
    return r.returncode, r.stdout, r.stderr.strip()


def process_tracking():
    """One line for the log: how this cluster ends the processes a task leaves (scontrol's
    ProctrackType). The runner's own sandbox ends the student's processes in any case; with
    proctrack/cgroup, Slurm's cgroup of the task does the same a second time."""
    status, out, _ = run(["scontrol", "show", "config"])
    m = re.search(r"^ProctrackType\s*=\s*(\S+)", out, re.M) if status == 0 else None
    if m is None:
        return "Slurm's process tracking could not be read (scontrol show config)"
    if m.group(1) == "proctrack/cgroup":
        return ("Slurm: proctrack/cgroup, so the task's cgroup also ends every process a student's "
                "code leaves, besides the runner's sandbox")
    return ("Slurm: %s, which loses a process that leaves its session (a double fork with setsid): "
            "the runner's sandbox still ends it; proctrack/cgroup would end it a second time"
            % m.group(1))


def submit_array(count, settings, name, log_pattern, command, workdir, concurrency=None):
    """Submits `command` as tasks 0..count-1 of one array; returns the job id.

    Each task writes its output to log_pattern (%A is the job id, %a the task's index) and
    finds its index in SLURM_ARRAY_TASK_ID. At most `concurrency` tasks run at once."""
    require("sbatch")
    array = "0-%d" % (count - 1) + ("%%%d" % concurrency if concurrency else "")
    cmd = ["sbatch", "--parsable", "--array=" + array, "--job-name=" + name,
           "--output=" + log_pattern, "--chdir=" + workdir, "--ntasks=1", *settings,
           "--wrap", " ".join(shell_quote(word) for word in command)]
    status, out, err = run(cmd)
    if status != 0:
        raise SlurmError("sbatch rejected the job (exit status %d):\n%s\nThe command was: %s\n%s"
                         % (status, err or out.strip(), " ".join(cmd[:-2]), PLACEMENT_HINT))
    job = out.strip().split(";")[0]          # --parsable: "id" or "id;cluster"
    if not job.isdigit():
        raise SlurmError("sbatch answered %r, not a job id" % out.strip())
    return job


def check_placement(settings):
    """Asks sbatch whether a task with these settings could run at all, before anything is
    submitted or any earlier result replaced (--test-only submits nothing). Raises SlurmError
    with sbatch's own answer when it could not."""
    require("sbatch")
    cmd = ["sbatch", "--test-only", "--ntasks=1", *settings, "--wrap", "true"]
    status, out, err = run(cmd)
    if status != 0:
        raise SlurmError("no task placed with %s could run here: sbatch --test-only says (exit status "
                         "%d):\n%s\n%s" % (" ".join(settings) or "the cluster's defaults", status,
                                            err or out.strip(), PLACEMENT_HINT))


def shell_quote(word):
    return word if re.fullmatch(r"[A-Za-z0-9_./=:,+-]+", word) else "'%s'" % word.replace("'", "'\\''")


def task_states(job, count):
    """{index: state} for tasks 0..count-1 of the array `job`: squeue first (it knows pending,
    running and recently ended tasks), then sacct for the tasks squeue has forgotten. Raises
    SlurmError when squeue cannot reach the controller."""
    require("squeue")
    status, out, err = run(["squeue", "--array", "--noheader", "--states=all", "--jobs=" + job,
                            "--format=%K|%T"])
    if status != 0 and "Invalid job id" not in err:
        raise SlurmError("squeue failed (exit status %d): %s" % (status, err))
    states = parse_states(out if status == 0 else "")
    if len([i for i in states if i < count]) < count and shutil.which("sacct"):
        status, out, err = run(["sacct", "--jobs=" + job, "--allocations", "--noheader",
                                "--parsable2", "--format=JobID,State"])
        if status == 0:   # without accounting sacct says so and tells nothing
            for line in out.splitlines():
                m = re.fullmatch(r"%s_(\d+)\|(\S+).*" % job, line.strip())
                if m and int(m.group(1)) not in states:
                    states[int(m.group(1))] = m.group(2)
    return {i: states.get(i, "UNKNOWN") for i in range(count)}


def parse_states(squeue_output):
    """squeue --array --format=%K|%T: one "index|STATE" line per task."""
    states = {}
    for line in squeue_output.splitlines():
        index, _, state = line.strip().partition("|")
        if index.isdigit() and state:
            states[int(index)] = state.split()[0]
    return states


def kind(state):
    """done, failed, pending or running: the four counts of a progress line."""
    if state == "COMPLETED":
        return "done"
    if state in FINISHED:
        return "failed"
    if state in WAITING:
        return "pending"
    return "running"


def active_tasks(job):
    """How many tasks of `job` are pending or running (0 when Slurm does not know the job)."""
    status, out, err = run(["squeue", "--array", "--noheader", "--jobs=" + job, "--format=%K|%T"])
    if status != 0:
        if "Invalid job id" in err:
            return 0
        raise SlurmError("squeue failed (exit status %d): %s" % (status, err))
    return len([line for line in out.splitlines() if line.strip()])


def cancel(job, patience=120.0):
    """scancel the whole array, then wait until squeue lists none of its tasks. Returns True
    when none is left."""
    require("scancel")
    status, out, err = run(["scancel", job])
    if status != 0:
        raise SlurmError("scancel %s failed (exit status %d): %s" % (job, status, err or out))
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        try:
            if active_tasks(job) == 0:
                return True
        except SlurmError:
            pass
        time.sleep(1.0)
    return False


def srun_command(settings, command, name="workbook"):
    """`command` as one task on a node of the cluster, its output streamed back line by line;
    a single ^C cancels it. srun exits with the command's exit status."""
    require("srun")
    return ["srun", "--job-name=" + name, "--ntasks=1", "--quit-on-interrupt", *settings, *command]
