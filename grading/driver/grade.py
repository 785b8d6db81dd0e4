#!/usr/bin/env python3
"""The workbook's grader: `make grade`, `make check LAB=NN`.

How a lab is graded:
  1. Its checker is built from the tree being graded (labs/, solutions/ or a submission) as its
     own target. A compile error scores that lab 0 and shows the compiler's message; the other
     labs are still graded.
  2. The list of tests and their points comes from the checker built with the reference
     solution, never from the student's build: student code cannot add tests or points.
  3. The checker runs in its own process group with a fresh seed. Each test's result arrives on
     a pipe of its own (WORKBOOK_RESULTS_FD), never parsed from stdout, so text that student code
     prints cannot raise a score. Each result line is signed with a key made for this process
     and handed over on another pipe (WORKBOOK_KEY_FD); unsigned or wrongly signed lines, such as
     student code writing to the results pipe, are ignored.
  4. A test that hangs past its timeout is killed. Timeouts come from the reference solution's own
     time for each test on this GPU (timed once and kept in <build>/grade/reference_times.json):
     10 times that, and never under 20 s. A test during which the checker crashed,
     exited or lost its GPU context fails; in each case the checker is started again at the next
     test, so a fault costs only the test it happened in.
  5. A test that never reported a result counts as failed. Nothing is reported as passed that
     did not run: with no GPU, every GPU test is reported as skipped and scores nothing.
  6. The labs run one after another. Once a lab's checker has reported its first test, the next
     lab's checker starts, starts CUDA and its runners, and holds before its own tests until its
     turn, so that their start costs no time of its own. Its compute-sanitizer and Nsight Compute
     runs start only when its turn comes: a tool's start runs GPU work of its own, which a
     measurement of the lab before must not share the GPU with.

Outputs, under <build>/grade/: results.json (Gradescope's format), junit.xml, and one log per lab
with everything the checker printed.

Practice mode: where CUDA IPC is missing (WSL 2, some containers), the checkers still run every
test, on copies of their device arrays, and say so on their signed channel; every result is then
shown as "practice mode: not for grading (<why>)", and results.json and junit.xml, what a course
grades from, are not written unless --allow-practice is given (docs/grading.md, "Practice mode").

On a cluster's login node, which has no GPU: --runner slurm (make check LAB=NN RUNNER=slurm) runs
this same command through `srun --gres=gpu:1` on a GPU of the cluster, its output streamed live
and its exit status srun's. Run locally on a machine with no GPU but with srun, the grader says so
and names that command.
"""
# Where each part of the grader is (each module's docstring says more):
#   grade.py            this command: its options, the labs one by one, the exit status
#   building.py         configuring build folders and building the checkers
#   checker_process.py  running a checker: its signed results, timeouts, restarts after a fault
#   timeouts.py         how long a test may run, from the reference solution's own times
#   device.py           the GPU and its ceilings (device_query)
#   skeletons.py        a lab file still as handed out: "not started"
#   screen.py           what make grade prints
#   reports.py          results.json, junit.xml, report.html
#   results.py          Test and Lab, which all of the above fill in or read
import argparse
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

from building import (SOURCE_DIR, build, build_references, build_up_front, checker_target,
                      cmake_cache_value, compiler_errors, configure, labs_dir_of, submission_options)
from checker_process import (EXIT_NO_DEVICE, HeldChecker, adopt_leftovers, list_tests, reap_checkers,
                             run_tests)
from device import probe_device
from reports import write_reports
from results import Lab, practice_line, practice_of
from screen import TestPrinter, next_step, print_device, print_no_device_verdict, print_scores
from skeletons import not_started_sentence
from timeouts import (REFERENCE_TIMEOUT, TIMEOUT_FACTOR, TIMEOUT_FLOOR, allowance,
                      load_reference_times, reference_stamp, remember_reference_times)

# Re-exported: grade_class.py, grade_task.py, expect_rejected.py, their tests and
# docs/tests/browser_test.py use these as grade.<name>, as they did when all of it was here.
from building import build_checkers_command, run_quiet  # noqa: F401
from checker_process import EXIT_CONTEXT_LOST  # noqa: F401
from device import nvidia_smi_gpus  # noqa: F401
from reports import write_junit, write_report_html, write_results_json  # noqa: F401
from results import Test  # noqa: F401
from skeletons import file_sha256, first_todo, handed_out, skeleton_hashes  # noqa: F401

references_timing_announced = False  # make grade said once that it times the references first


