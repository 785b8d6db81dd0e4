"""One student of a class: their record, building and grading them, and reading what they scored.

Shared by the class's two runners and the command that drives them, which is why it is a module
of its own (they all import it; it imports none of them):
  grading/grade_class.py   the command (`make grade-class`): finds the Student folders
  grading/class_local.py   the local runner: prebuild and grade_student on this host's GPUs
  grading/grade_task.py    one Slurm task: prebuild and grade_student for one student
  grading/class_slurm.py   the Slurm runner: read_results on what each task left
  grading/gradebook.py     the gradebook and summary, from the Students' scores

    Student                      one student: their folder, status, points, bonus, failed tests
    run_logged / stop_all        a process in a session of its own, stopped with all it started
    prebuild(student, ...)       configures and builds the student's checkers, ahead of grading
    grade_student(student, ...)  grading/grade.py --submission, on one GPU or none
    read_results(student, ...)   the student's scores, from the results.json grade.py wrote
    say, plural, duration, score_text   progress lines
    clear_out(out_dir)           removes what an earlier class run left in --out
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import grade  # the build folders' names and commands, its exit statuses (grading/grade.py)

GRADE_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grade.py")
EXIT_NO_DEVICE = grade.EXIT_NO_DEVICE

# Builders and graders print from threads of their own: a line at a time.
print_lock = threading.Lock()


def say(text):
    with print_lock:
        print(text, flush=True)


# ----------------------------------------------------------------------------------------------
# Students

class Student:
    def __init__(self, name, path):
        self.name, self.path = name, path
        # The build folder grading/grade.py gives a submission: <build>/submissions/<folder name>.
        self.key = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
        self.status = "grading failed"   # ok | no GPU | grading failed | not graded
        self.note = ""                   # why grading failed, or why the folder was not graded
        self.points, self.bonus = {}, {} # lab id -> points earned, bonus earned
        self.failed = []                 # names of the tests that ran (or did not compile) and failed
        self.no_compile = []             # lab ids whose checker did not build
        self.seconds = 0.0               # how long its grading took

    @property
    def graded(self):
        return self.status in ("ok", "no GPU")

    @property
    def total(self):
        return sum(self.points.values())

    @property
    def total_bonus(self):
        return sum(self.bonus.values())


# ----------------------------------------------------------------------------------------------
# Processes: each runs in a session of its own, so that a timeout or ^C stops it and all it started

running = set()
running_lock = threading.Lock()
stopping = threading.Event()     # set on ^C: nothing new starts


def run_logged(cmd, log, timeout=None, env=None, nice=False):
    """Runs cmd with its output appended to the open file `log`; returns its exit status, or
    None when it ran past `timeout` and was stopped."""
    log.write("$ %s\n" % " ".join(cmd))
    log.flush()
    with running_lock:
        if stopping.is_set():
            return None
        proc = subprocess.Popen((["nice", "-n", "10"] if nice and shutil.which("nice") else []) + cmd,
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
        running.add(proc)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop_tree(proc)
        return None
    finally:
        with running_lock:
            running.discard(proc)


def stop_all():
    """On ^C: starts nothing more, and stops every process running now with all it started."""
    with running_lock:
        stopping.set()
        procs = list(running)
    for proc in procs:
        stop_tree(proc)


def stop_tree(proc):
    """Stops a process, its group, and every process it started, and waits for it."""
    kill_tree(proc.pid)
    proc.wait()


def kill_tree(leader):
    """Kills a process group and every process its leader started, checkers in sessions of
    their own included: the group is frozen first so that it starts nothing new meanwhile."""
    try:
        os.killpg(leader, signal.SIGSTOP)
    except OSError:
        pass
    for pid in descendants(leader):
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
                break
            except OSError:
                continue
    try:
        os.killpg(leader, signal.SIGKILL)
    except OSError:
        pass


def descendants(pid):
    """Every process that pid started, and those they started, from /proc's parent links."""
    children = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


# ----------------------------------------------------------------------------------------------
# Building and grading one student (the local runner's builders and graders, and each Slurm task)

def prebuild(student, build_dir, labs, out_dir, jobs):
    """Configures the student's build folder as grading/grade.py would, always with this
    student's path (a folder left by another submission of the same name is re-pointed), and
    builds each lab's checker. Returns "" or why the submission cannot be graded at all."""
    sub_dir = os.path.join(build_dir, "submissions", student.key)
    with open(os.path.join(out_dir, student.key, "build.log"), "w") as log:
        status = run_logged(["cmake", "-S", grade.SOURCE_DIR, "-B", sub_dir,
                             *grade.submission_options(build_dir, student.path)], log, nice=True)
        if status != 0:
            with open(log.name, errors="replace") as f:
                missing = re.findall(r"Cannot find source file:\s+(\S+)", f.read())
            return "cmake could not configure it: %s (see build.log)" % (
                "no " + ", ".join(sorted(set(missing))) if missing else "a lab's file is missing?")
        # Every lab's checker in one build, spread over the CPUs (each is one student file and a
        # link), going on past a lab that does not compile: grade.py builds each lab again and
        # reports a failing one's errors as that lab's.
        run_logged(grade.build_checkers_command(sub_dir, labs, "", jobs), log, nice=True)
    return ""


