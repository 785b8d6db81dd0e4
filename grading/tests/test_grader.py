#!/usr/bin/env python3
"""The grader's self-test: drives grading/grade.py with a checker that has no GPU code.

    python3 grading/tests/test_grader.py --fake build/bin/fake_checker [-v]

The fake checker (grading/tests/fake_checker.cpp) passes, fails, crashes, hangs, exits, throws,
loses its CUDA context or forges a result on request, so these tests need no GPU. A few
checkers that misbehave in other ways are small Python scripts written on the fly.

This file tests the checkers' runs: listing, faults, timeouts, checkers started ahead, what they
leave behind. test_grader_reports.py (ctest unit.grader.reports) tests what the grader says and
writes with the same fixture, GraderTest below.
"""
import argparse
import contextlib
import io
import json
import os
import select
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "driver"))
import grade  # noqa: E402
import timeouts  # noqa: E402
import support  # noqa: E402  (fake_checker_command_line)

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

    def grade_fake(self, faults=(), timeout=30.0, binary=None, tests=None, held=None):
        """Runs a checker (the fake one by default) through run_tests with the named faults
        switched on; returns (problem, {name: Test}) and keeps the log and the reports."""
        tests = grade.list_tests(FAKE, []) if tests is None else tests
        self.reported = []
        with open(os.path.join(self.tmp, "run.log"), "w+") as log:
            problem = grade.run_tests(binary or FAKE, tests, [], {f: "1" for f in faults},
                                      timeout, log, False, self.reported.append, held)
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

    def fake_build(self, labs):
        """A build folder whose checkers of `labs` (the student's and the solution's) are all the
        fake checker, as symbolic links to it; returns its bin folder."""
        bin_dir = os.path.join(self.tmp, "build", "bin")
        os.makedirs(bin_dir)
        for lab in labs:
            for suffix in ("_solution", ""):
                os.symlink(FAKE, os.path.join(bin_dir, "check_%s%s" % (lab.id, suffix)))
        return bin_dir

    def checkers_started_ahead(self):
        """The binaries of the checkers grade.py starts ahead of their turn (HeldChecker) from now
        on, in order: a list that grows as they start."""
        started = []
        real = grade.HeldChecker
        grade.HeldChecker = lambda *a: started.append(a[0]) or real(*a)
        self.addCleanup(setattr, grade, "HeldChecker", real)
        return started

    def grade_fake_labs(self, labs, env_extra=None, test=None):
        """grade.grade_labs over `labs`, each played by the fake checker (fake_build), with
        grade.py's --test `test` if given; returns the build's bin folder."""
        bin_dir = self.fake_build(labs)
        args = argparse.Namespace(no_build=True, timeout=5.0, verbose=False, test=test, solutions=True,
                                  variant=None)
        with contextlib.redirect_stdout(io.StringIO()):
            grade.grade_labs(labs, grade.Run(os.path.dirname(bin_dir), os.path.dirname(bin_dir), args, {"ok": True},
                                             env_extra or {}, self.tmp))
        return bin_dir

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

    def test_a_filter_that_matches_no_test_lists_none(self):
        self.assertEqual(grade.list_tests(FAKE, ["--test-case=no such test"]), [])

    def test_grade_labs_goes_past_a_lab_that_holds_no_test_of_the_filter(self):
        # grade.py --lab 07 --test NAME, where NAME is a test of lab 07's convolution checker and
        # not of its coarsened one: the grader crashed listing the second ("did not list its tests").
        labs = [grade.Lab("01_fake", "fake.cu"), grade.Lab("02_fake", "fake.cu")]
        started = self.checkers_started_ahead()
        self.grade_fake_labs(labs, test="no such test")
        self.assertEqual([lab.tests for lab in labs], [[], []])
        self.assertEqual(started, [], "no checker is started ahead for a lab with nothing to run")
        self.assertEqual(processes_of(FAKE), [])

    def test_a_part_with_no_test_of_the_filter_is_named_once_and_not_scored(self):
        # Without a GPU no lab heading is printed: each part says which it is, once, and neither
        # the summary nor the reports list it as 0/0.
        labs = [grade.Lab("01_fake", "fake.cu"), grade.Lab("02_fake", "fake.cu")]
        bin_dir = self.fake_build(labs)
        args = argparse.Namespace(no_build=True, timeout=5.0, verbose=False, test="no such test", solutions=True,
                                  variant=None)
        device = {"ok": False, "message": "no CUDA device found"}
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            grade.grade_labs(labs, grade.Run(os.path.dirname(bin_dir), os.path.dirname(bin_dir), args, device, {},
                                             self.tmp))
            grade.report(labs, args, device, 1, self.tmp, 1.0)
        lines = out.getvalue().splitlines()
        for lab in labs:
            named = [line for line in lines if line.startswith("Lab %s %s" % (lab.number, lab.title))]
            self.assertEqual(named, ["Lab %s %s: no test matches --test 'no such test'" % (lab.number, lab.title)])
        self.assertNotIn("  no test of this part matches --test 'no such test'", lines)
        with open(os.path.join(self.tmp, "report.html")) as html:
            self.assertNotIn("Lab 01 fake", html.read())

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


