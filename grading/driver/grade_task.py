#!/usr/bin/env python3
"""One task of a class's Slurm job array (`make grade-class RUNNER=slurm`): grades one student.

    SLURM_ARRAY_TASK_ID=i python3 grading/grade_task.py <out>/slurm/tasks-<job>.json

grading/grade_class.py's Slurm runner (grading/class_slurm.py) writes the tasks file (the class's
seed, labs and build folder, and the students of this array in task order) and submits the array.
Task i grades student i with the local runner's own functions (grading/class_student.py), on the
GPU that Slurm gave it (CUDA_VISIBLE_DEVICES):
  1. prebuild: configures and builds the student's checkers in <build>/submissions/<student>
     (<out>/<student>/build.log), so that a compile error or a runaway build costs only this
     task;
  2. grade_student: grading/grade.py --submission, the same command line as the local runner's
     (<out>/<student>/grade.log, results.json, junit.xml, a log per lab);
  3. writes <out>/<student>/slurm_task.json: grade.py's exit status, or why the student could
     not be graded, for class_slurm.py to read.
Slurm's --time is the student's time limit. When Slurm stops the task (SIGTERM), the task stops
every process it started, checkers in sessions of their own included, before it exits.
"""
import argparse
import json
import os
import signal
import socket
import sys
import time

GRADING_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, GRADING_DIR)
import grade          # noqa: E402
import class_slurm    # noqa: E402  (the task record: its name and how it is written)
import class_student  # noqa: E402  (prebuild and grade_student, the local runner's own)


def stop_and_exit(signum, frame):
    """On Slurm's SIGTERM (time limit, scancel): stop every process tree this task started."""
    for proc in list(class_student.running):
        class_student.kill_tree(proc.pid)
    print("grade_task.py: stopped by %s" % signal.Signals(signum).name, flush=True)
    os._exit(128 + signum)


def cpus():
    """The CPUs to build with: those Slurm gave the task (--cpus-per-task), and no more than it
    may run on. A cluster that binds no task (task/none) would let it use the whole node, other
    students' tasks included."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 1
    given = os.environ.get("SLURM_CPUS_PER_TASK", "")
    return max(1, min(usable, int(given))) if given.isdigit() else usable


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("tasks", help="the tasks file grade_class.py wrote for this array")
    p.add_argument("--index", type=int, help="the task's index (default: $SLURM_ARRAY_TASK_ID)")
    args = p.parse_args(argv)
    index = args.index if args.index is not None else int(os.environ["SLURM_ARRAY_TASK_ID"])
    with open(args.tasks) as f:
        tasks = json.load(f)
    entry = tasks["students"][index]
    student = class_student.Student(entry["name"], entry["path"])
    out_dir, build_dir, seed = tasks["out"], tasks["build_dir"], tasks["seed"]
    labs = [grade.Lab(lab_id, "") for lab_id in tasks["labs"]]
    options = argparse.Namespace(build_dir=build_dir, lab=tasks["lab"], student_timeout=None)

    signal.signal(signal.SIGTERM, stop_and_exit)
    job = "%s_%s" % (os.environ.get("SLURM_ARRAY_JOB_ID", "?"), index)
    print("task %s: %s on %s, CUDA_VISIBLE_DEVICES=%s" % (
        job, student.name, socket.gethostname(), os.environ.get("CUDA_VISIBLE_DEVICES", "(unset)")),
        flush=True)
    os.makedirs(os.path.join(out_dir, student.key), exist_ok=True)
    started = time.monotonic()
    record = {"job": job, "node": socket.gethostname(), "exit_status": None, "note": ""}
    build_cpus = cpus()
    try:      # as the local runner's builder and grader do: a broken student is a row, not a crash
        record["note"] = class_student.prebuild(student, build_dir, labs, out_dir, build_cpus)
    except Exception as e:
        record["note"] = "could not build it: %r" % e
    print("built with %s (%.0f s)%s" % (class_student.plural(build_cpus, "CPU"), time.monotonic() - started,
                                         ": " + record["note"] if record["note"] else ""), flush=True)
    if not record["note"]:
        try:
            record["exit_status"] = class_student.grade_student(student, None, options, seed, out_dir)
        except Exception as e:
            record["note"] = "grade_task.py: %r" % e
    record["seconds"] = round(time.monotonic() - started, 1)
    print("graded: grading/grade.py exit status %s (%.0f s)" % (record["exit_status"], record["seconds"]),
          flush=True)
    class_slurm.write_json(os.path.join(out_dir, student.key, class_slurm.TASK_RECORD), record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
