#!/usr/bin/env python3
"""Class grading's self-test: grading/grade_class.py over a class of two tiny students.

    python3 grading/tests/test_grade_class.py --build-dir build [-v]

The class, under <build>/test_grade_class/: two copies of solutions/, one whole and one whose
lab 02 does not compile, graded on lab 02 alone so that the test stays short; beside them a
hidden folder, a plain file and a folder that is no copy of labs/, none of which is graded. With
a GPU the students are really graded (full marks, and 0); without one every GPU test is skipped
and the compile error is still reported. The class folder stays between runs, so a second run
builds little.
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

GRADING_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "driver")
SOURCE_DIR = os.path.dirname(os.path.dirname(GRADING_DIR))
sys.path.insert(0, GRADING_DIR)
import class_student  # noqa: E402
import grade  # noqa: E402

BUILD_DIR = None   # set from --build-dir
LAB = "02_naive_transpose"
WHOLE, BROKEN, NOT_A_COPY = "selftest-whole", "selftest-broken", "selftest-not-a-copy"
SEED = 1234


def make_class(root):
    """The class folder: two students, and three entries that are not students."""
    shutil.rmtree(root, ignore_errors=True)
    for student in (WHOLE, BROKEN):
        shutil.copytree(os.path.join(SOURCE_DIR, "solutions"), os.path.join(root, student))
    with open(os.path.join(root, BROKEN, LAB, "transpose.cu"), "a") as f:
        f.write("\nthis is not C++\n")
    os.makedirs(os.path.join(root, ".hidden", "01_vector_add"))
    os.makedirs(os.path.join(root, NOT_A_COPY, "labs"))
    with open(os.path.join(root, "notes.txt"), "w") as f:
        f.write("not a student\n")


class ClassOfTwo(unittest.TestCase):
    """One run of grade_class.py, checked from several sides."""

    @classmethod
    def setUpClass(cls):
        root = os.path.join(BUILD_DIR, "test_grade_class")
        cls.out = os.path.join(root, "out")
        make_class(os.path.join(root, "class"))
        started = time.monotonic()
        r = subprocess.run([sys.executable, os.path.join(GRADING_DIR, "grade_class.py"),
                            "--build-dir", BUILD_DIR, "--submissions", os.path.join(root, "class"),
                            "--out", cls.out, "--lab", "02", "--seed", str(SEED)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        cls.seconds = time.monotonic() - started
        cls.status, cls.output = r.returncode, r.stdout
        cls.gpu = r.returncode == 0
        with open(os.path.join(cls.out, "gradebook.csv"), newline="") as f:
            cls.rows = list(csv.reader(f))
        cls.by_student = {row[0]: dict(zip(cls.rows[0], row)) for row in cls.rows[1:]}

    def results(self, student):
        with open(os.path.join(self.out, student, "results.json")) as f:
            return json.load(f)

    def test_exit_status_is_0_with_a_gpu_and_77_without(self):
        self.assertIn(self.status, (0, class_student.EXIT_NO_DEVICE), self.output)

    def test_gradebook_has_a_column_per_lab_and_the_totals(self):
        header = self.rows[0]
        self.assertEqual(header[:2], ["student", LAB])
        self.assertEqual(header[-6:], ["total", "bonus", "possible", "possible bonus", "status", "notes"])
        self.assertEqual([row[0] for row in self.rows[1:]], [BROKEN, NOT_A_COPY, WHOLE],
                         "every visible folder, sorted; no hidden folder, no file")
        for row in self.rows[1:]:
            self.assertEqual(len(row), len(header))
        possible = int(self.by_student[WHOLE]["possible"])
        self.assertGreater(possible, 0)

    def test_the_whole_copy_scores_full_marks_with_a_gpu_and_is_skipped_without(self):
        row = self.by_student[WHOLE]
        if self.gpu:
            self.assertEqual((row["status"], row["total"], row[LAB]), ("ok", row["possible"], row["possible"]))
        else:
            self.assertEqual((row["status"], row["total"], row[LAB]), ("no GPU", "0", "0"))
            for test in self.results(WHOLE)["tests"]:
                self.assertTrue(test["output"].startswith("not run (skipped)"), test)
        self.assertEqual(row["notes"], "")

    def test_a_compile_error_scores_0_and_is_reported_everywhere(self):
        row = self.by_student[BROKEN]
        self.assertEqual(row["status"], "ok" if self.gpu else "no GPU")
        self.assertEqual((row["total"], row[LAB]), ("0", "0"))
        self.assertIn("does not compile: " + LAB, row["notes"])
        outputs = [t["output"] for t in self.results(BROKEN)["tests"]]
        self.assertTrue(outputs and all(o.startswith("does not compile") for o in outputs))
        self.assertIn("this is not C++", "\n".join(outputs))
        with open(os.path.join(self.out, BROKEN, "grade.log")) as f:
            self.assertIn("does not compile", f.read())

    def test_a_folder_that_is_no_copy_of_labs_is_reported_not_graded(self):
        row = self.by_student[NOT_A_COPY]
        self.assertEqual((row["status"], row["total"]), ("not graded", ""))
        self.assertIn("not a copy of labs/", row["notes"])
        self.assertFalse(os.path.exists(os.path.join(self.out, NOT_A_COPY)))
        self.assertIn("not graded: %s: not a copy" % NOT_A_COPY, self.output)

    def test_every_student_got_the_class_seed_and_reports_of_their_own(self):
        for student in (WHOLE, BROKEN):
            for name in ("grade.log", "build.log", "results.json", "junit.xml", LAB + ".log"):
                self.assertTrue(os.path.isfile(os.path.join(self.out, student, name)), (student, name))
            self.assertIn("seed %d" % SEED, self.results(student)["output"])

    def test_summary_names_the_failed_tests_and_the_lab_that_did_not_compile(self):
        with open(os.path.join(self.out, "summary.md")) as f:
            summary = f.read()
        self.assertIn(summary.strip().splitlines()[0], self.output, "the summary is printed too")
        self.assertIn("## Tests most students failed", summary)
        self.assertIn("| lab 02 naive transpose: ", summary)
        self.assertIn("- %s does not compile for 1: %s" % (LAB, BROKEN), summary)
        self.assertIn("| total |", summary)

    def test_progress_has_a_line_per_student_and_the_elapsed_time(self):
        for student in (WHOLE, BROKEN):
            self.assertRegex(self.output, r"start %s (on GPU \S+|\(no GPU\))\n" % student)
        self.assertRegex(self.output, r"\[1/2\] selftest-\S+ (on GPU \S+|\(no GPU\)): \d+/\d+")
        self.assertRegex(self.output, r"\[2/2\] selftest-\S+ (on GPU \S+|\(no GPU\)): \d+/\d+")
        self.assertRegex(self.output, r"Graded 2 students in (\d+ min )?\d+ s")


class BuildingTheCheckers(unittest.TestCase):
    """Every lab's checker is built in one build through check_all: CMake's Makefiles build the
    targets named on one command line one after another (50 s per student on the H100 machine)."""

    def targets(self, labs, suffix=""):
        cmd = grade.build_checkers_command(BUILD_DIR, labs, suffix, 3)
        self.assertEqual(cmd[cmd.index("--parallel") + 1], "3")
        self.assertIn(cmd[-1], ("-k", "0"), "it goes on past a lab that does not compile")
        return cmd[cmd.index("--target") + 1:cmd.index("--")]

    def test_every_lab_is_one_target_that_depends_on_each_checker(self):
        with open(os.path.join(BUILD_DIR, "workbook.json")) as f:
            labs = [grade.Lab(e["id"], e["source"]) for e in json.load(f)["labs"]]
        self.assertEqual(self.targets(labs), ["check_all"])
        self.assertEqual(self.targets(list(reversed(labs)), "_solution"), ["check_all_solution"])
        self.assertEqual(self.targets(labs[:2]), ["check_" + lab.id for lab in labs[:2]])
        self.assertEqual(self.targets(labs[:1], "__some_variant"), ["check_%s__some_variant" % labs[0].id])
        # check_all names each lab's checker (CMake writes a target's dependencies beside it).
        r = subprocess.run(["cmake", "--build", BUILD_DIR, "--target", "check_all", "--", "-n"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if "Ninja" not in grade.cmake_cache_value(BUILD_DIR, "CMAKE_GENERATOR"):
            self.assertEqual(r.returncode, 0, r.stdout)
            for lab in labs:
                self.assertIn("check_%s.dir" % lab.id, r.stdout, lab.id)


def alive(pid):
    """True while pid runs (a zombie waiting to be reaped is not running)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@unittest.skipUnless(os.path.isdir("/proc"), "finds the processes to stop through /proc")
