#!/usr/bin/env python3
"""The grader's self-test: drives tests/grade.py with a checker that has no GPU code.

    python3 tests/grader/test_grader.py --fake build/bin/fake_checker [-v]

The fake checker (tests/grader/fake_checker.cpp) passes, fails, crashes, hangs, exits, throws,
loses its CUDA context or forges a result on request, so these tests need no GPU. A few
checkers that misbehave in other ways are small Python scripts written on the fly.
"""
import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import grade  # noqa: E402

FAKE = None  # the fake checker binary, set from --fake

# The fake checker's tests, in run order: (name, points, bonus).
FAKE_TESTS = [
    ("passes", 2, 0),
    ("fails with a message", 3, 0),
    ("notes a figure and passes", 1, 0),
    ("tries to forge a pass", 1, 0),
    ("crashes when FAKE_CRASH is set", 1, 0),
    ("hangs when FAKE_HANG is set", 1, 0),
    ("exits when FAKE_EXIT is set", 1, 0),
    ("throws when FAKE_THROW is set", 1, 0),
    ("loses the CUDA context when FAKE_STICKY is set", 1, 0),
    ("earns a bonus", 0, 2),
    ("forges a pass on the results channel", 1, 0),
    ("passes last", 1, 0),
]
NAMES = [name for name, _, _ in FAKE_TESTS]
FAIL_ALWAYS = {"fails with a message", "tries to forge a pass", "forges a pass on the results channel"}
NO_DEVICE = "no CUDA device found"


def processes_of(program):
    """The pids of the running processes whose program is `program`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink("/proc/%s/exe" % entry) == os.path.realpath(program):
                    found.append(int(entry))
            except OSError:
                pass
    return found


class GraderTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.addCleanup(grade.reap_checkers)  # checkers that reported every test, still exiting
        self.tmp = tmp.name

    def grade_fake(self, faults=(), timeout=30.0, binary=None, tests=None):
        """Runs a checker (the fake one by default) through run_tests with the named faults
        switched on; returns (problem, {name: Test}) and keeps the log and the reports."""
        tests = grade.list_tests(FAKE, []) if tests is None else tests
        self.reported = []
        with open(os.path.join(self.tmp, "run.log"), "w+") as log:
            problem = grade.run_tests(binary or FAKE, tests, [], {f: "1" for f in faults},
                                      timeout, log, False, self.reported.append)
            log.seek(0)
            self.log = log.read()
        return problem, {t.name: t for t in tests}

    def script(self, body):
        """A stand-in checker: a Python script whose `results` is the grader's results pipe."""
        path = os.path.join(self.tmp, "checker.py")
        with open(path, "w") as f:
            f.write("#!%s\nimport os, sys, time\n" % sys.executable)
            f.write("results = os.fdopen(int(os.environ['WORKBOOK_RESULTS_FD']), 'w', 1)\n")
            f.write(body)
        os.chmod(path, 0o755)
        return path

    def assert_only_fault_fails(self, results, faulty):
        """The faulty test fails, and every other test does what it does in a clean run."""
        self.assertEqual([t.name for t in self.reported], NAMES, "each test reported once, in order")
        for name, test in results.items():
            expected = "failed" if name == faulty or name in FAIL_ALWAYS else "passed"
            self.assertEqual(test.status, expected, "%s: %s" % (name, test.output))
        self.assertEqual(results["passes last"].status, "passed")


class ListingAndCleanRun(GraderTest):
    def test_list_tests_returns_every_test_with_points_and_bonus_in_run_order(self):
        tests = grade.list_tests(FAKE, [])
        self.assertEqual([(t.name, t.points, t.bonus) for t in tests], FAKE_TESTS)

    def test_clean_run_reports_each_test_as_it_ran(self):
        problem, results = self.grade_fake()
        self.assertEqual(problem, "")
        self.assert_only_fault_fails(results, None)
        self.assertIn("c[7]: expected 1, got 2", results["fails with a message"].output)
        self.assertIn("your kernel: 2710 GB/s", results["notes a figure and passes"].output)
        bonus = results["earns a bonus"]
        self.assertEqual((bonus.status, bonus.bonus, bonus.points, bonus.score), ("passed", 2, 0, 2))
        self.assertEqual(results["passes"].score, 2)
        self.assertEqual(results["fails with a message"].score, 0)

    def test_forged_pass_on_stdout_does_not_count(self):
        _, results = self.grade_fake()
        self.assertIn('"passed":true}', self.log, "the forged line was printed")
        self.assertIn("Score: 100/100", self.log)
        forged = results["tries to forge a pass"]
        self.assertEqual(forged.status, "failed")
        self.assertEqual(forged.score, 0)
        self.assertIn("the forged lines above must not count", forged.output)

    def test_unsigned_line_on_the_results_pipe_does_not_count(self):
        _, results = self.grade_fake()
        self.assertIn("without this run's signature", self.log, "the forged line reached the grader")
        forged = results["forges a pass on the results channel"]
        self.assertEqual((forged.status, forged.score), ("failed", 0))


