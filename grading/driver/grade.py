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
#   one_lab.py          one lab: its checker built and run, its time limits, a lab that cannot run
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

from building import (SOURCE_DIR, build_references, build_up_front, checker_target, cmake_cache_value,
                      configure, submission_options)
from checker_process import EXIT_NO_DEVICE, HeldChecker, adopt_leftovers, list_tests, reap_checkers
from device import probe_device
from one_lab import grade_lab, lab_env, lab_log_path, reference_checker
from reports import write_reports
from results import Lab, practice_line, practice_of
from screen import next_step, print_device, print_no_device_verdict, print_scores
from timeouts import TIMEOUT_FACTOR, TIMEOUT_FLOOR

# Re-exported: grade_class.py, grade_task.py, expect_rejected.py, their tests and
# docs/tests/browser_test.py use these as grade.<name>, as they did when all of it was here.
from building import build, build_checkers_command, compiler_errors, labs_dir_of, run_quiet  # noqa: F401
from checker_process import EXIT_CONTEXT_LOST, run_tests  # noqa: F401
from device import nvidia_smi_gpus  # noqa: F401
from one_lab import (build_lab_checker, fail_every_test, print_not_started, print_problem,  # noqa: F401
                     skip_unfinished, skip_without_device, test_timeouts)
from reports import write_junit, write_report_html, write_results_json  # noqa: F401
from results import Test  # noqa: F401
from screen import TestPrinter  # noqa: F401
from skeletons import file_sha256, first_todo, handed_out, not_started_sentence, skeleton_hashes  # noqa: F401
from timeouts import (REFERENCE_TIMEOUT, allowance, load_reference_times, reference_stamp,  # noqa: F401
                      remember_reference_times)


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
        trusted = reference_checker(lab, run.trusted_build_dir, False)
        self.held[lab.id] = HeldChecker(binary, run.filters, lab_env(lab, run, trusted), lab_log_path(run.log_dir, lab),
                                        tests)

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