# ----------------------------------------------------------------------------------------------
# The command

def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    # SIGTERM ends the run as ^C does, through the clean-up of a running checker.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    args = parse_args(argv)
    if shutil.which("cmake") is None:
        sys.exit("cmake is not installed: see README.md, Prerequisites")
    if args.runner == "slurm":
        return run_on_slurm(args, argv)
    labs, device, seed, status = grade(args)
    if args.expect == "full" and status == 1:
        print("EXPECTED FULL MARKS")
    if args.expect == "zero" and status == 1:
        print("EXPECTED EVERY TEST TO FAIL, but some passed: a test that cannot fail is a defect")
    return status  # with no GPU, the verdict (print_no_device_verdict) named Slurm's command


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", default=os.path.join(SOURCE_DIR, "build"))
    p.add_argument("--lab", help="grade one lab: its number (01) or full name (01_vector_add)")
    p.add_argument("--test", help="run only the tests whose names match this doctest filter")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--solutions", action="store_true", help="grade solutions/ (full marks expected)")
    which.add_argument("--submission", help="grade another copy of labs/, e.g. a student's")
    which.add_argument("--variant", help="grade a buggy variant kept under tests/buggy/")
    p.add_argument("--seed", type=int, help="the data seed; by default a fresh one is drawn")
    p.add_argument("--timeout", type=float,
                   help="seconds per test (default: %d times the reference's time, at least %.0f s)"
                   % (TIMEOUT_FACTOR, TIMEOUT_FLOOR))
    p.add_argument("--verbose", action="store_true", help="also show everything the checker prints")
    p.add_argument("--no-build", action="store_true", help="use the binaries already built")
    p.add_argument("--out", help="where results.json, junit.xml and logs go (default <build>/grade)")
    p.add_argument("--allow-practice", action="store_true",
                   help="in practice mode (CUDA IPC missing), write results.json and junit.xml anyway, "
                        "every result in them marked as practice")
    p.add_argument("--expect", choices=["full", "zero"],
                   help="for the test suite: exit 0 only if the score is full / every test failed")
    slurm = p.add_argument_group("Slurm", "--runner slurm: this same command, run by srun on a GPU "
                                          "of the cluster (make RUNNER=slurm, SLURM_* variables)")
    slurm.add_argument("--runner", choices=["local", "slurm"], default="local",
                       help="where the checkers run: here (default) or through srun")
    slurm.add_argument("--partition", help="srun --partition (SLURM_PARTITION)")
    slurm.add_argument("--account", help="srun --account (SLURM_ACCOUNT)")
    slurm.add_argument("--time", help="srun --time, Slurm's format, e.g. 30 or 1:00:00 (SLURM_TIME)")
    slurm.add_argument("--gres", default="gpu:1",
                       help="srun --gres (default %(default)s; '' or none asks for none: SLURM_GRES)")
    slurm.add_argument("--cpus", type=int, default=8,
                       help="srun --cpus-per-task, for building the checkers (default %(default)s; SLURM_CPUS)")
    return p.parse_args(argv)


def grade(args):
    """Grades the selected labs and returns (labs, device, seed, exit status)."""
    started = time.monotonic()
    trusted_build_dir = os.path.abspath(args.build_dir)
    configure(trusted_build_dir)
    build_dir = submission_build_dir(args, trusted_build_dir) if args.submission else trusted_build_dir
    manifest, labs = read_labs(build_dir, args.lab)

    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    tree = ("solutions/" if args.solutions else args.submission if args.submission
            else "variant %s" % args.variant if args.variant else manifest["labs_dir"])
    print("Grading %s" % tree)
    print("seed %d (replay with: make grade SEED=%d)" % (seed, seed))
    device = probe_device(trusted_build_dir, args.no_build)
    print_device(device, args)

    out_dir = os.path.abspath(args.out or os.path.join(build_dir, "grade"))
    os.makedirs(out_dir, exist_ok=True)
    grade_labs(labs, Run(build_dir, trusted_build_dir, args, device, checker_environment(seed, device), out_dir))
    report(labs, args, device, seed, out_dir, time.monotonic() - started)
    return labs, device, seed, exit_status(labs, device, args)


