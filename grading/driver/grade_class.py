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
# This file is the command: its arguments, the class's students, the reference build, and the
# dispatch to a runner. The rest lies in modules of its own, which never import this one (run as
# a script it is __main__: an `import grade_class` would load a second copy, with state of its own):
#   class_student.py  one student: the Student record, building, grading and reading their scores
#   class_local.py    the local runner (steps 4 to 6), a pool over this host's GPUs
#   class_slurm.py    the Slurm runner (steps 4' to 6'), one job array; grade_task.py is its task
#   gradebook.py      the reports (step 7): gradebook.csv and summary.md
import argparse
import fcntl
import json
import math
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grade          # noqa: E402  (the trusted test lists, and the build folders' names)
import class_local    # noqa: E402
import class_slurm    # noqa: E402
import gradebook      # noqa: E402
from class_student import EXIT_NO_DEVICE, Student, plural, say  # noqa: E402

DEFAULT_STUDENT_TIMEOUT = 30 * 60.0


# ----------------------------------------------------------------------------------------------
# The command

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
    # Each runner settles the seed and readies out_dir: Slurm's resumes an earlier run with its
    # seed; the local one starts afresh.
    if args.runner == "slurm":
        runner = class_slurm.SlurmRun(args, out_dir, labs)
    else:
        runner = class_local.LocalRun(args, out_dir, to_grade)

    say("Grading %s in %s, labs %s" % (plural(len(to_grade), "student"), args.submissions,
                                               ", ".join(lab.id for lab in labs)))
    say("seed %d (replay with: %s)" % (runner.seed, gradebook.replay_command(args, runner.seed)))
    say(runner.describe())

    tests_by_name = reference_tests(args.build_dir, labs)
    where = runner.grade(to_grade, labs, tests_by_name)
    gradebook.write_outputs(out_dir, students, labs, runner.seed, args, where, time.monotonic() - started)
    lock.close()

    if any(s.status == "grading failed" for s in students):
        return 1
    if any(s.status == "no GPU" for s in students):
        return EXIT_NO_DEVICE
    return 0


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
        class_slurm.check_cluster(args)


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


# ----------------------------------------------------------------------------------------------
# Students, and the reference checkers they are graded against

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


def build_reference(build_dir, labs):
    """device_query and every selected lab's reference checker: what all graders share."""
    for cmd in (["cmake", "--build", build_dir, "--parallel", "--target", "device_query"],
                grade.build_checkers_command(build_dir, labs, "_solution")):
        r = grade.run_quiet(cmd)
        if r.returncode != 0:
            sys.exit("the reference checkers do not build:\n" + grade.compiler_errors(r.stdout))


def reference_tests(build_dir, labs):
    """Builds the trusted checkers once and reads each lab's tests with their points and bonus,
    keyed as a student's results.json names them."""
    t0 = time.monotonic()
    build_reference(build_dir, labs)
    say("        built the reference checkers (%.0f s)" % (time.monotonic() - t0))
    tests_by_name = {}
    for lab in labs:
        lab.tests = grade.list_tests(grade.reference_checker(lab, build_dir, False), [])
        for test in lab.tests:
            tests_by_name["lab %s %s: %s" % (lab.number, lab.title, test.name)] = (lab, test)
    return tests_by_name


if __name__ == "__main__":
    sys.exit(main())