class Timeouts(GraderTest):
    """A test's time limit: ten times the reference's own time, at least 20 s, and more for the
    tool runs a test may wait on."""

    def timeouts(self, reference_seconds, timeout=None):
        """test_timeouts for a lab whose reference took `reference_seconds` ({test: s}) on this
        GPU, kept as grade.py keeps them; --timeout `timeout` if given."""
        trusted = os.path.join(self.tmp, "check_01_fake")
        open(trusted, "w").close()
        device = {"device": "a fake GPU"}
        cache = timeouts.reference_cache(self.tmp)
        os.makedirs(os.path.dirname(cache), exist_ok=True)
        with open(cache, "w") as f:
            json.dump({"01_fake": {"stamp": grade.reference_stamp(trusted, device), "seconds": reference_seconds}}, f)
        args = argparse.Namespace(timeout=timeout, solutions=False, verbose=False)
        return grade.test_timeouts(grade.Lab("01_fake", "fake.cu"), trusted, self.tmp, {}, device, args, io.StringIO())

    def test_a_sanitizer_test_may_wait_out_a_stalled_tool_run(self):
        # Lab 05 step 4's racecheck run has stalled for up to 74 s on the solution, whose test
        # takes 0.5 s: the floor alone (20 s) would fail a correct kernel.
        limit = self.timeouts({"fake: compute-sanitizer racecheck": 0.5, "fake: correct at 100": 0.5,
                               "fake: performance against the reference": 1.0})
        self.assertGreaterEqual(limit(grade.Test("fake: compute-sanitizer racecheck", 0, 1)), 74 + 20)
        self.assertEqual(limit(grade.Test("fake: correct at 100", 1)), grade.TIMEOUT_FLOOR)
        self.assertEqual(limit(grade.Test("fake: performance against the reference", 3)),
                         grade.TIMEOUT_FLOOR + timeouts.PROFILE_ALLOWANCE)

    def test_the_allowances_apply_under_a_timeout_given_on_the_command_line(self):
        limit = self.timeouts({}, timeout=5.0)
        self.assertEqual(limit(grade.Test("fake: correct at 100", 1)), 5.0)
        self.assertEqual(limit(grade.Test("fake: compute-sanitizer memcheck", 0, 1)),
                         5.0 + timeouts.SANITIZER_ALLOWANCE)

    def test_the_reference_figures_a_solutions_run_wrote_are_handed_to_later_checkers(self):
        # A run of the reference solution writes its figures (figures_out_env); they are kept with
        # its times and handed, in the same format, to any checker of this GPU and build.
        trusted = os.path.join(self.tmp, "check_01_fake")
        open(trusted, "w").close()
        device = {"device": "a fake GPU"}
        out = timeouts.figures_out_env(self.tmp, "01_fake")["WORKBOOK_REFERENCE_FIGURES_OUT"]
        with open(out, "w") as f:
            f.write("0\t1.2875\tlab 01 fake: performance at 2^26\n1\t0.5\tlab 01 fake: performance at 2^26\n")
        lab = grade.Lab("01_fake", "fake.cu")
        lab.tests = [grade.Test("lab 01 fake: performance at 2^26", 3)]
        lab.tests[0].status, lab.tests[0].seconds = "passed", 2.0
        timeouts.remember_reference_times(self.tmp, lab, trusted, device)
        handed = timeouts.reference_env(self.tmp, "01_fake", trusted, device)
        self.assertEqual(handed["WORKBOOK_REFERENCE_FIGURES"].splitlines(),
                         ["0\t1.2875\tlab 01 fake: performance at 2^26", "1\t0.5\tlab 01 fake: performance at 2^26"])
        self.assertFalse(os.path.exists(timeouts.figures_out_env(self.tmp, "01_fake")["WORKBOOK_REFERENCE_FIGURES_OUT"]),
                         "a new run of the reference starts from no figures")
        # Another GPU, or another build of the reference checker: nothing is handed.
        self.assertEqual(timeouts.reference_env(self.tmp, "01_fake", trusted, {"device": "another GPU"}), {})
        os.utime(trusted, (1, 1))
        self.assertEqual(timeouts.reference_env(self.tmp, "01_fake", trusted, device), {})


