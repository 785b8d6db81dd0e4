#!/usr/bin/env python3
"""Class grading on Slurm, against a real Slurm: a cluster of one node on localhost.

    python3 grading/tests/test_slurm.py --build-dir build [-v]

The cluster (grading/tests/slurm_cluster.py). As root, Debian's slurm-wlm and munge are installed
when missing (apt-get). Then munged (with a key made for this run), slurmctld and slurmd start
with everything they write under <build>/test_slurm/cluster (slurm.conf, the key, state, spool,
logs), on loopback ports of their own, and are stopped at the end by their pids, whatever
happened. Where that cannot be done (not
root, no apt, a daemon that does not start) the test is skipped, exit status 77, and says why.

The node has no GPU, so the runner asks for none (--gres none) and every student who is graded
says "no GPU" (grade.py's exit 77). What is tested is the plumbing, on lab 02 alone:
  1. A class of two, through --runner slurm: one array of two tasks; the student whose lab 02
     does not compile is graded (0, "does not compile") like the whole one; a row each.
  2. A third student, whose lab 02 #includes a named pipe that no one writes, so that its build
     waits forever: the same command again submits one task, for that student only, and Slurm
     stops it at its 1-minute time limit: a row "grading failed", TIMEOUT, and the task's log.
     Nothing it started is left running.
  3. The third student is fixed: the same command again grades that student only, with the
     class's seed; the gradebook has the three rows. Each task built with the CPUs it asked for.
  3'. REGRADE=1 asking for more CPUs per task than the node has: sbatch --test-only refuses it
     before anything is cleared, and the gradebook and every student's results stay.
  4. make check's RUNNER=slurm: grading/grade.py through srun gives the same exit status and the
     same results as run here, and here it names that command.
  5. A run of two stalling students, one at a time (--concurrency 1), interrupted by SIGINT, and
     again by SIGTERM: the array is cancelled, nothing of it is left in the queue or running.
At the end the queue is empty.
"""
import csv
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
import unittest

GRADING_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "driver")
SOURCE_DIR = os.path.dirname(os.path.dirname(GRADING_DIR))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The whole and the broken student bear unit.grade_class's names: a student's build folder is
# named after them, so under make test, which runs that test first, theirs are already built.
from test_grade_class import WHOLE, BROKEN, build_dir_argument  # noqa: E402
from slurm_cluster import CannotStart, Cluster, install_slurm, still_running  # noqa: E402

EXIT_SKIP = 77
LAB = "02_naive_transpose"
STALL = "slurmtest-stall"
CANCELLED = ("slurmtest-cancel-a", "slurmtest-cancel-b")
BUILD_DIR = ROOT = CLUSTER = None   # set in main


# ----------------------------------------------------------------------------------------------
# The class

def copy_solutions(root, student):
    shutil.copytree(os.path.join(SOURCE_DIR, "solutions"), os.path.join(root, student))


def make_stall(root, student):
    """A student whose lab 02 includes a named pipe that no one writes: its build waits forever."""
    copy_solutions(root, student)
    lab = os.path.join(root, student, LAB)
    os.mkfifo(os.path.join(lab, "stall.h"))
    with open(os.path.join(lab, "transpose.cu")) as f:
        source = f.read()
    with open(os.path.join(lab, "transpose.cu"), "w") as f:
        f.write('#include "stall.h"  // a named pipe: the compiler waits for it forever\n' + source)


def grade_class(cluster, submissions, out, *extra):
    """grading/grade_class.py --runner slurm on the test's cluster: (exit status, output)."""
    r = cluster.run(grade_class_command(submissions, out, *extra), timeout=400)
    print(r.stdout, flush=True)
    return r.returncode, r.stdout


def grade_class_command(submissions, out, *extra):
    return [sys.executable, os.path.join(GRADING_DIR, "grade_class.py"), "--build-dir", BUILD_DIR,
            "--submissions", submissions, "--out", out, "--lab", "02", "--runner", "slurm",
            "--gres", "none", "--cpus", "1", "--poll", "1", *extra]


def gradebook(out):
    with open(os.path.join(out, "gradebook.csv"), newline="") as f:
        rows = list(csv.reader(f))
    return [row[0] for row in rows[1:]], {row[0]: dict(zip(rows[0], row)) for row in rows[1:]}


