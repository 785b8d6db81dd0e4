#!/usr/bin/env python3
"""Grades a whole class: `make grade-class SUBMISSIONS=dir`.

The submissions folder holds one subfolder per student, each a copy of labs/, named after the
student. How a class is graded:
  1. Students. Every subfolder is a student; hidden folders and plain files are ignored. A folder
     with no NN_* lab folder inside is not a copy of labs/: it is reported and not graded.
  2. One seed for the class, fresh and printed (--seed replays it): every student's checkers
     draw the same data.
  3. The reference checkers and device_query are built once, before any student, so that the
     graders running side by side never build the shared tree at the same time. (A lock keeps a
     second class run on the same build folder waiting until the first ends.)
  4. Builds. A small pool (--build-jobs, niced) configures and builds each submission in its own
     build folder, <build>/submissions/<student>, ahead of the graders, so that the GPUs are not
     left waiting for the compiler. A build that fails is not a grading failure: grading/grade.py
     builds again and scores that lab 0 with the compiler's message.
  5. Grading. One worker per GPU (`nvidia-smi`; CUDA_VISIBLE_DEVICES or --gpus narrow the set),
     or a single worker when there is none. Each worker takes the next built student and runs
     grading/grade.py --submission on it with CUDA_VISIBLE_DEVICES set to its own GPU, so that a
     4-GPU host grades four students at a time. Its output goes to <out>/<student>/grade.log and
     its reports (results.json, junit.xml, a log per lab) beside it.
  6. Faults. A student whose grading crashes or runs past --student-timeout (30 min) is stopped,
     with every checker it started, and gets a row saying so; the others go on.
  7. Reports, from each student's results.json, never from anything a checker printed:
     <out>/gradebook.csv (one row per student: points per lab, bonus per lab that has bonus
     tests, total, bonus, possible, status, notes) and <out>/summary.md, also printed (the score
     distribution, the tests most students failed, the labs that did not compile).

Without a GPU every submission is still built, so compile errors are reported, and every GPU test
is reported as skipped: the students' status is "no GPU" and the exit status 77.

On a Slurm cluster (--runner slurm, `make grade-class RUNNER=slurm`), steps 4 to 6 change; the
workbook, the build folder and --out must be on a filesystem that the compute nodes share:
  4'. The reference checkers are still built once, here, before anything is submitted. Then ONE
     job array goes to sbatch, a task per student, each with --gres=gpu:1 (--gres), --time
     (default: --student-timeout), and --partition, --account and the array's %N limit
     (--concurrency) when given. Task i runs grading/grade_task.py: prebuild and
     grade_student for student i, the same functions as here, so a compile error or a runaway
     build costs only that student's task.
  5'. While it runs, a progress line (done, running, pending, failed, from squeue and sacct)
     each time the counts change, and each student's score as their task ends.
  6'. A task that Slurm ends otherwise than COMPLETED (TIMEOUT, OUT_OF_MEMORY, NODE_FAIL,
     CANCELLED, FAILED) gives its student a "grading failed" row naming that state and the
     task's log, <out>/slurm/<job>_<task>.log.
  Resume: the same command again keeps every student who has results in --out, with the seed
  they were graded with, and submits only the others (--regrade: everyone, afresh). ^C or
  SIGTERM cancels the array (scancel) and waits until none of its tasks is left.

Exit status: 0 when every student was graded, 1 when the grading of some failed, 77 when there
was no GPU. Neither the students' scores nor folders that are not graded change it.
"""
import argparse
import csv
import fcntl
import json
import math
import os
import queue
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grade  # noqa: E402  (the trusted test lists, and the build folders' names)
import slurm  # noqa: E402  (sbatch, squeue, sacct, scancel: grading/slurm.py)

GRADE_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grade.py")
DEFAULT_STUDENT_TIMEOUT = 30 * 60.0
TOP_FAILED = 20
EXIT_NO_DEVICE = grade.EXIT_NO_DEVICE

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


