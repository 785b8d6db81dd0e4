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
     prints cannot raise a score.
  4. A test that hangs past its timeout is killed; a test during which the checker crashed,
     exited or lost its GPU context fails; in each case the checker is started again at the next
     test, so a fault costs only the test it happened in.
  5. A test that never reported a result counts as failed. Nothing is reported as passed that
     did not run: with no GPU, every GPU test is reported as skipped and scores nothing.

Outputs, under <build>/grade/: results.json (Gradescope's format), junit.xml, and one log per lab
with everything the checker printed.
"""
import argparse
import json
import os
import re
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

EXIT_NO_DEVICE = 77        # checker and grader: no usable GPU, nothing was graded
EXIT_CONTEXT_LOST = 75     # checker: a sticky CUDA error; resume in a fresh process
DEFAULT_TEST_TIMEOUT = 60.0
SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ----------------------------------------------------------------------------------------------
# Results

class Test:
    """One graded test: what it is worth and what happened to it."""

    def __init__(self, name, points, bonus=0):
        self.name, self.points, self.bonus = name, points, bonus
        self.status = "failed"   # passed | failed | skipped
        self.output = "did not run: the checker stopped before reaching this test"
        self.seconds = 0.0

    @property
    def max_score(self):
        return self.points + self.bonus

    @property
    def score(self):
        return self.max_score if self.status == "passed" else 0


class Lab:
    def __init__(self, lab_id, source):
        self.id, self.source = lab_id, source
        self.number, _, name = lab_id.partition("_")
        self.title = name.replace("_", " ")
        self.tests = []
        self.problem = ""        # a lab-level failure: compile error, no GPU, ...
        self.log_path = ""

    # Bonus points are earned beyond the total: a lab is "12/12 +2/2 bonus".
    @property
    def score(self):
        return sum(t.points for t in self.tests if t.status == "passed")

    @property
    def max_score(self):
        return sum(t.points for t in self.tests)

    @property
    def bonus(self):
        return sum(t.bonus for t in self.tests if t.status == "passed")

    @property
    def max_bonus(self):
        return sum(t.bonus for t in self.tests)

    def summary(self):
        text = "%d/%d" % (self.score, self.max_score)
        if self.max_bonus:
            text += " +%d/%d bonus" % (self.bonus, self.max_bonus)
        return text


# ----------------------------------------------------------------------------------------------
# Building

def run_quiet(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace", **kw)


def configure(build_dir, extra_args=()):
    if os.path.exists(os.path.join(build_dir, "CMakeCache.txt")) and not extra_args:
        return
    r = run_quiet(["cmake", "-S", SOURCE_DIR, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                   *extra_args])
    if r.returncode != 0:
        sys.exit("cmake could not configure %s:\n%s" % (build_dir, r.stdout))


def build(build_dir, target):
    """Builds one target; returns (ok, compiler output)."""
    r = run_quiet(["cmake", "--build", build_dir, "--target", target, "--parallel"])
    return r.returncode == 0, r.stdout


def compiler_errors(output, limit=40):
    """The part of a build log a student needs: the error lines and what follows each."""
    lines = output.splitlines()
    keep = [i for i, line in enumerate(lines) if re.search(r"\berror\b|undefined reference", line)]
    if not keep:
        return "\n".join(lines[-limit:])
    shown = []
    for i in keep:
        for j in range(i, min(i + 3, len(lines))):
            if j not in shown:
                shown.append(j)
    return "\n".join(lines[j] for j in shown[:limit])


# ----------------------------------------------------------------------------------------------
# Running a checker

def read_events(text):
    events = []
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and "event" in event:
            events.append(event)
    return events


def list_tests(binary, filters):
    """The tests a checker holds, with their points, in the order it runs them."""
    read_fd, write_fd = os.pipe()
    env = dict(os.environ, WORKBOOK_RESULTS_FD=str(write_fd))
    proc = subprocess.Popen([binary, "--list-test-cases", *filters], env=env, pass_fds=(write_fd,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        text = pipe.read()
    proc.wait()
    for event in read_events(text):
        if event["event"] == "list":
            return [Test(t["name"], int(t["points"]), int(t.get("bonus", 0))) for t in event["tests"]]
    raise RuntimeError("%s did not list its tests" % binary)


def run_tests(binary, tests, filters, env_extra, timeout, log, verbose, on_result):
    """Runs a checker over `tests` (its list, in run order), restarting it after any fault.

    Returns a lab-level problem string ("" if none), e.g. the no-GPU message.
    """
    position = 0                                  # index of the first test not yet finished
    while position < len(tests):
        first = position
        read_fd, write_fd = os.pipe()
        env = dict(os.environ, WORKBOOK_RESULTS_FD=str(write_fd), **env_extra)
        cmd = [binary, "--first=%d" % (position + 1), *filters]
        log.write("$ %s\n" % " ".join(cmd))
        log.flush()
        proc = subprocess.Popen(cmd, env=env, pass_fds=(write_fd,), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
        os.close(write_fd)
        events = os.fdopen(read_fd, "rb", buffering=0)
        selector = selectors.DefaultSelector()
        selector.register(events, selectors.EVENT_READ, "events")
        selector.register(proc.stdout, selectors.EVENT_READ, "output")
        pending, current, started, timed_out, problem = b"", None, time.monotonic(), False, ""

        while selector.get_map():
            limit = timeout - (time.monotonic() - started)
            if limit <= 0:
                timed_out = True
                os.killpg(proc.pid, signal.SIGKILL)
                break
            for key, _ in selector.select(timeout=min(limit, 1.0)):
                chunk = os.read(key.fileobj.fileno(), 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                if key.data == "output":
                    text = chunk.decode("utf-8", "replace")
                    log.write(text)
                    if verbose:
                        sys.stdout.write(text)
                        sys.stdout.flush()
                    continue
                pending += chunk
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    for event in read_events(line.decode("utf-8", "replace")):
                        kind = event["event"]
                        if kind == "start":
                            current, started = event.get("name"), time.monotonic()
                        elif kind == "end" and event.get("name") == tests[position].name:
                            test = tests[position]
                            test.status = ("skipped" if event.get("skipped") is True else
                                           "passed" if event.get("passed") is True else "failed")
                            test.output = str(event.get("output", ""))
                            test.seconds = float(event.get("seconds", 0))
                            on_result(test)
                            position, current, started = position + 1, None, time.monotonic()
                        elif kind == "no_device":
                            problem = str(event.get("message", "no CUDA device found"))
            if not selector.get_map():
                break
        proc.wait()
        events.close()
        proc.stdout.close()
        log.write("[checker exit status %s]\n" % proc.returncode)

        if problem or proc.returncode == EXIT_NO_DEVICE:
            return problem or "no CUDA device found"
        if position >= len(tests):
            break
        if current is None and position > first:
            continue    # it stopped between tests (a crash it reported, a lost context): go on
        # The checker stopped before finishing tests[position]: that test takes the blame.
        test = tests[position]
        test.status, test.seconds = "failed", time.monotonic() - started
        if timed_out:
            test.output = ("timed out after %.0f s and was stopped. Does a kernel loop forever, "
                           "or wait at a __syncthreads() that some threads never reach?" % timeout)
        elif current is None:
            test.output = ("the checker exited before this test started (exit status %s)"
                           % describe_status(proc.returncode))
        elif proc.returncode == EXIT_CONTEXT_LOST:
            test.output = ("a sticky CUDA error destroyed the GPU context during this test "
                           "(see the log)")
        elif proc.returncode is not None and proc.returncode >= 0:
            test.output = ("the checker exited with status %d in the middle of this test: does "
                           "code in the lab call exit() or abort()?" % proc.returncode)
        else:
            test.output = ("the checker died during this test (%s): host code crashed."
                           % describe_status(proc.returncode))
        on_result(test)
        position += 1
    return ""


def describe_status(code):
    if code is None:
        return "unknown"
    if code < 0:
        try:
            return "killed by %s" % signal.Signals(-code).name
        except ValueError:
            return "killed by signal %d" % -code
    return str(code)


# ----------------------------------------------------------------------------------------------
# The device

def probe_device(build_dir):
    """Runs device_query once: the GPU's facts and ceilings, shared by every checker."""
    ok, output = build(build_dir, "device_query")
    if not ok:
        sys.exit("could not build device_query:\n" + compiler_errors(output))
    r = subprocess.run([os.path.join(build_dir, "bin", "device_query")], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    try:
        facts = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        facts = {"ok": False, "message": r.stderr.strip() or "device_query failed"}
    return facts


# ----------------------------------------------------------------------------------------------
# Reports

def print_test(test):
    mark = {"passed": "OK  ", "failed": "FAIL", "skipped": "SKIP"}[test.status]
    if test.points:
        worth = "%d/%d" % (test.score if test.status == "passed" else 0, test.points)
    else:
        worth = "%d/%d bonus" % (test.score, test.bonus)
    name = test.name if len(test.name) <= 62 else test.name[:59] + "..."
    print("  %s %s %s %-8s %5.1fs" % (name, "." * (64 - len(name)), mark, worth, test.seconds))
    if test.output and (test.status == "failed" or test.output.strip()):
        lines = test.output.rstrip().splitlines()
        for line in lines[:40]:
            print("        " + line)
        if len(lines) > 40:
            print("        ... (%d more lines in the log)" % (len(lines) - 40))
    sys.stdout.flush()


def write_results_json(path, labs, seed, device, seconds):
    tests = []
    for lab in labs:
        if lab.problem and not lab.tests:
            tests.append({"name": "lab %s %s" % (lab.number, lab.title), "score": 0,
                          "max_score": 0, "status": "failed", "output": lab.problem,
                          "visibility": "visible"})
        for t in lab.tests:
            output = t.output if t.status != "skipped" else "not run (skipped): " + t.output
            tests.append({"name": "lab %s %s: %s" % (lab.number, lab.title, t.name),
                          "score": t.score, "max_score": t.max_score,
                          "status": "passed" if t.status == "passed" else "failed",
                          "output": output, "visibility": "visible"})
    result = {
        "score": sum(lab.score + lab.bonus for lab in labs),
        "execution_time": round(seconds, 1),
        "output": "seed %d (replay: make grade SEED=%d); device: %s" % (
            seed, seed, device.get("device", device.get("message", "none"))),
        "tests": tests,
    }
    with open(path, "w") as f:
        json.dump(result, f, indent=2)
    return result


def write_junit(path, labs):
    root = ET.Element("testsuites", name="cuda-workbook")
    for lab in labs:
        suite = ET.SubElement(root, "testsuite", name=lab.id, tests=str(len(lab.tests)),
                              failures=str(sum(t.status == "failed" for t in lab.tests)),
                              skipped=str(sum(t.status == "skipped" for t in lab.tests)),
                              time="%.3f" % sum(t.seconds for t in lab.tests))
        for t in lab.tests:
            case = ET.SubElement(suite, "testcase", classname=lab.id, name=t.name,
                                 time="%.3f" % t.seconds)
            if t.status == "failed":
                first = t.output.strip().splitlines()[0] if t.output.strip() else "failed"
                ET.SubElement(case, "failure", message=first).text = t.output
            elif t.status == "skipped":
                ET.SubElement(case, "skipped", message=t.output)
            if t.output and t.status == "passed":
                ET.SubElement(case, "system-out").text = t.output
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


# ----------------------------------------------------------------------------------------------
# Grading

def grade_lab(lab, build_dir, trusted_build_dir, target, filters, env_extra, device, args, log_dir):
    print("\nLab %s: %s" % (lab.number, lab.title))
    lab.log_path = os.path.join(log_dir, "%s.log" % lab.id)
    with open(lab.log_path, "w") as log:
        if not args.no_build:
            ok, output = build(trusted_build_dir, "check_%s_solution" % lab.id)
            if not ok:
                sys.exit("the reference checker of lab %s does not build:\n%s"
                         % (lab.id, compiler_errors(output)))
        trusted = os.path.join(trusted_build_dir, "bin", "check_%s_solution" % lab.id)
        lab.tests = list_tests(trusted, filters)

        if not args.no_build:
            ok, output = build(build_dir, target)
            log.write(output)
            if not ok:
                lab.problem = "does not compile, so every test scores 0:\n" + compiler_errors(output)
                for t in lab.tests:
                    t.output = lab.problem
                print("  " + lab.problem.replace("\n", "\n    "))
                return
        if not device.get("ok"):
            lab.problem = device.get("message", "no CUDA device found")
            for t in lab.tests:
                t.status, t.output = "skipped", lab.problem
            print("  skipped, not graded: %s" % lab.problem)
            return
        binary = os.path.join(build_dir, "bin", target)
        problem = run_tests(binary, lab.tests, filters, env_extra, args.timeout, log,
                            args.verbose, print_test)
        if problem:
            lab.problem = problem
            for t in lab.tests:
                if t.status != "passed":
                    t.status, t.output = "skipped", problem
            print("  skipped: %s" % problem)


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
    p.add_argument("--timeout", type=float, default=DEFAULT_TEST_TIMEOUT, help="seconds per test")
    p.add_argument("--verbose", action="store_true", help="also show everything the checker prints")
    p.add_argument("--no-build", action="store_true", help="use the binaries already built")
    p.add_argument("--out", help="where results.json, junit.xml and logs go (default <build>/grade)")
    p.add_argument("--expect", choices=["full", "zero"],
                   help="for the test suite: exit 0 only if the score is full / every test failed")
    return p.parse_args(argv)


def grade(args):
    """Grades the selected labs and returns (labs, device, seed, exit status)."""
    started = time.monotonic()
    build_dir = os.path.abspath(args.build_dir)
    trusted_build_dir = build_dir
    configure(build_dir)
    if args.submission:
        submission = os.path.abspath(args.submission)
        if not os.path.isdir(submission):
            sys.exit("no such submission folder: %s" % submission)
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.basename(submission.rstrip("/")))
        build_dir = os.path.join(trusted_build_dir, "submissions", name)
        cache = os.path.join(build_dir, "CMakeCache.txt")
        if not os.path.exists(cache):
            archs = cmake_cache_value(trusted_build_dir, "CMAKE_CUDA_ARCHITECTURES")
            configure(build_dir, ["-DWORKBOOK_LABS_DIR=" + submission, "-DWORKBOOK_GRADE_ONLY=ON",
                                  "-DCMAKE_CUDA_ARCHITECTURES=" + archs])

    with open(os.path.join(build_dir, "workbook.json")) as f:
        manifest = json.load(f)
    labs = [Lab(entry["id"], entry["source"]) for entry in manifest["labs"]]
    if args.lab:
        labs = [lab for lab in labs if args.lab in (lab.id, lab.number)]
        if not labs:
            sys.exit("no lab %s; the labs are: %s" % (args.lab, ", ".join(
                entry["id"] for entry in manifest["labs"])))

    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    tree = ("solutions/" if args.solutions else args.submission if args.submission
            else "variant %s" % args.variant if args.variant else manifest["labs_dir"])
    print("Grading %s" % tree)
    print("seed %d (replay with: make grade SEED=%d)" % (seed, seed))
    device = probe_device(trusted_build_dir)
    env_extra = {"WORKBOOK_SEED": str(seed)}
    if device.get("ok"):
        print("device: %s; copy ceiling %.0f GB/s" % (device["device"], device["copy_gbs"]))
        env_extra["WORKBOOK_COPY_GBS"] = "%.3f" % device["copy_gbs"]
    else:
        print("%s\nEvery GPU test is skipped: nothing is graded." % device.get("message"))

    out_dir = os.path.abspath(args.out or os.path.join(build_dir, "grade"))
    os.makedirs(out_dir, exist_ok=True)
    filters = ["--test-case=" + args.test] if args.test else []
    for lab in labs:
        suffix = "_solution" if args.solutions else "__" + args.variant if args.variant else ""
        grade_lab(lab, build_dir, trusted_build_dir, "check_%s%s" % (lab.id, suffix), filters,
                  env_extra, device, args, out_dir)

    print("")
    for lab in labs:
        note = " (%s)" % lab.problem.splitlines()[0] if lab.problem else ""
        print("Lab %s %-24s %s%s" % (lab.number, lab.title, lab.summary(), note))
    total, possible = sum(lab.score for lab in labs), sum(lab.max_score for lab in labs)
    bonus, possible_bonus = sum(lab.bonus for lab in labs), sum(lab.max_bonus for lab in labs)
    print("Score: %d/%d" % (total, possible))
    if possible_bonus:
        print("Bonus: %d/%d" % (bonus, possible_bonus))
    seconds = time.monotonic() - started
    write_results_json(os.path.join(out_dir, "results.json"), labs, seed, device, seconds)
    write_junit(os.path.join(out_dir, "junit.xml"), labs)
    print("Reports: %s/results.json, %s/junit.xml, logs in %s/" % (out_dir, out_dir, out_dir))

    if not device.get("ok"):
        status = EXIT_NO_DEVICE
    elif args.expect == "full":
        status = 0 if total == possible and bonus == possible_bonus else 1
    elif args.expect == "zero":
        status = 0 if total == 0 and bonus == 0 else 1
    else:
        status = 0 if total == possible else 1
    return labs, device, seed, status


def cmake_cache_value(build_dir, key):
    with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith(key + ":"):
                return line.split("=", 1)[1].strip()
    return ""


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if shutil.which("cmake") is None:
        sys.exit("cmake is not installed: see README.md, Prerequisites")
    labs, device, seed, status = grade(args)
    if args.expect == "full" and status == 1:
        print("EXPECTED FULL MARKS")
    if args.expect == "zero" and status == 1:
        print("EXPECTED EVERY TEST TO FAIL, but some passed: a test that cannot fail is a defect")
    return status


if __name__ == "__main__":
    sys.exit(main())
