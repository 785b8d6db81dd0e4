"""A Slurm cluster of one node on localhost, for grading/tests/test_slurm.py.

    install_slurm()        Debian's slurm-wlm and munge, when missing (root and apt-get only)
    Cluster(root)          munged (with a key made for the run), slurmctld and slurmd, with
                           everything they write under `root` (slurm.conf, the key, state,
                           spool, logs), on loopback ports of their own; start(), run(cmd) with
                           the cluster's SLURM_CONF, queue(), and stop(), which kills them by pid
    processes_mentioning   the processes whose command line or environment holds a text
    still_running          those processes, once a process being killed has had time to end
    CannotStart            why the cluster cannot be started here: the test is then skipped

test_slurm.py starts the cluster under <build>/test_slurm/cluster and stops it at the end,
whatever happened; a cluster that a killed run left there is stopped by the next start().
"""
import os
import shutil
import signal
import socket
import subprocess
import time

from test_grade_class import alive  # a pid that runs (a zombie, exited but not reaped, does not)

PACKAGES = ["slurm-wlm", "munge"]


class CannotStart(Exception):
    """Slurm cannot be started here: the test is skipped, with this reason."""



def install_slurm():
    """Debian's slurm-wlm and munge, when missing: as root with apt only."""
    needed = ["sbatch", "squeue", "scancel", "srun", "sinfo", "slurmctld", "slurmd", "munged"]
    if all(shutil.which(c) or os.path.exists("/usr/sbin/" + c) for c in needed):
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise CannotStart("Slurm is not installed, and installing it needs root and apt-get")
    print("Installing %s (apt-get), for this test's cluster" % " ".join(PACKAGES), flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES]
    if subprocess.run(install, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode:
        subprocess.run(["apt-get", "update", "-qq"], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        r = subprocess.run(install, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode:
            raise CannotStart("apt-get could not install %s:\n%s" % (" ".join(PACKAGES), r.stdout[-2000:]))


def daemon(name):
    return shutil.which(name) or "/usr/sbin/" + name


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SLURM_CONF = """\
# A cluster of one node on localhost, for grading/tests/test_slurm.py only.
ClusterName=workbooktest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={dir}/munge/munge.socket
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/log/slurmctld.log
SlurmdLogFile={dir}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
KillWait=5
MinJobAge=600
InactiveLimit=0
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName={node} NodeAddr=127.0.0.1 NodeHostname={host} CPUs={cpus} State=UNKNOWN
PartitionName=workbooktest Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""


class Cluster:
    """munged, slurmctld and slurmd, everything under `root`; stop() kills them by pid."""

    NODE = "workbooknode"

    def __init__(self, root):
        self.root, self.procs = root, []
        self.conf = os.path.join(root, "slurm.conf")
        # Every student is graded without a GPU, even on a machine that has one: it is quicker,
        # and the same on every machine.
        self.env = dict(os.environ, SLURM_CONF=self.conf, CUDA_VISIBLE_DEVICES="")

    def start(self):
        stop_leftovers(self.root)
        shutil.rmtree(self.root, ignore_errors=True)
        for sub in ("state", "spool", "log", "munge", "key"):
            os.makedirs(os.path.join(self.root, sub))
        os.chmod(os.path.join(self.root, "munge"), 0o755)
        os.chmod(os.path.join(self.root, "key"), 0o700)
        key = os.path.join(self.root, "key", "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        host = socket.gethostname().split(".")[0]
        with open(self.conf, "w") as f:
            f.write(SLURM_CONF.format(host=host, node=self.NODE, dir=self.root, cpus=os.cpu_count() or 1,
                                      ctld_port=free_port(), slurmd_port=free_port()))
        munge = os.path.join(self.root, "munge")
        self.spawn("munged", [daemon("munged"), "--foreground", "--force",
                              "--socket=%s/munge.socket" % munge, "--key-file=" + key,
                              "--pid-file=%s/munged.pid" % munge, "--seed-file=%s/munged.seed" % munge,
                              "--log-file=%s/log/munged.log" % self.root])
        self.wait_for(lambda: os.path.exists(os.path.join(munge, "munge.socket")), "munged")
        self.spawn("slurmctld", [daemon("slurmctld"), "-D", "-i", "-f", self.conf])
        self.spawn("slurmd", [daemon("slurmd"), "-D", "-N", self.NODE, "-f", self.conf])
        self.wait_for(self.node_is_up, "slurmctld and slurmd")

    def spawn(self, name, cmd):
        out = open(os.path.join(self.root, "log", name + ".out"), "w")
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=self.env, start_new_session=True)
        self.procs.append((name, proc))
        with open(os.path.join(self.root, name + ".daemon"), "w") as f:
            f.write(str(proc.pid))

    def node_is_up(self):
        r = self.run(["sinfo", "--noheader", "--format=%T"])
        return r.returncode == 0 and r.stdout.strip() == "idle"

    def wait_for(self, ready, what, seconds=45):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for name, proc in self.procs:
                if proc.poll() is not None:
                    raise CannotStart("%s exited with status %s:\n%s" % (name, proc.returncode, self.logs()))
            if ready():
                return
            time.sleep(0.5)
        raise CannotStart("%s did not come up in %d s:\n%s" % (what, seconds, self.logs()))

    def logs(self):
        text = []
        for name in sorted(os.listdir(os.path.join(self.root, "log"))):
            with open(os.path.join(self.root, "log", name), errors="replace") as f:
                text.append("--- %s\n%s" % (name, "".join(f.readlines()[-15:])))
        return "\n".join(text)

    def run(self, cmd, **kw):
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=self.env, **kw)

    def queue(self):
        """Every job and task the cluster still has pending, running or completing."""
        return self.run(["squeue", "--array", "--noheader", "--format=%i %T"]).stdout.strip()

    def stop(self):
        """Cancels what is left, then stops the daemons and anything still started from them."""
        if any(name == "slurmctld" for name, _ in self.procs):
            self.run(["scancel", "--user=" + str(os.geteuid())])
            deadline = time.monotonic() + 30
            while self.queue() and time.monotonic() < deadline:
                time.sleep(1)
        for name, proc in reversed(self.procs):
            stop_process(proc.pid)
            proc.wait()
        self.procs = []
        stop_leftovers(self.root)


def stop_process(pid, patience=10.0):
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        return
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline and alive(pid):
        time.sleep(0.2)
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def processes_mentioning(text):
    """The pids of the processes whose command line or environment holds `text`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        for what in ("cmdline", "environ"):
            try:
                with open("/proc/%s/%s" % (entry, what), "rb") as f:
                    if text.encode() in f.read() and alive(int(entry)):
                        found.append(int(entry))
                        break
            except OSError:
                continue
    return found


def still_running(text, patience=10.0):
    """The processes that mention `text` and still run after up to `patience` seconds, each as
    "pid (state): command line". A task that Slurm has just cancelled is gone from squeue once
    its main process has ended; what it started may still be ending (SIGKILL sent, exit not
    done), so a process is reported only if it outlives the wait."""
    deadline = time.monotonic() + patience
    while processes_mentioning(text) and time.monotonic() < deadline:
        time.sleep(0.2)
    described = []
    for pid in processes_mentioning(text):
        try:
            with open("/proc/%d/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                command = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue   # it ended meanwhile
        described.append("%d (%s): %s" % (pid, state, command[:300]))
    return described


def stop_leftovers(root):
    """What an earlier run under `root` left behind (a killed test): its daemons, by the pids it
    kept, and the processes they started (slurmstepd, tasks), which carry its SLURM_CONF."""
    if not os.path.isdir(root):
        return
    for name in os.listdir(root):
        if name.endswith(".daemon"):
            with open(os.path.join(root, name)) as f:
                pid = int(f.read().strip() or 0)
            if pid and processes_mentioning(root).count(pid):
                stop_process(pid)
    for pid in processes_mentioning("SLURM_CONF=" + os.path.join(root, "slurm.conf")):
        stop_process(pid, patience=2.0)