def find_students(submissions):
    """Every visible subfolder, sorted; those that cannot be graded come back with a note."""
    students, keys = [], {}
    for name in sorted(os.listdir(submissions)):
        path = os.path.join(submissions, name)
        if name.startswith(".") or not os.path.isdir(path):
            continue
        student = Student(name, path)
        if not any(re.match(r"\d\d_", entry) and os.path.isdir(os.path.join(path, entry))
                   for entry in os.listdir(path)):
            student.status, student.note = "not graded", "not a copy of labs/: no NN_* lab folder in it"
        elif student.key in keys:
            student.status, student.note = "grading failed", (
                "its build folder name %s is also that of '%s': rename one of the two folders"
                % (student.key, keys[student.key]))
        else:
            keys[student.key] = name
        students.append(student)
    return students


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
# Building

def build_reference(build_dir, labs):
    """device_query and every selected lab's reference checker: what all graders share."""
    for cmd in (["cmake", "--build", build_dir, "--parallel", "--target", "device_query"],
                grade.build_checkers_command(build_dir, labs, "_solution")):
        r = grade.run_quiet(cmd)
        if r.returncode != 0:
            sys.exit("the reference checkers do not build:\n" + grade.compiler_errors(r.stdout))


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


# ----------------------------------------------------------------------------------------------
# Grading one student, and reading what it scored

def grade_student(student, gpu, args, seed, out_dir):
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


# ----------------------------------------------------------------------------------------------
# GPUs

class Gpu:
    def __init__(self, label, visible, env=None):
        self.label, self.visible, self.env = label, visible, env or {}


def find_gpus(requested):
    """--gpus, else the CUDA_VISIBLE_DEVICES we were given, else every GPU nvidia-smi lists
    (by its index, in its PCI bus order, which CUDA_DEVICE_ORDER=PCI_BUS_ID makes CUDA's too)."""
    if requested is None and os.environ.get("CUDA_VISIBLE_DEVICES") is not None:
        requested = os.environ["CUDA_VISIBLE_DEVICES"]
    if requested is not None:
        return [Gpu(g.strip(), g.strip()) for g in requested.split(",") if g.strip()]
    return [Gpu(i, i, {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}) for i in grade.nvidia_smi_gpus()]


# ----------------------------------------------------------------------------------------------
# Reports

def gradebook_columns(labs):
    """(header, lab id, "points" or "bonus"): a lab's points, then its bonus if it has bonus
    tests; a going-further part that has only bonus tests gets its bonus column alone."""
    columns = []
    for lab in labs:
        if lab.max_score or not lab.max_bonus:
            columns.append((lab.id, lab.id, "points"))
        if lab.max_bonus:
            columns.append(("%s bonus" % lab.id, lab.id, "bonus"))
    return columns


def write_gradebook(path, students, labs):
    columns = gradebook_columns(labs)
    possible = sum(lab.max_score for lab in labs)
    possible_bonus = sum(lab.max_bonus for lab in labs)
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["student"] + [header for header, _, _ in columns]
                     + ["total", "bonus", "possible", "possible bonus", "status", "notes"])
        for s in students:
            if s.graded:
                scores = [getattr(s, kind).get(lab_id, 0) for _, lab_id, kind in columns]
                scores += [s.total, s.total_bonus]
            else:
                scores = [""] * (len(columns) + 2)
            out.writerow([s.name] + scores + [possible, possible_bonus, s.status, s.note])


def replay_command(args, seed):
    return "make grade-class SUBMISSIONS=%s SEED=%d%s%s" % (
        args.submissions, seed, " LAB=%s" % args.lab if args.lab else "",
        " RUNNER=slurm" if args.runner == "slurm" else "")