def report(labs, args, device, seed, out_dir, seconds):
    """After the last lab: the summary, the reports and the next step. A lab that --test left
    nothing to run was named by the run, and is left out here: listed as 0/0 it would read as a
    lab that ran and scored nothing."""
    ran = [lab for lab in labs if not lab.unmatched]
    if not device.get("ok"):
        # No GPU: one verdict, no score. The reports are still written (every test skipped).
        write_reports(out_dir, ran, seed, device, seconds, getattr(args, "allow_practice", False))
        print_no_device_verdict(ran, device, args)
        return
    print_scores(ran)
    written = write_reports(out_dir, ran, seed, device, seconds, getattr(args, "allow_practice", False))
    print("Reports: %s, logs in %s/" % (", ".join("%s/%s" % (out_dir, name) for name in written), out_dir))
    if device.get("ok") and not args.solutions and not args.variant and not args.test:
        for line in next_step(ran):
            print(line)
    say_practice(ran, written)


def say_practice(labs, written):
    """In practice mode, the last words of the run: what was and was not written, and why."""
    practice = practice_of(labs)
    if not practice:
        return
    if "results.json" in written:
        print("%s: results.json and junit.xml were written anyway (--allow-practice), every result in "
              "them marked as practice." % practice_line(practice))
    else:
        print("%s: results.json and junit.xml were not written, since a course grades from them. "
              "To write them anyway, each result marked as practice: make grade PRACTICE_OK=1 "
              "(grade.py --allow-practice)." % practice_line(practice))


def submission_build_dir(args, trusted_build_dir):
    """The build folder of --submission, under <build>/submissions/: configured on first use and
    again whenever it was last built from another path. It compiles the student's files only
    and links the rest from the trusted build (prebuilt.cmake), whose references are built
    first."""
    submission = os.path.abspath(args.submission)
    if not os.path.isdir(submission):
        sys.exit("no such submission folder: %s" % submission)
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.basename(submission.rstrip("/")))
    build_dir = os.path.join(trusted_build_dir, "submissions", name)
    if (not os.path.exists(os.path.join(build_dir, "CMakeCache.txt"))
            or cmake_cache_value(build_dir, "WORKBOOK_LABS_DIR") != submission
            or cmake_cache_value(build_dir, "WORKBOOK_PREBUILT") != trusted_build_dir):
        if not args.no_build:
            build_references(trusted_build_dir)
        configure(build_dir, submission_options(trusted_build_dir, submission))
    return build_dir


def read_labs(build_dir, only):
    """The build folder's map of the workbook (workbook.json), and its labs: every one, or the
    one `only` names (its number, 01, or its full name, 01_vector_add)."""
    with open(os.path.join(build_dir, "workbook.json")) as f:
        manifest = json.load(f)
    labs = [Lab(entry["id"], entry["source"], entry.get("dir")) for entry in manifest["labs"]]
    if only:
        labs = [lab for lab in labs if only in (lab.id, lab.number)]
        if not labs:
            sys.exit("no lab %s; the labs are: %s" % (only, ", ".join(
                entry["id"] for entry in manifest["labs"])))
    return manifest, labs


def checker_environment(seed, device):
    """What every checker is given: the data seed, the GPU's ceilings that its performance tests
    are measured against (measured once here, not once per lab), and huge pages for its cases."""
    env_extra = {"WORKBOOK_SEED": str(seed)}
    # A lab's large cases (2^26 floats, 8192 x 8192) are hundreds of MiB of host memory, first
    # touched page by page as their data is drawn. glibc's malloc may ask for transparent huge
    # pages instead, where the kernel grants them on request (Debian's and Ubuntu's default):
    # on an H100 host that cut the time spent building cases over a grade run from 6.0 s to
    # 5.0 s. A glibc older than 2.35 ignores the setting; one the caller set is kept.
    tunables = [t for t in os.environ.get("GLIBC_TUNABLES", "").split(":") if t]
    if not any(t.startswith("glibc.malloc.hugetlb=") for t in tunables):
        env_extra["GLIBC_TUNABLES"] = ":".join(tunables + ["glibc.malloc.hugetlb=1"])
    if device.get("ok"):
        env_extra["WORKBOOK_COPY_GBS"] = "%.3f" % device["copy_gbs"]
        sgemm = float(device.get("sgemm_gflops", 0))
        if sgemm > 0:
            env_extra["WORKBOOK_SGEMM_GFLOPS"] = "%.3f" % sgemm
        tf32 = float(device.get("tf32_gflops", 0))
        if tf32 > 0:
            env_extra["WORKBOOK_TF32_GFLOPS"] = "%.3f" % tf32
        # How soon a kernel of the judge's runs on this GPU while it is idle: a checker compares
        # it with the same measure after pausing the student's processes (gpu_idle in clock.hpp).
        idle_turn = float(device.get("idle_turn_ms", 0))
        if idle_turn > 0:
            env_extra["WORKBOOK_IDLE_TURN_MS"] = "%.4f" % idle_turn
    return env_extra