def results(out, student):
    with open(os.path.join(out, student, "results.json")) as f:
        return json.load(f)


class GradingAClassOnSlurm(unittest.TestCase):
    """Steps 1 to 3: one class, graded, resumed after a timeout, resumed after a fix."""

    @classmethod
    def setUpClass(cls):
        cls.submissions = os.path.join(ROOT, "class")
        cls.out = os.path.join(ROOT, "out")
        shutil.rmtree(cls.submissions, ignore_errors=True)
        shutil.rmtree(cls.out, ignore_errors=True)
        copy_solutions(cls.submissions, WHOLE)
        copy_solutions(cls.submissions, BROKEN)
        with open(os.path.join(cls.submissions, BROKEN, LAB, "transpose.cu"), "a") as f:
            f.write("\nthis is not C++\n")

        cls.first = grade_class(CLUSTER, cls.submissions, cls.out, "--time", "5")
        cls.first_book = gradebook(cls.out)
        cls.first_mtimes = {s: os.path.getmtime(os.path.join(cls.out, s, "results.json"))
                            for s in (WHOLE, BROKEN)}

        make_stall(cls.submissions, STALL)
        started = time.monotonic()
        cls.second = grade_class(CLUSTER, cls.submissions, cls.out, "--time", "1")
        cls.second_seconds = time.monotonic() - started
        cls.second_book = gradebook(cls.out)
        cls.stall_left = still_running(os.path.join(cls.submissions, STALL))
        cls.queue_after_second = CLUSTER.queue()

        shutil.rmtree(os.path.join(cls.submissions, STALL))
        copy_solutions(cls.submissions, STALL)
        cls.third = grade_class(CLUSTER, cls.submissions, cls.out, "--time", "5")
        cls.third_book = gradebook(cls.out)
        with open(os.path.join(cls.out, "slurm", "class.json")) as f:
            cls.record = json.load(f)

        # More CPUs per task than the node has: refused before REGRADE=1 clears anything.
        cls.too_big = grade_class(CLUSTER, cls.submissions, cls.out, "--time", "5", "--regrade",
                                  "--cpus", str((os.cpu_count() or 1) + 1))
        cls.too_big_book = gradebook(cls.out)
        cls.too_big_queue = CLUSTER.queue()

    def test_1_one_array_of_a_task_per_student(self):
        status, output = self.first
        self.assertEqual(status, EXIT_SKIP, "every student graded, no GPU: 77")
        self.assertRegex(output, r"Slurm job \d+: 2 tasks \(--time=5 --cpus-per-task=1\), one per student")
        self.assertEqual(output.count("one per student;"), 1, "one sbatch")
        # The cluster's own tracking of leftover processes is named (this test's: linuxproc).
        self.assertIn("Slurm: proctrack/linuxproc", output)
        self.assertRegex(output, r"Slurm job \d+: \d done, \d running, \d pending, \d failed")
        self.assertRegex(output, r"Slurm job \d+: 2 done, 0 running, 0 pending, 0 failed")
        with open(os.path.join(self.out, "slurm", "tasks-1.json")) as f:
            self.assertEqual([s["name"] for s in json.load(f)["students"]], [BROKEN, WHOLE])

    def test_1_the_gradebook_and_each_students_folder_are_the_local_runners(self):
        names, rows = self.first_book
        self.assertEqual(names, [BROKEN, WHOLE])
        self.assertEqual((rows[WHOLE]["status"], rows[WHOLE]["total"], rows[WHOLE]["notes"]),
                         ("no GPU", "0", ""))
        self.assertEqual((rows[BROKEN]["status"], rows[BROKEN]["total"]), ("no GPU", "0"))
        self.assertIn("does not compile: " + LAB, rows[BROKEN]["notes"])
        outputs = [t["output"] for t in results(self.out, BROKEN)["tests"]]
        self.assertTrue(outputs and all(o.startswith("does not compile") for o in outputs))
        for student in (WHOLE, BROKEN):
            for name in ("build.log", "grade.log", "results.json", "junit.xml", LAB + ".log"):
                self.assertTrue(os.path.isfile(os.path.join(self.out, student, name)), (student, name))
        with open(os.path.join(self.out, "summary.md")) as f:
            self.assertIn("- %s does not compile for 1: %s" % (LAB, BROKEN), f.read())

    def test_1_each_task_builds_with_the_cpus_it_asked_for(self):
        job = re.search(r"Slurm job (\d+): 2 tasks", self.first[1]).group(1)
        for index in (0, 1):
            with open(os.path.join(self.out, "slurm", "%s_%d.log" % (job, index))) as f:
                self.assertIn("built with 1 CPU (", f.read())

    def test_2_resume_submits_only_the_new_student_and_the_time_limit_fails_it(self):
        status, output = self.second
        self.assertEqual(status, 1, "a student's grading failed")
        self.assertIn("2 students already graded in %s (REGRADE=1 grades them again): %s, %s"
                      % (self.out, BROKEN, WHOLE), output)
        self.assertRegex(output, r"Slurm job \d+: 1 task \(--time=1 --cpus-per-task=1\), one per student")
        for student, mtime in self.first_mtimes.items():
            self.assertEqual(os.path.getmtime(os.path.join(self.out, student, "results.json")), mtime,
                             "%s was not graded again" % student)
        names, rows = self.second_book
        self.assertEqual(names, sorted([BROKEN, STALL, WHOLE]), "a row per student")
        self.assertEqual(rows[STALL]["status"], "grading failed")
        note = rows[STALL]["notes"]
        self.assertRegex(note, r"^Slurm TIMEOUT: task \d+_0 ran past its time limit \(SLURM_TIME=1\); log: ")
        log = note.rsplit("log: ", 1)[1]
        with open(log) as f:
            self.assertIn("DUE TO TIME LIMIT", f.read())
        self.assertLess(self.second_seconds, 180)

    def test_2_nothing_of_the_stopped_task_is_left(self):
        self.assertEqual(self.stall_left, [], "processes of the timed-out student's build")
        self.assertEqual(self.queue_after_second, "")

    def test_3_resume_grades_the_missing_student_with_the_class_seed(self):
        status, output = self.third
        self.assertEqual(status, EXIT_SKIP)
        self.assertIn("2 students already graded", output)
        self.assertRegex(output, r"Slurm job \d+: 1 task \(--time=5 --cpus-per-task=1\), one per student")
        names, rows = self.third_book
        self.assertEqual(names, sorted([BROKEN, STALL, WHOLE]))
        self.assertEqual([rows[n]["status"] for n in names], ["no GPU"] * 3)
        seeds = {results(self.out, s)["output"].split()[1] for s in names}
        self.assertEqual(seeds, {str(self.record["seed"])}, "one seed for the class")
        self.assertEqual(len(self.record["jobs"]), 3, "three runs, an array each")

    def test_4_a_task_no_node_can_hold_is_refused_and_nothing_is_lost(self):
        status, output = self.too_big
        self.assertNotEqual(status, 0)
        self.assertIn("sbatch --test-only says", output)
        self.assertIn("lower SLURM_CPUS", output)
        self.assertEqual(self.too_big_book, self.third_book, "the earlier gradebook is kept")
        for student in self.third_book[0]:
            self.assertTrue(os.path.isfile(os.path.join(self.out, student, "results.json")), student)
        self.assertEqual(self.too_big_queue, "")