class StoppingAStudent(unittest.TestCase):
    def test_a_timeout_stops_the_process_and_what_it_started_in_a_session_of_its_own(self):
        with tempfile.TemporaryDirectory() as tmp:
            pid_file = os.path.join(tmp, "pid")
            # Like grade.py starting a checker: a child in a new session that would outlive it.
            script = ("import subprocess, sys, time\n"
                      "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'],"
                      " start_new_session=True)\n"
                      "open(%r, 'w').write(str(p.pid))\n"
                      "time.sleep(120)\n" % pid_file)
            with open(os.path.join(tmp, "log"), "w") as log:
                started = time.monotonic()
                status = class_student.run_logged([sys.executable, "-c", script], log, timeout=3)
            self.assertIsNone(status)
            self.assertLess(time.monotonic() - started, 30)
            with open(pid_file) as f:
                child = int(f.read())
            for _ in range(50):     # the child is killed; its parent is gone, so init reaps it
                if not alive(child):
                    break
                time.sleep(0.1)
            else:
                self.fail("the checker-like child outlived the timeout")


def build_dir_argument():
    """The --build-dir of a class-grading test (a configured build folder), and the arguments
    left for unittest."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--build-dir", required=True, help="a configured and built build folder")
    options, rest = parser.parse_known_args()
    build_dir = os.path.abspath(options.build_dir)
    if not os.path.exists(os.path.join(build_dir, "workbook.json")):
        sys.exit("%s is not a configured build folder: run make all first" % build_dir)
    return build_dir, rest


def main():
    global BUILD_DIR
    BUILD_DIR, rest = build_dir_argument()
    unittest.main(argv=[sys.argv[0]] + rest)


if __name__ == "__main__":
    main()