@dataclass
class Run:
    """What every lab of one grading run shares: where the checkers are built (the tree graded,
    and the trusted build of the references), the command's arguments, the device, the checkers'
    environment, and where the logs and reports go. `built` is set once everything was built up
    front (grade_labs)."""
    build_dir: str
    trusted_build_dir: str
    args: object
    device: dict
    env_extra: dict
    log_dir: str
    built: bool = False
    filters: list = field(default_factory=list)

    def __post_init__(self):
        self.filters = ["--test-case=" + self.args.test] if getattr(self.args, "test", None) else []

    @property
    def suffix(self):
        """The checkers' name after the lab's: _solution, __variant, or nothing (labs/)."""
        args = self.args
        return "_solution" if args.solutions else "__" + args.variant if getattr(args, "variant", None) else ""


def grade_labs(labs, run):
    """Builds the checkers of every selected lab in one parallel build, then grades the labs one
    after another, and waits for the checkers still exiting. Each lab's checker is started while
    the lab before it runs (CheckersAhead), so that its start costs no time of its own. Nothing
    the checkers started outlives the run: what they leave behind is adopted, then ended with
    them (adopt_leftovers, reap_checkers)."""
    adopt_leftovers()
    run.built = not run.args.no_build and build_up_front(run.build_dir, run.trusted_build_dir, labs, run.suffix)
    ahead = CheckersAhead(run, run.device.get("ok") and (run.built or run.args.no_build))
    try:
        for i, lab in enumerate(labs):
            following = labs[i + 1] if i + 1 < len(labs) else None
            grade_lab(lab, run, ahead.held.get(lab.id), lambda following=following: ahead.start(following))
            ahead.discard(lab)  # its checker, if grade_lab did not run it
    finally:
        ahead.discard_all()
        reap_checkers()


def lab_log_path(log_dir, lab):
    """Where the lab's log goes: everything its checker printed."""
    return os.path.join(log_dir, "%s.log" % lab.id)


class CheckersAhead:
    """The next lab's checker, started (HeldChecker) and its tests listed while a lab runs, and
    handed to grade_lab when that lab's turn comes. Only checkers already built are started
    ahead (`enabled`: with a GPU, after the up-front build or with --no-build). A checker not
    run by its lab is stopped (discard)."""

    def __init__(self, run, enabled):
        self.run, self.enabled = run, enabled
        self.held = {}  # lab id -> HeldChecker

    def start(self, lab):
        """Starts `lab`'s checker, holding (None: the last lab has no next one)."""
        run = self.run
        if not self.enabled or lab is None or lab.id in self.held:
            return
        binary = os.path.join(run.build_dir, "bin", checker_target(lab, run.suffix))
        if not os.path.exists(binary):
            return
        tests = list_tests(reference_checker(lab, run.trusted_build_dir, False), run.filters)
        if not tests:
            return  # --test names none of its tests: it will not run
        self.held[lab.id] = HeldChecker(binary, run.filters, run.env_extra, lab_log_path(run.log_dir, lab), tests)

    def discard(self, lab):
        held = self.held.pop(lab.id, None)
        if held:
            held.discard()

    def discard_all(self):
        for held in self.held.values():
            held.discard()
        self.held.clear()


def exit_status(labs, device, args):
    """77 with no usable GPU, or (with --expect) when every test skipped itself: nothing was
    graded. With --expect (the test suite): 0 if the score is full, or zero, as expected.
    Otherwise 0 for every point (bonus points aside)."""
    total, possible = sum(lab.score for lab in labs), sum(lab.max_score for lab in labs)
    bonus, possible_bonus = sum(lab.bonus for lab in labs), sum(lab.max_bonus for lab in labs)
    if not device.get("ok"):
        return EXIT_NO_DEVICE
    if args.expect and labs and all(lab.all_skipped for lab in labs):
        return EXIT_NO_DEVICE  # e.g. a step built for sm_90a on another GPU: skipped, not passed
    if args.expect == "full":
        return 0 if total == possible and bonus == possible_bonus else 1
    if args.expect == "zero":
        return 0 if total == 0 and bonus == 0 else 1
    return 0 if total == possible else 1


# ----------------------------------------------------------------------------------------------
# One lab