class CheckingALabThroughSrun(unittest.TestCase):
    """Step 4: make check LAB=02 RUNNER=slurm, and the hint that names it."""

    def grade(self, out, *extra):
        cmd = [sys.executable, os.path.join(GRADING_DIR, "grade.py"), "--build-dir", BUILD_DIR,
               "--lab", "02", "--verbose", "--seed", "7", "--out", out, *extra]
        r = CLUSTER.run(cmd, timeout=300)
        print(r.stdout, flush=True)
        with open(os.path.join(out, "results.json")) as f:
            tests = [(t["name"], t["status"], t["score"]) for t in json.load(f)["tests"]]
        return r.returncode, r.stdout, tests

    def test_srun_gives_the_same_status_and_results_and_the_local_run_names_it(self):
        here = self.grade(os.path.join(ROOT, "check-here"))
        there = self.grade(os.path.join(ROOT, "check-srun"), "--runner", "slurm", "--gres", "none",
                           "--cpus", "1")
        self.assertEqual(here[0], EXIT_SKIP, "no GPU: CUDA_VISIBLE_DEVICES is empty")
        self.assertEqual(there[0], here[0])
        self.assertEqual(there[2], here[2])
        self.assertIn("$ srun --job-name=workbook-grade", there[1])
        hint = "make check LAB=02 SEED=7 RUNNER=slurm"
        self.assertNotIn(hint, there[1], "no hint inside a Slurm job")
        if not nvidia_smi_lists_a_gpu():
            self.assertIn(hint, here[1])