class FaultsCostOnlyTheirOwnTest(GraderTest):
    def test_segfault_fails_only_the_crashing_test(self):
        _, results = self.grade_fake(["FAKE_CRASH"])
        self.assert_only_fault_fails(results, "crashes when FAKE_CRASH is set")
        self.assertIn("SIGSEGV", results["crashes when FAKE_CRASH is set"].output)

    def test_exit_mid_run_fails_only_the_exiting_test(self):
        _, results = self.grade_fake(["FAKE_EXIT"])
        self.assert_only_fault_fails(results, "exits when FAKE_EXIT is set")
        self.assertIn("exited with status 0 in the middle of this test", results["exits when FAKE_EXIT is set"].output)

    def test_exception_fails_only_the_throwing_test_with_its_text(self):
        _, results = self.grade_fake(["FAKE_THROW"])
        self.assert_only_fault_fails(results, "throws when FAKE_THROW is set")
        self.assertIn("student code threw", results["throws when FAKE_THROW is set"].output)
        self.assertEqual(self.log.count("$ "), 1, "an exception needs no restart")

    def test_lost_context_fails_its_test_and_the_rest_run_in_a_fresh_process(self):
        _, results = self.grade_fake(["FAKE_STICKY"])
        self.assert_only_fault_fails(results, "loses the CUDA context when FAKE_STICKY is set")
        self.assertIn("[checker exit status %d]" % grade.EXIT_CONTEXT_LOST, self.log)
        self.assertIn("--first=%d" % (NAMES.index("earns a bonus") + 1), self.log)

    def test_hang_is_stopped_at_the_timeout_and_the_rest_still_run(self):
        started = time.monotonic()
        _, results = self.grade_fake(["FAKE_HANG"], timeout=2.0)
        self.assertLess(time.monotonic() - started, 15.0)
        self.assert_only_fault_fails(results, "hangs when FAKE_HANG is set")
        self.assertIn("timed out", results["hangs when FAKE_HANG is set"].output)

    def test_an_interrupted_run_stops_its_checker(self):
        # ^C, SIGTERM or a closed output while a checker runs: it runs in a session of its own,
        # so the grader must stop it, or a kernel that never ends would run on.
        def interrupt(test):
            raise KeyboardInterrupt
        with open(os.path.join(self.tmp, "run.log"), "w+") as log:
            with self.assertRaises(KeyboardInterrupt):
                grade.run_tests(FAKE, grade.list_tests(FAKE, []), [], {"FAKE_HANG": "1"}, 30.0, log, False,
                                interrupt)
        self.assertEqual(processes_of(FAKE), [])

    def test_hang_before_the_first_test_is_stopped_too(self):
        hangs = self.script("time.sleep(120)\n")
        started = time.monotonic()
        _, results = self.grade_fake(timeout=1.0, binary=hangs, tests=[grade.Test("passes", 2)])
        self.assertLess(time.monotonic() - started, 15.0)
        self.assertEqual(results["passes"].status, "failed")
        self.assertIn("timed out", results["passes"].output)


class UnreportedTestsNeverPass(GraderTest):
    def test_a_test_whose_process_dies_before_reporting_counts_as_failed(self):
        dies = self.script('results.write(\'{"event":"start","name":"passes"}\\n\')\n'
                           "os.kill(os.getpid(), 9)\n")
        _, results = self.grade_fake(binary=dies, tests=[grade.Test("passes", 2)])
        self.assertEqual((results["passes"].status, results["passes"].score), ("failed", 0))
        self.assertIn("SIGKILL", results["passes"].output)

    def test_a_checker_that_exits_without_running_anything_passes_nothing(self):
        quits = self.script("sys.exit(0)\n")
        tests = [grade.Test(name, points, bonus) for name, points, bonus in FAKE_TESTS]
        _, results = self.grade_fake(binary=quits, tests=tests)
        self.assertEqual(len(self.reported), len(tests))
        for test in tests:
            self.assertEqual((test.status, test.score), ("failed", 0), test.name)
            self.assertIn("exited before this test started", test.output)


class NoDevice(GraderTest):
    def test_run_tests_returns_the_no_device_message_and_passes_nothing(self):
        no_gpu = self.script('results.write(\'{"event":"no_device","message":"%s"}\\n\')\n'
                             "sys.exit(%d)\n" % (NO_DEVICE, grade.EXIT_NO_DEVICE))
        problem, results = self.grade_fake(binary=no_gpu)
        self.assertEqual(problem, NO_DEVICE)
        self.assertFalse([t for t in results.values() if t.status == "passed"])

    def test_grade_lab_without_a_device_skips_every_test(self):
        bin_dir = os.path.join(self.tmp, "build", "bin")
        os.makedirs(bin_dir)
        for name in ("check_01_fake_solution", "check_01_fake"):
            os.symlink(FAKE, os.path.join(bin_dir, name))
        lab = grade.Lab("01_fake", "fake.cu")
        args = argparse.Namespace(no_build=True, timeout=5.0, verbose=False)
        with contextlib.redirect_stdout(io.StringIO()):
            grade.grade_lab(lab, os.path.dirname(bin_dir), os.path.dirname(bin_dir), "check_01_fake",
                            [], {}, {"ok": False, "message": NO_DEVICE}, args, self.tmp)
        self.assertEqual(lab.problem, NO_DEVICE)
        self.assertEqual([t.name for t in lab.tests], NAMES)
        for test in lab.tests:
            self.assertEqual((test.status, test.score), ("skipped", 0), test.name)
        self.assertEqual(lab.score, 0)


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


def main():
    global FAKE
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--fake", required=True, help="the fake_checker binary")
    options, rest = parser.parse_known_args()
    FAKE = os.path.abspath(options.fake)
    if not os.access(FAKE, os.X_OK):
        sys.exit("no fake checker at %s: build it first (make all)" % FAKE)
    for name in [n for n in os.environ if n.startswith("FAKE_")]:
        del os.environ[name]  # the faults are switched on per test, never inherited
    unittest.main(argv=[sys.argv[0]] + rest)


if __name__ == "__main__":
    main()