def grade_lab(lab, run, held=None, start_next=None):
    """Builds (unless everything was built up front, or --no-build) and runs one lab's checker:
    `held` if it was started ahead (HeldChecker; its caller stops it if this lab does not run it).
    Once the checker has reported its first test, `start_next()` starts the next lab's. With no
    usable GPU, a lab is shown only if it has a problem of its own (a missing file, a compile
    error): print_device has said above every lab why none is graded."""
    build_dir, trusted_build_dir, args, device = run.build_dir, run.trusted_build_dir, run.args, run.device
    filters, env_extra, log_dir = run.filters, run.env_extra, run.log_dir
    target = checker_target(lab, run.suffix)
    heading = "\nLab %s: %s" % (lab.number, lab.title)
    if device.get("ok"):
        print(heading)
        heading = None  # printed: the build and the tests follow it
    lab.log_path = lab_log_path(log_dir, lab)
    build_each = not args.no_build and not run.built
    with open(lab.log_path, "w") as log:
        trusted = reference_checker(lab, trusted_build_dir, build_each)
        # The tests and their points come from the reference solution's checker, never from the
        # student's build: student code cannot add tests or points.
        lab.tests = held.tests if held else list_tests(trusted, filters)
        if filters and not lab.tests:
            # Under the part's heading; with no GPU there is none, and the part is named instead
            # (lab 05's seven parts would otherwise print seven identical lines).
            if heading:
                print("Lab %s %s: no test matches --test %r" % (lab.number, lab.title, args.test))
            else:
                print("  no test of this part matches --test %r" % args.test)
            lab.unmatched = args.test
            return

        student_file = os.path.join(labs_dir_of(build_dir), lab.dir, lab.source)
        if not args.no_build and not args.solutions and not args.variant and not os.path.exists(student_file):
            fail_every_test(lab, "is missing from the submission (no %s), so every test scores 0"
                            % student_file)
            print_problem(lab, heading)
            return
        if build_each and not build_lab_checker(lab, build_dir, target, log):
            print_problem(lab, heading)
            return
        if not device.get("ok"):
            skip_without_device(lab, device)
            return

        binary = os.path.join(build_dir, "bin", target)
        timeout = test_timeouts(lab, trusted, trusted_build_dir, env_extra, device, args, log)
        if not args.solutions and not args.variant:
            shown = os.path.relpath(student_file)
            lab.not_started = not_started_sentence(student_file, "%s/%s" % (lab.dir, lab.source),
                                                   student_file if shown.startswith("..") else shown)
        printer = TestPrinter(args.verbose, quiet=bool(lab.not_started) and not args.verbose)

        def on_result(test):
            printer(test)
            if start_next and test is lab.tests[0]:
                start_next()  # this checker's start is over: the next lab's may begin
        problem = run_tests(binary, lab.tests, filters, env_extra, timeout, log, args.verbose, on_result,
                            held)
        print_not_started(lab, args.verbose)
        # Practice mode's times (copies and all) are not kept: a later run with CUDA IPC would take them.
        if args.solutions and not problem and not filters and not lab.practice:
            remember_reference_times(trusted_build_dir, lab, trusted, device)
        if problem:
            skip_unfinished(lab, problem)


def reference_checker(lab, trusted_build_dir, build_it):
    """The lab's checker built with the reference solution (built now if `build_it`). A reference
    that does not build is the workbook's fault, not the student's: grading stops."""
    if build_it:
        ok, output = build(trusted_build_dir, checker_target(lab, "_solution"))
        if not ok:
            sys.exit("the reference checker of lab %s does not build:\n%s"
                     % (lab.id, compiler_errors(output)))
    return os.path.join(trusted_build_dir, "bin", checker_target(lab, "_solution"))


def build_lab_checker(lab, build_dir, target, log):
    """Builds the lab's checker from the tree being graded; returns whether it built. A compile
    error scores this lab 0 and shows the compiler's message; the other labs are still graded."""
    ok, output = build(build_dir, target)
    log.write(output)
    if not ok:
        fail_every_test(lab, "does not compile, so every test scores 0:\n" + compiler_errors(output))
    return ok


def print_problem(lab, heading=None):
    """The reason a lab could not run, under its heading (printed first if not yet printed)."""
    if heading:
        print(heading)
    print("  " + lab.problem.replace("\n", "\n    "))


def fail_every_test(lab, problem):
    """A lab that could not run at all: each of its tests fails (scores 0) with that reason."""
    lab.problem = problem
    for t in lab.tests:
        t.output = lab.problem