class InterruptingARun(unittest.TestCase):
    """Step 5: SIGINT (^C) or SIGTERM while the array runs cancels it and leaves nothing behind."""

    def test_sigint_and_sigterm_cancel_the_array(self):
        submissions = os.path.join(ROOT, "class-cancelled")
        shutil.rmtree(submissions, ignore_errors=True)
        for student in CANCELLED:
            make_stall(submissions, student)
        for sig in (signal.SIGINT, signal.SIGTERM):
            with self.subTest(signal=sig.name):
                out = os.path.join(ROOT, "out-cancelled")
                shutil.rmtree(out, ignore_errors=True)
                proc = subprocess.Popen(
                    grade_class_command(submissions, out, "--time", "5", "--concurrency", "1"),
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=CLUSTER.env)
                output = read_until(proc, "1 running, 1 pending", 120)
                self.assertIn("1 running, 1 pending", output,
                              "at most --concurrency tasks at once; what it printed in 120 s:\n" + output)
                proc.send_signal(sig)
                rest, _ = proc.communicate(timeout=180)
                output += rest
                print(output, flush=True)
                self.assertNotEqual(proc.returncode, 0, "exit status after %s" % sig.name)
                self.assertIn("interrupted (%s): cancelling Slurm job" % sig.name, output)
                self.assertRegex(output, r"interrupted: Slurm job \d+ was cancelled, none of its tasks is left")
                self.assertEqual(CLUSTER.queue(), "", "Slurm's queue after the cancel")
                self.assertEqual(still_running(submissions), [],
                                 "processes of the cancelled students, 10 s after the cancel")
                self.assertFalse(os.path.exists(os.path.join(out, "gradebook.csv")),
                                 "a gradebook written by an interrupted run")


def nvidia_smi_lists_a_gpu():
    sys.path.insert(0, GRADING_DIR)
    import grade
    return bool(grade.nvidia_smi_gpus())


def read_until(proc, text, seconds):
    """What proc printed until a line holding `text`, or until `seconds` passed."""
    output, deadline = "", time.monotonic() + seconds
    while text not in output and time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 1.0)
        if ready:
            line = proc.stdout.readline()
            if not line:
                break
            output += line
    return output


class TheEnd(unittest.TestCase):
    def test_z_the_queue_is_empty(self):
        self.assertEqual(CLUSTER.queue(), "")


def main():
    global BUILD_DIR, ROOT, CLUSTER
    BUILD_DIR, rest = build_dir_argument()
    ROOT = os.path.join(BUILD_DIR, "test_slurm")
    started = time.monotonic()
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit("stopped by SIGTERM"))
    CLUSTER = Cluster(os.path.join(ROOT, "cluster"))
    try:
        try:
            if os.geteuid() != 0:
                raise CannotStart("not root: slurmd runs jobs as their users, so it needs root")
            install_slurm()
            CLUSTER.start()
        except (CannotStart, OSError) as e:
            print("SKIPPED: no Slurm cluster can be started here: %s" % e, flush=True)
            return EXIT_SKIP
        print("a Slurm cluster of one node is up (%s, %.0f s)" % (CLUSTER.conf, time.monotonic() - started),
              flush=True)
        loader = unittest.TestLoader()
        suite = unittest.TestSuite(loader.loadTestsFromTestCase(case) for case in (
            GradingAClassOnSlurm, CheckingALabThroughSrun, InterruptingARun, TheEnd))
        verbosity = 2 if "-v" in rest else 1
        ok = unittest.TextTestRunner(verbosity=verbosity).run(suite).wasSuccessful()
        return 0 if ok else 1
    finally:
        CLUSTER.stop()
        print("the cluster is stopped; %.0f s in all" % (time.monotonic() - started), flush=True)


if __name__ == "__main__":
    sys.exit(main())
