"""The Slurm runner (--runner slurm): grades a class as one job array, a task per student.

grading/grade_class.py calls check_cluster before anything is cleared, makes a SlurmRun (which
starts or resumes the run's record, and so its seed), prints its describe() line, then calls
grade(): one sbatch for the students who have no results yet, then squeue and sacct until every
task has ended (grading/slurm.py asks them). Task i runs grading/grade_task.py, which builds and
grades student i with class_student's prebuild and grade_student, as the local runner does, and
writes what came of it with write_json to <out>/<student>/TASK_RECORD; finish_task reads it back
with class_student.read_results, or says how Slurm ended the task (WHY).

<out>/slurm/ holds the run's record (class.json: the submissions, labs, seed and jobs), each
array's tasks file (tasks-<n>.json, read by grade_task.py) and each task's Slurm log
(<job>_<task>.log). Each task leaves <out>/<student>/slurm_task.json beside the student's
reports: grade.py's exit status, or why the student could not be graded.
"""
import json
import os
import secrets
import shutil
import signal
import sys
import time

import grade
import slurm  # sbatch, squeue, sacct, scancel: grading/slurm.py
from class_student import Student, clear_out, plural, read_results, say, score_text

TASK_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grade_task.py")
TASK_RECORD = "slurm_task.json"   # what a task writes in its student's folder (grade_task.py)
# How a task that left no results ended, by Slurm's state, for its student's row.
WHY = {"COMPLETED": "ended without recording a result",
       "TIMEOUT": "ran past its time limit (SLURM_TIME=%(time)s)",
       "OUT_OF_MEMORY": "ran out of memory",
       "NODE_FAIL": "its node failed",
       "CANCELLED": "was cancelled (scancel, or the cluster's administrators)",
       "FAILED": "failed: the task itself stopped with an error",
       "UNKNOWN": "is no longer known to Slurm (squeue, sacct), and left no results"}


class SlurmRun:
    """What grade_class.py's main needs of this runner: the seed (an earlier run's, when this
    one resumes it), a line saying where the class is graded, and grade()."""

    def __init__(self, args, out_dir, labs):
        self.args, self.out_dir = args, out_dir
        try:
            self.record = start_or_resume(out_dir, args, labs)
        except slurm.SlurmError as e:
            sys.exit(str(e))
        self.seed = self.record["seed"]

    def describe(self):
        return "Slurm: a job array, one task per student, each with %s" % " ".join(slurm_settings(self.args))

    def grade(self, to_grade, labs, tests_by_name):
        """Grades every student; returns where, for the summary ("Slurm jobs 12, 15")."""
        return grade_on_slurm(to_grade, self.args, labs, self.record, self.out_dir, tests_by_name)


def check_cluster(args):
    """Exits with a clear message unless this is a Slurm login node on which a task so placed
    could run. Called before anything is replaced (REGRADE=1 clears the earlier results)."""
    try:
        for command in ("sbatch", "squeue", "scancel"):
            slurm.require(command)
        slurm.check_placement(slurm_settings(args))
    except slurm.SlurmError as e:
        sys.exit(str(e))


def slurm_settings(args):
    """The sbatch options every task of this run gets (partition, account, time, gres, CPUs)."""
    return slurm.options(args.partition, args.account, args.time, args.gres, args.cpus)


# ----------------------------------------------------------------------------------------------
# The run's record, in <out>/slurm/class.json

def read_json(path):
    """The file's value, or None when it is missing or unreadable."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def write_json(path, value):
    """Through a rename, so that a reader (the class, or a resumed run) never sees half a file."""
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


# ----------------------------------------------------------------------------------------------
# The students' results, from what their tasks recorded

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


# ----------------------------------------------------------------------------------------------
# The job array: submitted, watched to its end, cancelled on ^C or SIGTERM

class Interrupted(Exception):
    pass


def raise_interrupted(signum, frame):
    raise Interrupted(signal.Signals(signum).name)


def grade_on_slurm(to_grade, args, labs, record, out_dir, tests_by_name):
    """Grades the students who have no results in out_dir yet as one Slurm job array; ^C or
    SIGTERM cancels the array and waits until none of its tasks is left."""
    todo = not_yet_graded(to_grade, out_dir, tests_by_name)
    if not todo:
        return jobs_text(record)
    for s in todo:
        fresh_folder(out_dir, s)
    run_array(todo, args, labs, record, out_dir, tests_by_name)
    return jobs_text(record)


def not_yet_graded(to_grade, out_dir, tests_by_name):
    """The students to submit. Those an earlier run graded get their results back, and are
    named: this run resumes that one."""
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
    return todo


def run_array(todo, args, labs, record, out_dir, tests_by_name):
    """Submits one array for `todo` and watches it until every task has ended. On SIGINT or
    SIGTERM it cancels the array and exits; the gradebook is not written."""
    possible = sum(lab.max_score for lab in labs)
    possible_bonus = sum(lab.max_bonus for lab in labs)
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
        # A second ^C must not stop the cancelling half-way.
        for sig in handlers:
            signal.signal(sig, signal.SIG_IGN)
        cancel_and_exit(job, e)
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def cancel_and_exit(job, why):
    """After ^C or SIGTERM: cancels the array, if it was submitted, and exits saying what is left."""
    if job is None:
        sys.exit("interrupted (%s) before any job was submitted" % why)
    say("interrupted (%s): cancelling Slurm job %s ..." % (why, job))
    try:
        left = "none of its tasks is left" if slurm.cancel(job) else (
            "but squeue still lists some of its tasks: check with squeue --jobs=%s" % job)
    except slurm.SlurmError as error:
        sys.exit("interrupted, and Slurm job %s could not be cancelled: %s\nCancel it with: "
                 "scancel %s" % (job, error, job))
    sys.exit("interrupted: Slurm job %s was cancelled, %s. The gradebook was not written; "
             "the same command grades the students who have no results yet." % (job, left))


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


def jobs_text(record):
    """The arrays that graded the class, for the summary: "Slurm jobs 12, 15"."""
    return "Slurm job%s %s" % ("s" if len(record["jobs"]) > 1 else "", ", ".join(record["jobs"]) or "(none)")