def skip_without_device(lab, device):
    """With no usable GPU, every test of the lab is skipped: nothing is reported as passed that
    did not run. Nothing is printed: the reason was said once, above every lab (print_device),
    and the same words under each of twelve labs would hide the rest."""
    lab.problem = device.get("message", "no CUDA device found")
    for t in lab.tests:
        t.status, t.output = "skipped", lab.problem


def print_not_started(lab, verbose):
    """A lab not started (its file as handed out) that scores nothing is shown in one sentence.
    One that scores after all is not "not started": its tests are printed as any other lab's."""
    if lab.not_started and lab.score + lab.bonus == 0:
        print("  " + lab.not_started)
    elif lab.not_started:
        lab.not_started = ""  # it scores after all: show its tests as any other lab's
        replay = TestPrinter(verbose)
        for t in lab.tests:
            replay(t)


def skip_unfinished(lab, problem):
    """The checker reported a lab-level problem (no GPU): the tests that did not pass are
    skipped with it, not failed."""
    lab.problem = problem
    for t in lab.tests:
        if t.status != "passed":
            t.status, t.output = "skipped", problem
    print("  skipped: %s" % problem)


def test_timeouts(lab, trusted, trusted_build_dir, env_extra, device, args, log):
    """Seconds each test may take: --timeout if given, else from the reference's own times; a
    performance test also gets the time to explain a slow kernel with Nsight Compute, and a
    compute-sanitizer test the time of a stalled tool run (timeouts.allowance)."""
    if args.timeout:
        return lambda test: args.timeout + allowance(test.name)
    if args.solutions:
        return REFERENCE_TIMEOUT  # the reference is what is being timed
    entry = load_reference_times(trusted_build_dir).get(lab.id)
    if not entry or entry.get("stamp") != reference_stamp(trusted, device):
        global references_timing_announced
        if args.verbose:
            print("  timing the reference solution once on this GPU, to set the timeouts...")
        elif not references_timing_announced:
            print("  (first, once on this GPU: timing the reference solution of each lab, for the timeouts)")
        references_timing_announced = True
        sys.stdout.flush()
        reference = list_tests(trusted, [])
        log.write("[timing the reference solution]\n")
        run_tests(trusted, reference, [], env_extra, REFERENCE_TIMEOUT, log, False, lambda test: None)
        reference_lab = Lab(lab.id, lab.source)
        reference_lab.tests = reference
        if reference_lab.practice:
            # Practice mode's times serve this run only (see grade_lab).
            entry = {"seconds": {t.name: t.seconds for t in reference if t.status == "passed"}}
        else:
            remember_reference_times(trusted_build_dir, reference_lab, trusted, device)
            entry = load_reference_times(trusted_build_dir)[lab.id]
    seconds = entry["seconds"]
    said = ("timeouts: %dx the reference solution's time per test on this GPU, at least %.0f s"
            % (TIMEOUT_FACTOR, TIMEOUT_FLOOR))
    log.write(said + "\n")
    if args.verbose:
        print("  " + said)
    return lambda test: (max(TIMEOUT_FLOOR, TIMEOUT_FACTOR * seconds.get(test.name, REFERENCE_TIMEOUT))
                         + allowance(test.name))


# ----------------------------------------------------------------------------------------------
# Slurm: a login node has no GPU, its cluster has

def run_on_slurm(args, argv):
    """This very grade run, with --runner local, as one task that srun places on a GPU of the
    cluster: its output comes back live, and its exit status is the grade run's."""
    sys.path.insert(0, os.path.join(SOURCE_DIR, "grading", "driver"))
    import slurm
    try:
        cmd = slurm.srun_command(slurm.options(args.partition, args.account, args.time, args.gres, args.cpus),
                                 [sys.executable, "-u", os.path.abspath(__file__), *argv,
                                  "--runner", "local"], name="workbook-grade")
    except slurm.SlurmError as e:
        sys.exit(str(e))
    print(slurm.process_tracking())
    print("$ %s" % " ".join(cmd), flush=True)
    proc = subprocess.Popen(cmd)
    # ^C reaches srun from the terminal too; a signal sent to this process alone is passed on.
    signal.signal(signal.SIGTERM, lambda signum, frame: proc.send_signal(signal.SIGTERM))
    while True:
        try:
            status = proc.wait()
            break
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGINT)   # srun --quit-on-interrupt: the job ends
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main())