class CheckersStartedAhead(GraderTest):
    """The next lab's checker starts while a lab runs, and holds before its tests until its turn."""

    def hold(self, faults=()):
        return grade.HeldChecker(FAKE, [], {f: "1" for f in faults}, os.path.join(self.tmp, "run.log"),
                                 grade.list_tests(FAKE, []))

    def test_a_held_checker_runs_no_test_until_its_turn_and_then_all_of_them(self):
        held = self.hold()
        time.sleep(1.0)
        self.assertIsNone(held.proc.poll(), "it waits for its turn")
        self.assertEqual(select.select([held.read_fd], [], [], 0)[0], [], "and has reported nothing")
        problem, results = self.grade_fake(held=held)
        self.assertEqual(problem, "")
        self.assert_only_fault_fails(results, None)
        self.assertEqual(self.log.count("$ "), 1, "the held checker ran the tests; no second one started")

    def test_a_held_checker_that_faults_is_started_again_after_the_fault(self):
        problem, results = self.grade_fake(["FAKE_CRASH"], held=self.hold(["FAKE_CRASH"]))
        self.assert_only_fault_fails(results, "crashes when FAKE_CRASH is set")
        self.assertIn("--first=%d" % (NAMES.index("crashes when FAKE_CRASH is set") + 2), self.log)

    def test_a_held_checker_whose_turn_never_comes_is_stopped(self):
        held = self.hold()
        held.discard()
        self.assertIsNotNone(held.proc.poll())
        self.assertEqual(processes_of(FAKE), [])

    def test_a_held_checker_ends_by_itself_when_the_grader_closes_its_pipe(self):
        held = self.hold()
        os.close(held.go_write)
        held.taken = True
        self.assertEqual(held.proc.wait(timeout=10), 0)
        with os.fdopen(held.read_fd, "rb") as events:
            self.assertEqual(events.read(), b"", "it ran no test")
        held.proc.stdout.close()

    def test_grade_labs_starts_each_lab_once_the_one_before_it_has_begun(self):
        labs = [grade.Lab("01_fake", "fake.cu"), grade.Lab("02_fake", "fake.cu")]
        started = self.checkers_started_ahead()
        bin_dir = self.grade_fake_labs(labs)
        self.assertEqual(started, [os.path.join(bin_dir, "check_02_fake_solution")],
                         "the second lab's checker was started ahead, the first one's was not")
        for lab in labs:
            self.assertEqual([t.status for t in lab.tests],
                             ["failed" if t.name in FAIL_ALWAYS else "passed" for t in lab.tests], lab.id)
        with open(os.path.join(self.tmp, "02_fake.log")) as f:
            self.assertEqual(f.read().count("$ "), 1)
        self.assertEqual(processes_of(FAKE), [])


class NothingOutlivesTheRun(GraderTest):
    """What a checker leaves behind ends with the grading run, not after it."""

    def test_a_process_left_behind_with_setsid_is_gone_when_grade_labs_returns(self):
        pid_file = os.path.join(self.tmp, "left.pid")
        self.grade_fake_labs([grade.Lab("01_fake", "fake.cu")], {"FAKE_LEAVE": pid_file})
        with open(pid_file) as f:
            pid = int(f.read())
        self.assertFalse(os.path.exists("/proc/%d" % pid),
                         "the process the checker left behind (pid %d) is still there, or not reaped" % pid)
        self.assertEqual(processes_of(FAKE), [])


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


def main():
    global FAKE
    FAKE, argv = support.fake_checker_command_line()
    unittest.main(argv=argv)


if __name__ == "__main__":
    main()