def summary_text(students, labs, seed, args, where, seconds):
    """`where`: the GPUs it ran on ("2 GPUs", "no GPU", "Slurm job 12")."""
    possible = sum(lab.max_score for lab in labs)
    graded = [s for s in students if s.graded]
    students_here = plural(len([s for s in students if s.status != "not graded"]), "student")
    lines = ["# Class grading: %s" % args.submissions, "",
             "%s, labs %s; seed %d (replay: %s); %s; %s." % (
                 students_here, ", ".join(lab.id for lab in labs), seed,
                 replay_command(args, seed), where, duration(seconds)), ""]
    counts = {status: [s.name for s in students if s.status == status]
              for status in ("ok", "no GPU", "grading failed", "not graded")}
    lines.append("Status: " + "; ".join(
        "%s %d" % (status, len(names)) + (" (%s)" % ", ".join(names) if status != "ok" else "")
        for status, names in counts.items() if names or status == "ok") + ".")
    if counts["no GPU"]:
        lines.append("")
        lines.append("No GPU: every GPU test was skipped and scored 0; the failures below are "
                     "only labs that did not compile.")

    lines += ["", "## Scores", ""]
    if graded:
        lines += ["| | mean | median | min | max | possible |", "|---|---|---|---|---|---|"]
        rows = [("total", [s.total for s in graded], possible)]
        rows += [(lab.id, [s.points.get(lab.id, 0) for s in graded], lab.max_score)
                 for lab in labs if lab.max_score]
        if any(lab.max_bonus for lab in labs):
            rows.append(("bonus", [s.total_bonus for s in graded], sum(lab.max_bonus for lab in labs)))
        for name, values, most in rows:
            lines.append("| %s | %.1f | %g | %d | %d | %d |" % (
                name, statistics.mean(values), statistics.median(values), min(values),
                max(values), most))
    else:
        lines.append("No student was graded.")

    failures = {}
    for s in graded:
        for name in s.failed:
            failures[name] = failures.get(name, 0) + 1
    lines += ["", "## Tests most students failed", ""]
    if failures:
        ranked = sorted(failures.items(), key=lambda item: (-item[1], item[0]))[:TOP_FAILED]
        lines += ["| test | failed | % |", "|---|---|---|"]
        lines += ["| %s | %d/%d | %.0f%% |" % (name, n, len(graded), 100.0 * n / len(graded))
                  for name, n in ranked]
        if len(failures) > TOP_FAILED:
            lines.append("")
            lines.append("(%d more tests failed for someone: see the gradebook and each "
                         "student's results.json)" % (len(failures) - TOP_FAILED))
    else:
        lines.append("No test failed." if graded else "No student was graded.")

    no_compile = [(lab.id, [s.name for s in graded if lab.id in s.no_compile]) for lab in labs]
    problems = [s for s in students if not s.graded]
    if any(names for _, names in no_compile) or problems:
        lines += ["", "## Problems", ""]
        lines += ["- %s does not compile for %d: %s" % (lab_id, len(names), ", ".join(names))
                  for lab_id, names in no_compile if names]
        lines += ["- %s: %s: %s" % (s.name, s.status, s.note) for s in problems]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------
# Grading here: a pool of builders feeding one grader per GPU

