#!/usr/bin/env python3
"""The grader's self-test, its second half: what grading/grade.py says and writes, with a checker
that has no GPU code (test_grader.py, whose fixture this file shares, drives the checkers' runs).

    python3 grading/tests/test_grader_reports.py --fake build/bin/fake_checker [-v]

Without a GPU: one verdict and no score. results.json (Gradescope's format) and junit.xml. The
first screen of make grade: a reason said once per lab, a lab not started in one sentence, and
the next step at the end.
"""
import argparse
import contextlib
import io
import json
import os
import unittest
import xml.etree.ElementTree as ET

import test_grader  # the fixture, from this folder: the fake checker's tests, GraderTest
from test_grader import FAIL_ALWAYS, NAMES, NO_DEVICE, GraderTest
import grade  # noqa: E402  (grading/driver, which test_grader puts on the path)
import support  # noqa: E402  (fake_checker_command_line)


class NoDevice(GraderTest):
    def test_run_tests_returns_the_no_device_message_and_passes_nothing(self):
        no_gpu = self.script('results.write(\'{"event":"no_device","message":"%s"}\\n\')\n'
                             "sys.exit(%d)\n" % (NO_DEVICE, grade.EXIT_NO_DEVICE))
        problem, results = self.grade_fake(binary=no_gpu)
        self.assertEqual(problem, NO_DEVICE)
        self.assertFalse([t for t in results.values() if t.status == "passed"])

    def test_grade_lab_without_a_device_skips_every_test(self):
        lab = grade.Lab("01_fake", "fake.cu")
        bin_dir = self.fake_build([lab])
        args = argparse.Namespace(no_build=True, timeout=5.0, verbose=False, test=None, solutions=False,
                                  variant=None)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            grade.grade_lab(lab, grade.Run(os.path.dirname(bin_dir), os.path.dirname(bin_dir), args,
                                           {"ok": False, "message": NO_DEVICE}, {}, self.tmp))
        self.assertEqual(printed.getvalue(), "",
                         "a lab with no problem of its own says nothing: the reason is said once, above every lab")
        self.assertEqual(lab.problem, NO_DEVICE)
        self.assertEqual([t.name for t in lab.tests], NAMES)
        for test in lab.tests:
            self.assertEqual((test.status, test.score), ("skipped", 0), test.name)
        self.assertEqual(lab.score, 0)


    def test_without_a_device_the_run_ends_with_one_verdict_and_no_score(self):
        # A fresh clone on a machine with no GPU: "Score: 0/16" beside "nothing is graded" read as
        # sixteen points lost. The run ends with the verdict instead, names a lab that did not
        # compile, says where to find a GPU, and still writes the reports (every test skipped).
        skipped, broken = grade.Lab("01_fake", "fake.cu"), grade.Lab("02_broken", "broken.cu")
        skipped.tests = [grade.Test("a", 3), grade.Test("b", 1)]
        grade.skip_without_device(skipped, {"ok": False, "message": NO_DEVICE})
        broken.tests = [grade.Test("c", 2)]
        grade.fail_every_test(broken, "does not compile, so every test scores 0:\nbroken.cu:1: error: oops")
        args = argparse.Namespace(verbose=True, lab="01", test=None, solutions=False, variant=None, seed=None,
                                  submission=None)
        device = {"ok": False, "message": NO_DEVICE}
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            grade.report([skipped, broken], args, device, 1, self.tmp, 1.0)
        printed = out.getvalue()
        self.assertNotIn("Score:", printed)
        self.assertNotIn("0/3", printed, "no lab's score either")
        self.assertIn("No usable CUDA GPU here: nothing was graded, so there is no score.", printed)
        self.assertIn(NO_DEVICE, printed)
        self.assertIn("lab 02 (broken) does not compile", printed)
        self.assertIn("docs/colab.ipynb", printed)
        self.assertIn("make check LAB=01 RUNNER=slurm", printed)
        self.assertEqual(grade.exit_status([skipped, broken], device, args), grade.EXIT_NO_DEVICE)
        with open(os.path.join(self.tmp, "results.json")) as f:
            self.assertEqual(json.load(f)["score"], 0)

    def test_with_a_device_the_run_ends_with_the_score(self):
        lab = grade.Lab("01_fake", "fake.cu")
        lab.tests = [grade.Test("a", 3)]
        lab.tests[0].status = "passed"
        args = argparse.Namespace(verbose=False, lab=None, test=None, solutions=True, variant=None, seed=None,
                                  submission=None)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            grade.report([lab], args, {"ok": True}, 1, self.tmp, 1.0)
        self.assertIn("Score: 3/3", out.getvalue())
        self.assertNotIn("No usable CUDA GPU", out.getvalue())


