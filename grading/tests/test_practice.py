#!/usr/bin/env python3
"""Practice mode in the grader, without a GPU (docs/grading.md, "Practice mode").

    python3 grading/tests/test_practice.py --fake build/bin/fake_checker [-v]

The fake checker (grading/tests/fake_checker.cpp) is built from the checkers' own main(), which
says on its signed channel that it runs in practice mode when WORKBOOK_FORCE_NO_IPC is set, as a
lab's checker does where CUDA IPC is missing. These tests check what the grader makes of it: the
practice line above the lab's results and on every result, on the screen and in every report,
and results.json and junit.xml, what a course grades from, written only with --allow-practice.
"""
import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "driver"))
import grade  # noqa: E402
import support  # noqa: E402  (fake_checker_command_line)
import reports  # noqa: E402

FAKE = None  # the fake checker binary, set from --fake
FORCED = "CUDA IPC is switched off by WORKBOOK_FORCE_NO_IPC=1"
LINE = "practice mode: not for grading (%s)" % FORCED


class Practice(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.addCleanup(grade.reap_checkers)
        self.tmp = tmp.name

    def graded(self, env_extra):
        """One lab played by the fake checker, through grade_labs as make grade runs it; returns
        the lab and what was printed."""
        lab = grade.Lab("01_fake", "fake.cu")
        bin_dir = os.path.join(self.tmp, "build", "bin")
        os.makedirs(bin_dir, exist_ok=True)
        for suffix in ("_solution", ""):
            path = os.path.join(bin_dir, "check_01_fake%s" % suffix)
            if not os.path.exists(path):
                os.symlink(FAKE, path)
        args = argparse.Namespace(no_build=True, timeout=5.0, verbose=False, test=None, solutions=True,
                                  variant=None)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            grade.grade_labs([lab], grade.Run(os.path.dirname(bin_dir), os.path.dirname(bin_dir), args,
                                              {"ok": True}, env_extra, self.tmp))
        return lab, printed.getvalue()

    def test_every_result_of_a_checker_in_practice_mode_says_so_with_the_reason(self):
        lab, printed = self.graded({"WORKBOOK_FORCE_NO_IPC": "1"})
        self.assertTrue(lab.tests)
        for test in lab.tests:
            self.assertEqual(test.practice, FORCED, test.name)
        self.assertEqual(lab.practice, FORCED)
        lines = printed.splitlines()
        # Under the lab's heading, the practice line with its reason, once, above its first result.
        self.assertEqual(lines[1:3], ["Lab 01: fake", "  " + LINE], printed)
        self.assertEqual(printed.count(LINE), 1, printed)
        results = [line for line in lines if line.rstrip().endswith(("s", "grading")) and " .." in line]
        self.assertEqual(len(results), len(lab.tests), printed)
        for line in results:
            self.assertTrue(line.endswith("practice mode: not for grading"), line)

    def test_a_checker_with_cuda_ipc_is_not_in_practice_mode(self):
        lab, printed = self.graded({})
        self.assertEqual(lab.practice, "")
        self.assertNotIn("practice mode", printed)

    def test_the_scores_say_practice_mode_above_every_lab(self):
        lab, _ = self.graded({"WORKBOOK_FORCE_NO_IPC": "1"})
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            grade.print_scores([lab])
        lines = printed.getvalue().splitlines()
        self.assertEqual(lines[1], LINE)
        self.assertTrue(lines[2].startswith("Lab 01") and lines[2].endswith("practice mode: not for grading"), lines)
        self.assertIn("Score: ", lines[3])
        self.assertIn("(practice mode: not for grading)", lines[3])

    def test_results_json_and_junit_are_not_written_in_practice_mode_and_old_ones_are_removed(self):
        lab, _ = self.graded({"WORKBOOK_FORCE_NO_IPC": "1"})
        out = os.path.join(self.tmp, "out")
        os.makedirs(out)
        for name in ("results.json", "junit.xml"):  # an earlier run's, which must not pass for this one's
            with open(os.path.join(out, name), "w") as f:
                f.write("{}")
        written = reports.write_reports(out, [lab], 7, {"ok": True, "device": "fake"}, 1.0)
        self.assertEqual(written, ["report.html"])
        self.assertFalse(os.path.exists(os.path.join(out, "results.json")))
        self.assertFalse(os.path.exists(os.path.join(out, "junit.xml")))
        with open(os.path.join(out, "report.html")) as f:
            html = f.read()
        self.assertIn(LINE, html)
        self.assertEqual(html.count(LINE), len(lab.tests) + 1, "the page's head and every test's row")
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            grade.say_practice([lab], written)
        self.assertIn(LINE + ": results.json and junit.xml were not written", printed.getvalue())
        self.assertIn("--allow-practice", printed.getvalue())

    def test_allow_practice_writes_them_with_every_result_marked(self):
        lab, _ = self.graded({"WORKBOOK_FORCE_NO_IPC": "1"})
        out = os.path.join(self.tmp, "out")
        os.makedirs(out)
        written = reports.write_reports(out, [lab], 7, {"ok": True, "device": "fake"}, 1.0, allow_practice=True)
        self.assertEqual(written, ["results.json", "junit.xml", "report.html"])
        with open(os.path.join(out, "results.json")) as f:
            results = json.load(f)
        self.assertEqual(results["extra_data"], {"practice_mode": FORCED})
        self.assertTrue(results["output"].startswith(LINE), results["output"])
        self.assertEqual(len(results["tests"]), len(lab.tests))
        for entry in results["tests"]:
            self.assertTrue(entry["output"].startswith(LINE + "\n"), entry)
        suite = ET.parse(os.path.join(out, "junit.xml")).getroot().find("testsuite")
        self.assertEqual(suite.find("properties/property").get("value"), LINE)
        for case in suite.findall("testcase"):
            self.assertEqual(case.find("properties/property").get("value"), LINE)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            grade.say_practice([lab], written)
        self.assertIn("were written anyway (--allow-practice)", printed.getvalue())

    def test_outside_practice_mode_every_report_is_written_unmarked(self):
        lab, _ = self.graded({})
        out = os.path.join(self.tmp, "out")
        os.makedirs(out)
        written = reports.write_reports(out, [lab], 7, {"ok": True, "device": "fake"}, 1.0)
        self.assertEqual(written, ["results.json", "junit.xml", "report.html"])
        with open(os.path.join(out, "results.json")) as f:
            results = json.load(f)
        self.assertNotIn("extra_data", results)
        self.assertNotIn("practice", json.dumps(results))

    def test_the_flag_is_an_option_of_make_grade(self):
        self.assertTrue(grade.parse_args(["--allow-practice"]).allow_practice)
        self.assertFalse(grade.parse_args([]).allow_practice)


def main():
    global FAKE
    FAKE, argv = support.fake_checker_command_line(cleared=("WORKBOOK_FORCE_NO_IPC", "WORKBOOK_PRACTICE_MODE"))
    unittest.main(argv=argv)


if __name__ == "__main__":
    main()
