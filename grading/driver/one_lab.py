"""One lab of a grading run (grade.py grades the labs one after another, each through grade_lab):
its checker built from the tree being graded, its tests listed by the reference solution's
checker, their time limits, the run of its checker, and what is said and scored when it cannot
run (a missing file, a compile error, no GPU).

    grade_lab(lab, run, held, start_next)  builds and runs one lab's checker; fills in lab.tests
    reference_checker(lab, ...)            the lab's checker built with the reference solution
    test_timeouts(lab, ...)                seconds each test may take (timeouts.py's rules)
    fail_every_test, skip_without_device   a lab that could not run: each test failed, or skipped
"""
import os
import sys

from building import build, checker_target, compiler_errors, labs_dir_of
from checker_process import list_tests, run_tests
from results import Lab
from screen import TestPrinter
from skeletons import not_started_sentence
from timeouts import (REFERENCE_TIMEOUT, TIMEOUT_FACTOR, TIMEOUT_FLOOR, allowance, figures_out_env,
                      load_reference_times, reference_env, reference_stamp, remember_reference_times)

references_timing_announced = False  # make grade said once that it times the references first


def lab_log_path(log_dir, lab):
    """Where the lab's log goes: everything its checker printed."""
    return os.path.join(log_dir, "%s.log" % lab.id)


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
        # The reference's figures: written by a run of the reference solution, handed to any other
        # (timeouts.reference_env). A checker started ahead without the figures that test_timeouts
        # has just made is not used.
        env_lab = lab_env(lab, run, trusted)
        if held is not None and held.env_extra != env_lab:
            held.discard()
            held = None
        if not args.solutions and not args.variant:
            shown = os.path.relpath(student_file)
            lab.not_started = not_started_sentence(student_file, "%s/%s" % (lab.dir, lab.source),
                                                   student_file if shown.startswith("..") else shown)
        printer = TestPrinter(args.verbose, quiet=bool(lab.not_started) and not args.verbose)

        def on_result(test):
            printer(test)
            if start_next and test is lab.tests[0]:
                start_next()  # this checker's start is over: the next lab's may begin
        problem = run_tests(binary, lab.tests, filters, env_lab, timeout, log, args.verbose, on_result,
                            held)
        print_not_started(lab, args.verbose)
        # Practice mode's times (copies and all) are not kept: a later run with CUDA IPC would take them.
        if args.solutions and not problem and not filters and not lab.practice:
            remember_reference_times(trusted_build_dir, lab, trusted, device)
        if problem:
            skip_unfinished(lab, problem)


def lab_env(lab, run, trusted):
    """The environment a lab's checker adds to the run's: a run of the reference solution
    (SOLUTIONS=1) writes the reference's figures (timeouts.figures_out_env), any other is handed
    those kept on this GPU (timeouts.reference_env)."""
    if run.args.solutions:
        return dict(run.env_extra, **figures_out_env(run.trusted_build_dir, lab.id))
    return dict(run.env_extra, **reference_env(run.trusted_build_dir, lab.id, trusted, run.device))


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
        run_tests(trusted, reference, [], dict(env_extra, **figures_out_env(trusted_build_dir, lab.id)),
                  REFERENCE_TIMEOUT, log, False, lambda test: None)
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