def grade_student(student, gpu, args, seed, out_dir):
    """grading/grade.py --submission on the student, output in <out>/<student>/grade.log: its exit
    status, or None when it ran past args.student_timeout. With gpu None the GPUs are those of
    the environment (none here, or the one Slurm gave the task)."""
    env = dict(os.environ)
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu.visible
        env.update(gpu.env)
    cmd = [sys.executable, GRADE_PY, "--build-dir", args.build_dir, "--submission", student.path,
           "--seed", str(seed), "--out", os.path.join(out_dir, student.key)]
    if args.lab:
        cmd += ["--lab", args.lab]
    started = time.monotonic()
    with open(os.path.join(out_dir, student.key, "grade.log"), "w") as log:
        status = run_logged(cmd, log, timeout=args.student_timeout, env=env)
    student.seconds = time.monotonic() - started
    return status


def read_results(student, status, out_dir, tests_by_name, timeout):
    """Fills in the student's scores from the results.json that grading/grade.py wrote."""
    path = os.path.join(out_dir, student.key, "results.json")
    if status is None:
        student.note = "timed out after %.0f s and was stopped (--student-timeout)" % timeout
        return
    try:
        with open(path) as f:
            results = json.load(f)
        entries = results["tests"]
    except (OSError, ValueError, KeyError, TypeError):
        student.note = "grading/grade.py exited with status %s and wrote no results%s" % (
            status, last_line(os.path.join(out_dir, student.key, "grade.log")))
        return
    if status not in (0, 1, EXIT_NO_DEVICE):
        student.note = "grading/grade.py exited with status %s%s" % (
            status, last_line(os.path.join(out_dir, student.key, "grade.log")))
        return
    for entry in entries:
        name, output = str(entry.get("name", "")), str(entry.get("output", ""))
        known = tests_by_name.get(name)
        if known is None:          # a lab-level entry, e.g. a lab whose test list was empty
            continue
        lab, test = known
        passed = entry.get("status") == "passed"
        student.points[lab.id] = student.points.get(lab.id, 0) + (test.points if passed else 0)
        student.bonus[lab.id] = student.bonus.get(lab.id, 0) + (test.bonus if passed else 0)
        if output.startswith("does not compile") and lab.id not in student.no_compile:
            student.no_compile.append(lab.id)
        if not passed and not output.startswith("not run (skipped)"):
            student.failed.append(name)
    student.status = "no GPU" if status == EXIT_NO_DEVICE else "ok"
    if student.no_compile:
        student.note = "does not compile: " + ", ".join(student.no_compile)


def last_line(log_path):
    try:
        with open(log_path, errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
        return ": " + lines[-1] if lines else ""
    except OSError:
        return ""


# ----------------------------------------------------------------------------------------------
# Progress lines, and the class's output folder

def plural(n, word):
    return "%d %s%s" % (n, word, "" if n == 1 else "s")


def duration(seconds):
    return "%.0f s" % seconds if seconds < 60 else "%d min %02d s" % (seconds // 60, seconds % 60)


def score_text(student, possible, possible_bonus):
    if not student.graded:
        return "%s: %s" % (student.status, student.note)
    text = "%d/%d" % (student.total, possible)
    if possible_bonus:
        text += " +%d/%d bonus" % (student.total_bonus, possible_bonus)
    if student.status == "no GPU":
        text += ", every GPU test skipped"
    if student.no_compile:
        text += "; %s" % student.note
    return text


def clear_out(out_dir):
    """Removes what an earlier class run left in out_dir, and nothing else."""
    if not os.path.isdir(out_dir):
        return
    for name in os.listdir(out_dir):
        path = os.path.join(out_dir, name)
        if name in ("gradebook.csv", "summary.md"):
            os.remove(path)
        elif os.path.isdir(path) and not os.path.islink(path) and any(
                os.path.exists(os.path.join(path, log)) for log in ("build.log", "grade.log")):
            shutil.rmtree(path)
        elif os.path.isdir(path) and not os.path.islink(path) and not os.listdir(path):
            # A student's folder that a run stopped before its build began: empty, so nothing is
            # lost, and left there it would stop this run from making it again.
            os.rmdir(path)