class Reports(GraderTest):
    def labs(self):
        """Three labs: one clean run, one skipped for want of a GPU, one that did not compile."""
        ran = grade.Lab("01_ran", "ran.cu")
        _, results = self.grade_fake()
        ran.tests = list(results.values())
        skipped = grade.Lab("02_skipped", "skipped.cu")
        skipped.tests = [grade.Test("a", 3), grade.Test("b", 0, bonus=1)]
        skipped.problem = NO_DEVICE
        for t in skipped.tests:
            t.status, t.output = "skipped", NO_DEVICE
        broken = grade.Lab("03_broken", "broken.cu")
        broken.problem = "does not compile, so every test scores 0:\nbroken.cu:1: error: oops"
        return [ran, skipped, broken]

    def test_results_json_is_in_gradescope_format(self):
        labs = self.labs()
        path = os.path.join(self.tmp, "results.json")
        grade.write_results_json(path, labs, 1234, {"ok": False, "message": NO_DEVICE}, 3.21)
        with open(path) as f:
            result = json.load(f)
        self.assertIsInstance(result["score"], (int, float))
        self.assertIsInstance(result["execution_time"], (int, float))
        self.assertIsInstance(result["output"], str)
        self.assertIn("1234", result["output"])
        tests = result["tests"]
        self.assertIsInstance(tests, list)
        for t in tests:
            self.assertIsInstance(t["name"], str)
            self.assertIsInstance(t["score"], (int, float))
            self.assertIsInstance(t["max_score"], (int, float))
            self.assertIn(t["status"], ("passed", "failed"))
            self.assertIsInstance(t["output"], str)
            self.assertIn(t["visibility"], ("visible", "hidden", "after_due_date", "after_published"))
        self.assertEqual(result["score"], sum(t["score"] for t in tests))
        self.assertEqual(result["score"], labs[0].score + labs[0].bonus)
        self.assertEqual(len(tests), len(NAMES) + 2 + 1)

        by_name = {t["name"]: t for t in tests}
        bonus = by_name["lab 01 ran: earns a bonus"]
        self.assertEqual((bonus["status"], bonus["score"], bonus["max_score"]), ("passed", 2, 2))
        for name in ("lab 02 skipped: a", "lab 02 skipped: b"):
            self.assertEqual((by_name[name]["status"], by_name[name]["score"]), ("failed", 0))
            self.assertTrue(by_name[name]["output"].startswith("not run (skipped)"))
        broken = [t for t in tests if t["name"].startswith("lab 03")]
        self.assertEqual(len(broken), 1, "a lab that did not compile still appears")
        self.assertEqual((broken[0]["status"], broken[0]["score"]), ("failed", 0))
        self.assertIn("does not compile", broken[0]["output"])

    def test_junit_counts_tests_failures_and_skips_per_suite(self):
        path = os.path.join(self.tmp, "junit.xml")
        grade.write_junit(path, self.labs())
        suites = {s.get("name"): s for s in ET.parse(path).getroot().iter("testsuite")}
        counts = {name: (s.get("tests"), s.get("failures"), s.get("skipped"))
                  for name, s in suites.items()}
        self.assertEqual(counts, {"01_ran": (str(len(NAMES)), str(len(FAIL_ALWAYS)), "0"),
                                  "02_skipped": ("2", "0", "2"),
                                  "03_broken": ("0", "0", "0")})
        for suite in suites.values():
            cases = suite.findall("testcase")
            self.assertEqual(len(cases), int(suite.get("tests")))
            self.assertEqual(len(suite.findall("testcase/failure")), int(suite.get("failures")))
            self.assertEqual(len(suite.findall("testcase/skipped")), int(suite.get("skipped")))
        case = suites["01_ran"].find("testcase[@name='fails with a message']")
        self.assertIn("c[7]: expected 1, got 2", case.find("failure").text)