def grade_here(to_grade, args, labs, seed, out_dir, tests_by_name, gpus, build_jobs):
    """Grades every student on this machine's GPUs (or with none), one at a time per GPU."""
    possible = sum(lab.max_score for lab in labs)
    possible_bonus = sum(lab.max_bonus for lab in labs)

    # Builders feed `ready`; graders, one per GPU, take from it.
    pending, ready = queue.Queue(), queue.Queue()
    for s in to_grade:
        pending.put(s)
    jobs_each = max(1, (os.cpu_count() or 2) // build_jobs)
    done = [0]

    def builder():
        while True:
            try:
                s = pending.get_nowait()
            except queue.Empty:
                return
            t0 = time.monotonic()
            try:
                s.note = prebuild(s, args.build_dir, labs, out_dir, jobs_each)
            except Exception as e:  # a broken student must not stop the class
                s.note = "could not build it: %r" % e
            say("        built %s (%.0f s)%s" % (s.name, time.monotonic() - t0,
                                               ": " + s.note if s.note else ""))
            ready.put(s)

    def grader(gpu):
        where = "on GPU %s" % gpu.label if gpu else "(no GPU)"
        while True:
            s = ready.get()
            if s is None:
                return
            if not s.note:
                say("        start %s %s" % (s.name, where))
                try:
                    status = grade_student(s, gpu, args, seed, out_dir)
                    read_results(s, status, out_dir, tests_by_name, args.student_timeout)
                except Exception as e:
                    s.status, s.note = "grading failed", "grade_class.py: %r" % e
            with print_lock:
                done[0] += 1
                print("[%*d/%d] %s %s: %s (%.0f s)" % (
                    len(str(len(to_grade))), done[0], len(to_grade), s.name, where,
                    score_text(s, possible, possible_bonus), s.seconds), flush=True)

    builders = [threading.Thread(target=builder, daemon=True) for _ in range(build_jobs)]
    graders = [threading.Thread(target=grader, args=(gpu,), daemon=True) for gpu in (gpus or [None])]
    try:
        for t in builders + graders:
            t.start()
        for t in builders:
            while t.is_alive():
                t.join(0.5)
        for _ in graders:
            ready.put(None)
        for t in graders:
            while t.is_alive():
                t.join(0.5)
    except KeyboardInterrupt:
        with running_lock:
            stopping.set()
            procs = list(running)
        for proc in procs:
            stop_tree(proc)
        sys.exit("interrupted: the gradebook was not written")


# ----------------------------------------------------------------------------------------------
# Grading on a Slurm cluster: one job array, one task per student (grading/grade_task.py)
#
# <out>/slurm/ holds the run's record (class.json: the submissions, labs, seed and jobs), each
# array's tasks file and each task's Slurm log (<job>_<task>.log). Each task leaves
# <out>/<student>/slurm_task.json beside the student's reports: grade.py's exit status.

TASK_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grade_task.py")
TASK_RECORD = "slurm_task.json"
WHY = {"COMPLETED": "ended without recording a result",
       "TIMEOUT": "ran past its time limit (SLURM_TIME=%(time)s)",
       "OUT_OF_MEMORY": "ran out of memory",
       "NODE_FAIL": "its node failed",
       "CANCELLED": "was cancelled (scancel, or the cluster's administrators)",
       "FAILED": "failed: the task itself stopped with an error",
       "UNKNOWN": "is no longer known to Slurm (squeue, sacct), and left no results"}


class Interrupted(Exception):
    pass


def raise_interrupted(signum, frame):
    raise Interrupted(signal.Signals(signum).name)


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def write_json(path, value):
    with open(path + ".tmp", "w") as f:
        json.dump(value, f, indent=1)
    os.replace(path + ".tmp", path)


def start_or_resume(out_dir, args, labs):
    """The record of this Slurm run of the class in out_dir: an earlier one of the same class and
    labs, which this run resumes with its seed, or (none, or --regrade) a fresh one."""
    path = os.path.join(out_dir, "slurm", "class.json")
    earlier = read_json(path)
    for job in (earlier or {}).get("jobs", []):
        if slurm.active_tasks(job):
            sys.exit("Slurm job %s of an earlier run into %s still has tasks pending or running: "
                     "wait for it to end, or cancel it (scancel %s)" % (job, out_dir, job))
    lab_ids = [lab.id for lab in labs]
    if earlier and not args.regrade:
        if (earlier.get("submissions"), earlier.get("labs")) != (args.submissions, lab_ids):
            sys.exit("%s holds the grading of %s, labs %s: grade this class elsewhere (--out), "
                     "or add REGRADE=1 to replace it" % (out_dir, earlier.get("submissions"),
                                                         ", ".join(earlier.get("labs") or [])))
        if args.seed is not None and args.seed != earlier["seed"]:
            sys.exit("the students graded in %s drew seed %d: add REGRADE=1 to grade them all "
                     "again with seed %d" % (out_dir, earlier["seed"], args.seed))
        return earlier
    clear_out(out_dir)
    shutil.rmtree(os.path.join(out_dir, "slurm"), ignore_errors=True)
    os.makedirs(os.path.join(out_dir, "slurm"))
    record = {"submissions": args.submissions, "labs": lab_ids, "jobs": [],
              "seed": args.seed if args.seed is not None else secrets.randbelow(2**31)}
    write_json(path, record)
    return record


def read_task(student, record, out_dir, tests_by_name):
    """Fills in a student from what its task recorded, as the local runner does from
    prebuild and grade_student: the same results.json, read by the same read_results."""
    student.seconds = record.get("seconds", 0.0)
    if record.get("note"):
        student.status, student.note = "grading failed", record["note"]
    elif record.get("exit_status") is None:
        student.status, student.note = "grading failed", "its Slurm task recorded no exit status"
    else:
        read_results(student, record["exit_status"], out_dir, tests_by_name, None)


def earlier_result(student, out_dir, tests_by_name):
    """The student as an earlier run graded them into out_dir, or None when they have no results."""
    record = read_json(os.path.join(out_dir, student.key, TASK_RECORD))
    if record is None:
        return None
    earlier = Student(student.name, student.path)
    read_task(earlier, record, out_dir, tests_by_name)
    return earlier if earlier.graded else None


def fresh_folder(out_dir, student):
    """The student's report folder, emptied of what an earlier attempt left there."""
    path = os.path.join(out_dir, student.key)
    if any(os.path.exists(os.path.join(path, name)) for name in ("build.log", "grade.log", TASK_RECORD)):
        shutil.rmtree(path)
    os.makedirs(path, exist_ok=True)


def finish_task(student, state, job, index, args, out_dir, tests_by_name):
    """A task has ended: the student's results, or a row that says how Slurm ended it."""
    log = os.path.join(out_dir, "slurm", "%s_%d.log" % (job, index))
    record = read_json(os.path.join(out_dir, student.key, TASK_RECORD))
    if record is not None and state in ("COMPLETED", "UNKNOWN"):
        read_task(student, record, out_dir, tests_by_name)
        return
    why = WHY.get(state, "ended") % {"time": args.time}
    student.status = "grading failed"
    student.note = "Slurm %s: task %s_%d %s; log: %s" % (state, job, index, why, log)


def slurm_settings(args):
    """The sbatch options every task of this run gets (partition, account, time, gres, CPUs)."""
    return slurm.options(args.partition, args.account, args.time, args.gres, args.cpus)


def submit(todo, args, seed, out_dir, record):
    """The tasks file, then one array through sbatch: its job id, kept in class.json."""
    tasks = os.path.join(out_dir, "slurm", "tasks-%d.json" % (len(record["jobs"]) + 1))
    write_json(tasks, {"out": out_dir, "build_dir": args.build_dir, "seed": seed, "lab": args.lab,
                       "labs": record["labs"],
                       "students": [{"name": s.name, "path": s.path} for s in todo]})
    settings = slurm_settings(args)
    say(slurm.process_tracking())
    job = slurm.submit_array(len(todo), settings, "grade-class",
                             os.path.join(out_dir, "slurm", "%A_%a.log"),
                             [sys.executable, TASK_PY, tasks], grade.SOURCE_DIR, args.concurrency)
    record["jobs"].append(job)
    write_json(os.path.join(out_dir, "slurm", "class.json"), record)
    say("Slurm job %s: %s (%s), one per student; logs in %s/" % (
        job, plural(len(todo), "task"), " ".join(settings) or "no options",
        os.path.join(out_dir, "slurm")))
    return job


def watch(job, todo, args, out_dir, tests_by_name, possible, possible_bonus):
    """Waits until every task has ended: a progress line whenever the counts change, and each
    student's score as their task ends."""
    ended, last = set(), None
    while len(ended) < len(todo):
        try:
            states = slurm.task_states(job, len(todo))
        except slurm.SlurmError as e:
            say("        %s; asking again in %.0f s" % (e, args.poll))
            time.sleep(args.poll)
            continue
        for i, s in enumerate(todo):
            if i not in ended and states[i] in slurm.FINISHED:
                ended.add(i)
                finish_task(s, states[i], job, i, args, out_dir, tests_by_name)
                say("[%*d/%d] %s (task %s_%d): %s%s" % (
                    len(str(len(todo))), len(ended), len(todo), s.name, job, i,
                    score_text(s, possible, possible_bonus),
                    " (%.0f s)" % s.seconds if s.seconds else ""))
        counts = [sum(slurm.kind(state) == k for state in states.values())
                  for k in ("done", "running", "pending", "failed")]
        if counts != last:
            say("        Slurm job %s: %d done, %d running, %d pending, %d failed" % (job, *counts))
            last = counts
        if len(ended) < len(todo):
            time.sleep(args.poll)


def grade_on_slurm(to_grade, args, labs, record, out_dir, tests_by_name):
    """Grades the students who have no results in out_dir yet as one Slurm job array; ^C or
    SIGTERM cancels the array and waits until none of its tasks is left."""
    possible = sum(lab.max_score for lab in labs)
    possible_bonus = sum(lab.max_bonus for lab in labs)
    todo = []
    for s in to_grade:
        earlier = earlier_result(s, out_dir, tests_by_name)   # none after --regrade
        if earlier is None:
            todo.append(s)
        else:
            s.__dict__.update(earlier.__dict__)
    if len(todo) < len(to_grade):
        say("%s already graded in %s (REGRADE=1 grades them again): %s" % (
            plural(len(to_grade) - len(todo), "student"), out_dir,
            ", ".join(s.name for s in to_grade if s not in todo)))
    if not todo:
        return jobs_text(record)
    for s in todo:
        fresh_folder(out_dir, s)

    job = None
    handlers = {sig: signal.signal(sig, raise_interrupted) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        # No signal between sbatch's answer and the job id kept: a ^C meanwhile waits until here.
        signal.pthread_sigmask(signal.SIG_BLOCK, handlers)
        try:
            job = submit(todo, args, record["seed"], out_dir, record)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, handlers)
        watch(job, todo, args, out_dir, tests_by_name, possible, possible_bonus)
    except slurm.SlurmError as e:
        sys.exit(str(e))
    except Interrupted as e:
        for sig, handler in handlers.items():
            signal.signal(sig, signal.SIG_IGN)
        if job is None:
            sys.exit("interrupted (%s) before any job was submitted" % e)
        say("interrupted (%s): cancelling Slurm job %s ..." % (e, job))
        try:
            left = "none of its tasks is left" if slurm.cancel(job) else (
                "but squeue still lists some of its tasks: check with squeue --jobs=%s" % job)
        except slurm.SlurmError as error:
            sys.exit("interrupted, and Slurm job %s could not be cancelled: %s\nCancel it with: "
                     "scancel %s" % (job, error, job))
        sys.exit("interrupted: Slurm job %s was cancelled, %s. The gradebook was not written; "
                 "the same command grades the students who have no results yet." % (job, left))
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    return jobs_text(record)


def jobs_text(record):
    """The arrays that graded the class, for the summary: "Slurm jobs 12, 15"."""
    return "Slurm job%s %s" % ("s" if len(record["jobs"]) > 1 else "", ", ".join(record["jobs"]) or "(none)")


# ----------------------------------------------------------------------------------------------
# The class

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--submissions", required=True, help="a folder with one copy of labs/ per student")
    p.add_argument("--build-dir", default=os.path.join(grade.SOURCE_DIR, "build"))
    p.add_argument("--out", help="where the gradebook, summary and each student's reports go "
                                 "(default <build>/class; what an earlier class run left there is removed)")
    p.add_argument("--lab", help="grade one lab only: its number (01) or full name (01_vector_add)")
    p.add_argument("--seed", type=int, help="the class's data seed; by default a fresh one is drawn")
    p.add_argument("--gpus", help="the GPUs to use, e.g. 0,2 (default: every GPU)")
    p.add_argument("--student-timeout", type=float, default=DEFAULT_STUDENT_TIMEOUT,
                   help="seconds one student's grading may take (default %(default).0f)")
    p.add_argument("--build-jobs", type=int, help="submissions built at once (default: two per "
                                                  "grader, at most one per 4 CPUs)")
    cluster = p.add_argument_group(
        "Slurm", "--runner slurm: one job array, a task per student on a GPU of its own. Each "
        "student's reports are kept: the same command again grades only the students without "
        "results (--regrade: all of them)")
    cluster.add_argument("--runner", choices=["local", "slurm"], default="local",
                         help="local (default): this machine's GPUs; slurm: a Slurm job array")
    cluster.add_argument("--partition", help="sbatch --partition (SLURM_PARTITION)")
    cluster.add_argument("--account", help="sbatch --account (SLURM_ACCOUNT)")
    cluster.add_argument("--time", help="each student's time limit, Slurm's format: minutes, or "
                                        "H:MM:SS (SLURM_TIME; default: --student-timeout)")
    cluster.add_argument("--concurrency", type=int,
                         help="at most this many students at once: the array's %%N (SLURM_CONCURRENCY)")
    cluster.add_argument("--gres", default="gpu:1",
                         help="each task's generic resources (default %(default)s; '' or none: "
                              "none, for a cluster without GPUs; SLURM_GRES)")
    cluster.add_argument("--cpus", type=int, default=8,
                         help="each task's CPUs, for building its student's checkers (default "
                              "%(default)s; SLURM_CPUS)")
    cluster.add_argument("--regrade", action="store_true",
                         help="grade every student again, with a fresh seed (REGRADE=1)")
    cluster.add_argument("--poll", type=float, default=10.0,
                         help="seconds between two looks at the queue (default %(default).0f)")
    args = p.parse_args(argv)
    if args.time is None:
        args.time = str(int(math.ceil(args.student_timeout / 60)))
    return args


def check_arguments(args):
    """Exits with a clear message unless the submissions folder and the tools are usable."""
    if shutil.which("cmake") is None:
        sys.exit("cmake is not installed: see README.md, Prerequisites")
    args.build_dir = os.path.abspath(args.build_dir)
    args.submissions = os.path.abspath(args.submissions)
    if not os.path.isdir(args.submissions):
        sys.exit("no such submissions folder: %s" % args.submissions)
    if any(re.match(r"\d\d_", e) for e in os.listdir(args.submissions)):
        sys.exit("%s holds lab folders itself: it is one copy of labs/, not a class of them "
                 "(grade it with make grade SUBMISSION=%s)" % (args.submissions, args.submissions))
    if args.runner == "slurm":
        try:
            for command in ("sbatch", "squeue", "scancel"):
                slurm.require(command)
            # Before anything is replaced (REGRADE=1 clears the earlier results).
            slurm.check_placement(slurm_settings(args))
        except slurm.SlurmError as e:
            sys.exit(str(e))


def lock_build_dir(build_dir):
    """One class run at a time per build folder: two would build the same folders at once."""
    lock = open(os.path.join(build_dir, "grade_class.lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        say("waiting for the other grade_class.py run on %s to end ..." % build_dir)
        fcntl.flock(lock, fcntl.LOCK_EX)
    return lock


def selected_labs(build_dir, wanted):
    """The labs the build folder knows (workbook.json), or only the one asked for."""
    with open(os.path.join(build_dir, "workbook.json")) as f:
        manifest = json.load(f)
    labs = [grade.Lab(entry["id"], entry["source"]) for entry in manifest["labs"]]
    if wanted:
        labs = [lab for lab in labs if wanted in (lab.id, lab.number)]
        if not labs:
            sys.exit("no lab %s; the labs are: %s" % (wanted, ", ".join(e["id"] for e in manifest["labs"])))
    return labs


def reference_tests(build_dir, labs):
    """Builds the trusted checkers once and reads each lab's tests with their points and bonus,
    keyed as a student's results.json names them."""
    t0 = time.monotonic()
    build_reference(build_dir, labs)
    say("        built the reference checkers (%.0f s)" % (time.monotonic() - t0))
    tests_by_name = {}
    for lab in labs:
        lab.tests = grade.list_tests(os.path.join(build_dir, "bin", "check_%s_solution" % lab.id), [])
        for test in lab.tests:
            tests_by_name["lab %s %s: %s" % (lab.number, lab.title, test.name)] = (lab, test)
    return tests_by_name


def write_outputs(out_dir, students, labs, seed, args, where, seconds):
    """The gradebook and the summary, and the closing lines."""
    gradebook = os.path.join(out_dir, "gradebook.csv")
    write_gradebook(gradebook, students, labs)
    summary = summary_text(students, labs, seed, args, where, seconds)
    with open(os.path.join(out_dir, "summary.md"), "w") as f:
        f.write(summary)
    say("\n" + summary)
    say("Graded %s in %s. Gradebook: %s; summary: %s; each student's results.json "
        "and logs in %s/<student>/" % (plural(len([s for s in students if s.graded]), "student"),
                                        duration(seconds),
                                        gradebook, os.path.join(out_dir, "summary.md"), out_dir))


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    started = time.monotonic()
    check_arguments(args)
    grade.configure(args.build_dir)
    lock = lock_build_dir(args.build_dir)  # held until the process ends
    labs = selected_labs(args.build_dir, args.lab)

    students = find_students(args.submissions)
    to_grade = [s for s in students if not s.note]
    for s in students:
        if s.note:
            say("%s: %s: %s" % (s.status, s.name, s.note))
    out_dir = os.path.abspath(args.out or os.path.join(args.build_dir, "class"))
    if args.runner == "slurm":
        try:
            record = start_or_resume(out_dir, args, labs)   # an earlier run's seed, when resumed
        except slurm.SlurmError as e:
            sys.exit(str(e))
        seed = record["seed"]
    else:
        gpus = find_gpus(args.gpus)
        workers = max(1, len(gpus))
        # Two builds per grader, so that the next student is built while one is graded (about
        # 35 s for a full-marks student on an H100) even when a build takes longer than that.
        build_jobs = args.build_jobs or max(1, min(2 * workers, (os.cpu_count() or 2) // 4))
        seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
        clear_out(out_dir)
        for s in to_grade:
            os.makedirs(os.path.join(out_dir, s.key))

    say("Grading %s in %s, labs %s" % (plural(len(to_grade), "student"), args.submissions,
                                               ", ".join(lab.id for lab in labs)))
    say("seed %d (replay with: %s)" % (seed, replay_command(args, seed)))
    if args.runner == "slurm":
        say("Slurm: a job array, one task per student, each with %s" % (
            " ".join(slurm_settings(args))))
    elif gpus:
        say("%s (%s): one student per GPU at a time" % (
            plural(len(gpus), "GPU"), ", ".join(g.label for g in gpus)))
    else:
        say("no GPU found (nvidia-smi): every submission is built and every GPU test is skipped")

    tests_by_name = reference_tests(args.build_dir, labs)
    if args.runner == "slurm":
        where = grade_on_slurm(to_grade, args, labs, record, out_dir, tests_by_name)
    else:
        grade_here(to_grade, args, labs, seed, out_dir, tests_by_name, gpus, build_jobs)
        where = plural(len(gpus), "GPU") if gpus else "no GPU"
    write_outputs(out_dir, students, labs, seed, args, where, time.monotonic() - started)
    lock.close()

    if any(s.status == "grading failed" for s in students):
        return 1
    if any(s.status == "no GPU" for s in students):
        return EXIT_NO_DEVICE
    return 0


if __name__ == "__main__":
    sys.exit(main())