class FirstScreen(GraderTest):
    """What `make grade` prints: a line per test, a reason once per lab, one sentence for a lab
    not started, and the next step at the end."""

    NO_KERNEL = ("launch_vector_add, n = %d: launched no kernel on the GPU.\nHint: the work must be "
                 "done by a __global__ kernel that launch_vector_add launches.")

    def printed(self, tests, verbose=False):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            printer = grade.TestPrinter(verbose)
            for t in tests:
                printer(t)
        return out.getvalue().splitlines()

    def failing(self, name, output):
        t = grade.Test(name, 1)
        t.status, t.output = "failed", output
        return t

    def test_a_repeated_reason_is_shown_once(self):
        tests = [self.failing("n = %d" % n, self.NO_KERNEL % n) for n in (1, 31, 33)]
        lines = self.printed(tests)
        self.assertEqual(len(lines), 3 + 2 + 1 + 1, "\n".join(lines))
        self.assertEqual(sum("launched no kernel" in line for line in lines), 1)
        self.assertEqual(sum("Hint:" in line for line in lines), 1)
        self.assertEqual(sum(line.strip() == "same reason as above" for line in lines), 2)

    def test_counts_do_not_make_another_reason_and_a_hint_is_given_once(self):
        wrong = "launch_x, n = %d:\nc: %d of %d elements are wrong\nHint: round the blocks up."
        lines = self.printed([self.failing("n = 1000", wrong % (1000, 232, 1000)),
                              self.failing("n = 1023", wrong % (1023, 255, 1023)),
                              self.failing("n = 5", "launch_x, n = 5: launched no kernel\nHint: round the blocks up.")])
        self.assertEqual([line.strip() for line in lines if not line.startswith("  n = ")],
                         ["launch_x, n = 1000: c: 232 of 1000 elements are wrong", "Hint: round the blocks up.",
                          "same reason as above", "launch_x, n = 5: launched no kernel"])

    def test_a_map_stays_out_of_make_grade_but_not_out_of_make_check(self):
        output = ("launch_transpose, 31 x 33: 1023 of 1023 elements are wrong\n  map:\n  XXXX\n  XXXX\n"
                  "Hint: read in[row][col], write out[col][row].")
        lines = self.printed([self.failing("31 x 33", output)])
        self.assertEqual([line.strip() for line in lines[1:]],
                         ["launch_transpose, 31 x 33: 1023 of 1023 elements are wrong",
                          "Hint: read in[row][col], write out[col][row]."])
        self.assertIn("XXXX", "\n".join(self.printed([self.failing("31 x 33", output)], verbose=True)))
        # The judge's own layout: the case on a line of its own, then what is wrong.
        judged = "launch_transpose, 31 x 33:\nout: 9 of 1023 elements are wrong\n  map:\n  X.X.\nHint: h"
        self.assertEqual([line.strip() for line in self.printed([self.failing("31 x 33", judged)])[1:]],
                         ["launch_transpose, 31 x 33: out: 9 of 1023 elements are wrong", "Hint: h"])

    def test_a_file_as_handed_out_is_not_started_and_names_its_first_todo(self):
        name = "01_vector_add/vector_add.cu"
        copy = os.path.join(self.tmp, "vector_add.cu")
        with open(os.path.join(grade.SOURCE_DIR, "labs", name), "rb") as f:
            skeleton = f.read()
        if not grade.handed_out(os.path.join(grade.SOURCE_DIR, "labs", name), name):
            self.skipTest("labs/%s is not the skeleton here (a student's work?)" % name)
        with open(copy, "wb") as f:
            f.write(skeleton)
        sentence = grade.not_started_sentence(copy, name, "labs/" + name)
        line, todo = grade.first_todo(copy)
        self.assertTrue(sentence.startswith("not started (the file is as handed out): begin at labs/%s:"
                                            % name), sentence)
        self.assertIn("labs/%s:%d, TODO 1:" % (name, line), sentence)
        with open(copy, "ab") as f:
            f.write(b"// one line of the student's\n")
        self.assertEqual(grade.not_started_sentence(copy, name, "labs/" + name), "")

    def test_the_list_of_skeletons_matches_them(self):
        """labs/skeletons.sha256 against the skeletons as committed (a student's edits are theirs)."""
        import hashlib
        import subprocess
        listed = grade.skeleton_hashes()
        with open(os.path.join(grade.SOURCE_DIR, "labs.json")) as f:
            parts = json.load(f)["labs"]
        self.assertEqual(sorted(listed), sorted("%s/%s" % (p["dir"], p["source"]) for p in parts),
                         "labs/skeletons.sha256 names every lab file of labs.json")
        for name, digest in listed.items():
            if grade.file_sha256(os.path.join(grade.SOURCE_DIR, "labs", name)) == digest:
                continue
            committed = subprocess.run(["git", "-C", grade.SOURCE_DIR, "show", "HEAD:labs/" + name],
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            if committed.returncode == 0:
                self.assertEqual(hashlib.sha256(committed.stdout).hexdigest(), digest,
                                 "labs/%s changed: update the list with (cd labs && sha256sum */*.cu > "
                                 "skeletons.sha256). (A student who committed work in labs/ can ignore "
                                 "this test.)" % name)

    def test_the_last_lines_name_the_first_lab_to_work_on(self):
        done, todo, further = grade.Lab("01_a", "a.cu"), grade.Lab("02_b", "b.cu"), grade.Lab("03_c", "c.cu")
        done.tests = [grade.Test("x", 2)]
        done.tests[0].status = "passed"
        todo.tests = [grade.Test("y", 1), self.failing("z", "wrong"), grade.Test("w", 1)]
        todo.tests[0].status = "passed"
        todo.tests[2].status = "failed"
        further.tests = [grade.Test("v", 0, bonus=3)]
        lines = grade.next_step([done, todo, further])
        self.assertIn('lab 02 (b) is missing 2 points, first at "z"', lines[0])
        self.assertIn("make check LAB=02", lines[1])
        todo.not_started = "not started: b.cu is as handed out; begin at b.cu:3, TODO 1: y"
        self.assertIn("lab 02 (b) is not started", grade.next_step([done, todo, further])[0])
        for t in todo.tests:
            t.status = "passed"
        self.assertIn("lab 03 (c) is missing 3 bonus points", grade.next_step([done, todo, further])[0])


def main():
    test_grader.FAKE, argv = support.fake_checker_command_line()
    unittest.main(argv=argv)


if __name__ == "__main__":
    main()
