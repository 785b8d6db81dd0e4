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

Outputs, under <build>/grade/: results.json (Gradescope's format), junit.xml, and one log per lab
with everything the checker printed.

On a cluster's login node, which has no GPU: --runner slurm (make check LAB=NN RUNNER=slurm) runs
this same command through `srun --gres=gpu:1` on a GPU of the cluster, its output streamed live
and its exit status srun's. Run locally on a machine with no GPU but with srun, the grader says so
and names that command.
"""
import argparse
import contextlib
import hashlib
import hmac
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
references_timing_announced = False  # make grade said once that it times the references first
device_problem_announced = False      # ... and, with no usable GPU, why no lab is graded
TIMEOUT_FACTOR = 10        # a test may take this many times the reference solution's time...
TIMEOUT_FLOOR = 20.0       # ...and never less than this many seconds
REFERENCE_TIMEOUT = 300.0  # while the reference solution itself is timed
PROFILE_ALLOWANCE = 150.0  # more for a performance test: a slow kernel is explained by two ncu runs
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
    def __init__(self, lab_id, source, folder=None):
        self.id, self.source, self.dir = lab_id, source, folder or lab_id
        self.number, _, name = lab_id.partition("_")
        self.title = name.replace("_", " ")
        self.tests = []
        self.problem = ""        # a lab-level failure: compile error, no GPU, ...
        self.not_started = ""    # "not started: ..." when the file is still as handed out
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
    # The workbook's build folder writes prebuilt.cmake, which submissions' builds link from;
    # one that an older workbook configured lacks it, and is configured again.
    if (os.path.exists(os.path.join(build_dir, "CMakeCache.txt")) and not extra_args
            and os.path.exists(os.path.join(build_dir, "prebuilt.cmake"))):
        return
    r = run_quiet(["cmake", "-S", SOURCE_DIR, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                   *extra_args])
    if r.returncode != 0:
        if extra_args:  # a submission's folder: the next run must configure it again, not trust it
            with contextlib.suppress(OSError):
                os.remove(os.path.join(build_dir, "CMakeCache.txt"))
        sys.exit("cmake could not configure %s:\n%s" % (build_dir, r.stdout))


def build(build_dir, target):
    """Builds one target; returns (ok, compiler output)."""
    r = run_quiet(["cmake", "--build", build_dir, "--target", target, "--parallel"])
    return r.returncode == 0, r.stdout


def build_checkers_command(build_dir, labs, suffix="", jobs=None):
    """The command that builds these labs' checkers (check_<lab><suffix>) in one build, side by
    side on `jobs` CPUs (default: those this process may use), going on past a lab that does not
    compile. The Makefile generator builds the targets named on one command line one after
    another, so every lab's checkers are built through the one target that depends on them all,
    check_all or check_all_solution."""
    with open(os.path.join(build_dir, "workbook.json")) as f:
        every_lab = sorted(entry["id"] for entry in json.load(f)["labs"])
    if suffix in ("", "_solution") and sorted(lab.id for lab in labs) == every_lab:
        targets = ["check_all" + suffix]
    else:
        targets = ["check_%s%s" % (lab.id, suffix) for lab in labs]
    jobs = jobs or len(os.sched_getaffinity(0))
    keep_going = ["-k", "0"] if "Ninja" in cmake_cache_value(build_dir, "CMAKE_GENERATOR") else ["-k"]
    return ["cmake", "--build", build_dir, "--parallel", str(jobs), "--target", *targets, "--", *keep_going]


def build_references(trusted_build_dir):
    """Builds every lab's reference checker in the workbook's own build folder: a submission's
    folder links their objects (prebuilt.cmake), and CMake cannot configure it before they exist
    (on a fresh machine, `make grade SUBMISSION=...` comes before any other build)."""
    with open(os.path.join(trusted_build_dir, "workbook.json")) as f:
        every_lab = [Lab(entry["id"], entry["source"], entry.get("dir")) for entry in json.load(f)["labs"]]
    started = time.monotonic()
    print("building the reference checkers first...", end=" ", flush=True)
    r = run_quiet(build_checkers_command(trusted_build_dir, every_lab, "_solution"))
    if r.returncode != 0:
        sys.exit("\nthe reference checkers do not build:\n" + compiler_errors(r.stdout))
    print("done (%.0f s)" % (time.monotonic() - started), flush=True)


def build_up_front(build_dir, trusted_build_dir, labs, suffix):
    """Builds the reference checkers and then the graded ones, each set in one parallel build.
    Returns whether everything built: if not, grade_lab builds each lab again, and a lab that
    does not compile gets its own errors."""
    started = time.monotonic()
    print("building the checkers...", end=" ", flush=True)
    ok = run_quiet(build_checkers_command(trusted_build_dir, labs, "_solution")).returncode == 0
    if (build_dir, suffix) != (trusted_build_dir, "_solution"):
        ok = run_quiet(build_checkers_command(build_dir, labs, suffix)).returncode == 0 and ok
    print("%s (%.0f s)" % ("done" if ok else "not all of them build: each lab is built again below",
                           time.monotonic() - started), flush=True)
    return ok


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

def start_checker(cmd, env_extra, **popen_args):
    """Starts a checker with a results pipe and a fresh signing key: (process, results fd, key)."""
    key = secrets.token_hex(32).encode()
    read_fd, write_fd = os.pipe()
    key_read, key_write = os.pipe()
    env = dict(os.environ, WORKBOOK_RESULTS_FD=str(write_fd), WORKBOOK_KEY_FD=str(key_read), **env_extra)
    proc = subprocess.Popen(cmd, env=env, pass_fds=(write_fd, key_read), **popen_args)
    os.close(write_fd)
    os.close(key_read)
    os.write(key_write, key)  # 64 bytes: fits in any pipe, never blocks
    os.close(key_write)
    return proc, read_fd, key


def read_events(data, key):
    """The events among a checker's result lines that carry this run's signature, and how many
    lines did not."""
    events, rejected = [], 0
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        body, _, mac = line.rpartition(b"\t")
        expected = hmac.new(key, body, hashlib.sha256).hexdigest().encode()
        if not body or not hmac.compare_digest(expected, mac):
            rejected += 1
            continue
        try:
            event = json.loads(body.decode("utf-8", "replace"))
        except ValueError:
            rejected += 1
            continue
        if isinstance(event, dict) and "event" in event:
            events.append(event)
    return events, rejected


def list_tests(binary, filters):
    """The tests a checker holds, with their points, in the order it runs them."""
    proc, read_fd, key = start_checker([binary, "--list-test-cases", *filters], {},
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with os.fdopen(read_fd, "rb") as pipe:
        data = pipe.read()
    proc.wait()
    for event in read_events(data, key)[0]:
        if event["event"] == "list":
            return [Test(t["name"], int(t["points"]), int(t.get("bonus", 0))) for t in event["tests"]]
    raise RuntimeError("%s did not list its tests" % binary)


class CheckerRun:
    """One checker process, from its start at tests[position] to its exit: which tests it
    finished, which one it was in, and whether it ran out of time or found no GPU."""

    def __init__(self, tests, position, on_result):
        self.tests, self.position, self.on_result = tests, position, on_result
        self.first = position
        self.current = None                # the test it reported starting and has not ended
        self.started = time.monotonic()    # when that test (or the process) started
        self.timed_out = False
        self.problem = ""                  # a lab-level problem it reported, e.g. no GPU
        self.returncode = None

    def record(self, event):
        """Takes one signed event from the results channel."""
        kind = event["event"]
        if kind == "start":
            self.current, self.started = event.get("name"), time.monotonic()
        elif kind == "end" and self.position < len(self.tests) and event.get("name") == self.tests[self.position].name:
            test = self.tests[self.position]
            test.status = ("skipped" if event.get("skipped") is True else
                           "passed" if event.get("passed") is True else "failed")
            test.output = str(event.get("output", ""))
            test.seconds = float(event.get("seconds", 0))
            self.on_result(test)
            self.position, self.current, self.started = self.position + 1, None, time.monotonic()
        elif kind == "no_device":
            self.problem = str(event.get("message", "no CUDA device found"))


def run_checker(binary, run, filters, env_extra, timeout_for, log, verbose):
    """Starts the checker at run.position and reads its output and its signed events until it
    exits, or kills it when the test it is in runs past its time."""
    # doctest's own report (each failure again, raw) goes to a file and then into the log: the
    # student sees each failure once, in the grader's block.
    report = "%s.doctest-%d" % (log.name, run.position + 1)
    cmd = [binary, "--first=%d" % (run.position + 1), *filters, "--out=" + report]
    log.write("$ %s\n" % " ".join(cmd))
    log.flush()
    proc, read_fd, signing_key = start_checker(cmd, env_extra, stdout=subprocess.PIPE,
                                               stderr=subprocess.STDOUT, start_new_session=True)
    events = os.fdopen(read_fd, "rb", buffering=0)
    selector = selectors.DefaultSelector()
    selector.register(events, selectors.EVENT_READ, "events")
    selector.register(proc.stdout, selectors.EVENT_READ, "output")
    pending = b""
    try:
        while selector.get_map():
            # After the last test, the checker only has to exit: the floor is time enough.
            allowed = timeout_for(run.tests[run.position]) if run.position < len(run.tests) else TIMEOUT_FLOOR
            limit = allowed - (time.monotonic() - run.started)
            if limit <= 0:
                run.timed_out = True
                os.killpg(proc.pid, signal.SIGKILL)
                break
            for key, _ in selector.select(timeout=min(limit, 1.0)):
                chunk = os.read(key.fileobj.fileno(), 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                elif key.data == "output":
                    text = chunk.decode("utf-8", "replace")
                    log.write(text)
                    if verbose:
                        sys.stdout.write(text)
                        sys.stdout.flush()
                else:
                    pending += chunk
                    while b"\n" in pending:
                        line, pending = pending.split(b"\n", 1)
                        accepted, rejected = read_events(line, signing_key)
                        if rejected:
                            log.write("[grader: ignored %d result line(s) without this run's signature]\n"
                                      % rejected)
                        for event in accepted:
                            run.record(event)
    except BaseException:
        # Interrupted (^C, SIGTERM, a closed output): the checker, in a session of its own, would
        # otherwise run on with no one to stop a kernel that never ends.
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    events.close()
    proc.stdout.close()
    if run.position >= len(run.tests) and proc.poll() is None:
        # Every test reported and the output closed: what is left is CUDA tearing the process
        # down, which the next lab need not wait for (reap_checkers waits at the end).
        EXITING.append(proc)
        log.write("[checker reported every test; its exit is awaited at the end]\n")
    else:
        proc.wait()
        run.returncode = proc.returncode
        log.write("[checker exit status %s]\n" % proc.returncode)
    copy_report_into_log(report, log)


EXITING = []  # checkers that reported every test and are still exiting (run_checker)


def reap_checkers(timeout=30):
    """Waits for the checkers still exiting; one that takes longer than `timeout` is killed."""
    deadline = time.monotonic() + timeout
    while EXITING:
        proc = EXITING.pop()
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def blame(run, allowed):
    """Why the checker stopped inside the test at run.position, for that test's message."""
    if run.timed_out:
        return ("timed out after %.0f s and was stopped. Does a kernel loop forever, or wait at a "
                "__syncthreads() that some threads never reach?" % allowed)
    if run.current is None:
        return "the checker exited before this test started (exit status %s)" % describe_status(run.returncode)
    if run.returncode == EXIT_CONTEXT_LOST:
        return "a sticky CUDA error destroyed the GPU context during this test (see the log)"
    if run.returncode is not None and run.returncode >= 0:
        return ("the checker exited with status %d in the middle of this test: does code in the lab "
                "call exit() or abort()?" % run.returncode)
    return "the checker died during this test (%s): host code crashed." % describe_status(run.returncode)


def run_tests(binary, tests, filters, env_extra, timeout, log, verbose, on_result):
    """Runs a checker over `tests` (its list, in run order), restarting it after any fault: the
    test it was in when it hung, crashed or exited fails, and the next process starts after it.

    `timeout` is seconds per test, or a function giving a test's seconds. Returns a lab-level
    problem string ("" if none), e.g. the no-GPU message.
    """
    timeout_for = timeout if callable(timeout) else (lambda test: timeout)
    position = 0                                  # index of the first test not yet finished
    while position < len(tests):
        run = CheckerRun(tests, position, on_result)
        run_checker(binary, run, filters, env_extra, timeout_for, log, verbose)
        position = run.position
        if run.problem or run.returncode == EXIT_NO_DEVICE:
            return run.problem or "no CUDA device found"
        if position >= len(tests):
            break
        if run.current is None and position > run.first:
            continue    # it stopped between tests (a crash it reported, a lost context): go on
        test = tests[position]
        test.status, test.seconds = "failed", time.monotonic() - run.started
        test.output = blame(run, timeout_for(test))
        on_result(test)
        position += 1
    return ""


def copy_report_into_log(report, log):
    """Appends doctest's report of one checker process to the lab's log, and removes the file."""
    try:
        with open(report, encoding="utf-8", errors="replace") as f:
            text = f.read()
        os.remove(report)
    except OSError:
        return
    if text.strip():
        log.write("[doctest's report]\n%s" % text)


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

def nvidia_smi_gpus():
    """The indices of the GPUs nvidia-smi lists (none when it is missing or fails)."""
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return []
    if r.returncode != 0:
        return []
    return [i for i in (line.strip() for line in r.stdout.splitlines()) if i.isdigit()]


def probe_device(build_dir, no_build=False):
    """Runs device_query once: the GPU's facts and ceilings (copy and cuBLAS SGEMM), measured
    once and shared by every checker instead of once per lab. With no_build, a device_query
    already built is used as it is."""
    query = os.path.join(build_dir, "bin", "device_query")
    if not (no_build and os.path.exists(query)):
        ok, output = build(build_dir, "device_query")
        if not ok:
            sys.exit("could not build device_query:\n" + compiler_errors(output))
    r = subprocess.run([query, "--sgemm"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    try:
        facts = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        facts = {"ok": False, "message": r.stderr.strip() or "device_query failed"}
    return facts


# ----------------------------------------------------------------------------------------------
# Reports

def short_reason(output):
    """What `make grade` shows under a failing test: the message's first line and its hint. The
    rest (maps, counters, sanitizer reports) stays in the lab's log, report.html and make check."""
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    if not lines:
        return []
    head = lines[0]
    if head.endswith(":") and len(lines) > 1 and not lines[1].startswith("Hint:"):
        head += " " + lines[1]  # "launch_x, 31 x 33:" names the case; the next line says what is wrong
    hint = next((line for line in lines[1:] if line.startswith("Hint:")), "")
    return [head] + ([hint] if hint else [])


def reason_key(reason):
    """A reason without the case it was seen in and without its counts: "launch_vector_add,
    n = 1000: c: 232 of 1000 elements are wrong" and "..., n = 1023: c: 255 of 1023 elements are
    wrong" are the same reason."""
    return [re.sub(r"\d+(\.\d+)?", "#", re.sub(r"^[A-Za-z_]\w*, [^:]*: ", "", line)) for line in reason]


class ReasonsSeen:
    """The reasons shown so far in one lab: make grade and report.html group them alike."""

    def __init__(self):
        self.keys = []

    def repeats(self, reason):
        """Whether this reason was shown before in the lab (and, if not, it is now)."""
        key = reason_key(reason)
        if key in self.keys:
            return True
        self.keys.append(key)
        return False


class TestPrinter:
    """Prints a lab's tests as they finish: one line each, with points and time. Under a failing
    test, `verbose` (make check) shows everything it printed; otherwise its reason, and only the
    first time that reason appears in the lab ("same reason as above" after). A lab that is not
    started prints nothing here: grade_lab says so in one sentence."""

    def __init__(self, verbose, quiet=False):
        self.verbose, self.quiet = verbose, quiet
        self.seen, self.hints = ReasonsSeen(), []

    def __call__(self, test):
        if self.quiet:
            return
        mark = {"passed": "OK  ", "failed": "FAIL", "skipped": "SKIP"}[test.status]
        if test.points:
            worth = "%d/%d" % (test.score if test.status == "passed" else 0, test.points)
        else:
            worth = "%d/%d bonus" % (test.score, test.bonus)
        name = test.name if len(test.name) <= 62 else test.name[:59] + "..."
        print("  %s %s %s %-8s %5.1fs" % (name, "." * (64 - len(name)), mark, worth, test.seconds))
        for line in self.detail(test):
            print("        " + line)
        sys.stdout.flush()

    def detail(self, test):
        if not test.output or not (test.status == "failed" or test.output.strip()):
            return []
        lines = test.output.rstrip().splitlines()
        if self.verbose:
            return lines[:40] + (["... (%d more lines in the log)" % (len(lines) - 40)] if len(lines) > 40 else [])
        if test.status == "passed":
            return lines[:1]  # its headline figure ("your kernel: 2548 GB/s = 86% of copy ...")
        reason = short_reason(test.output)
        if self.seen.repeats(reason):
            return ["same reason as above"]
        if len(reason) > 1 and reason[1] in self.hints:
            return reason[:1]  # its hint was given above, word for word
        self.hints += reason[1:]
        return reason


def first_todo(path):
    """The first "TODO n" comment of a lab file: (line number, its first sentence), or None."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for number, line in enumerate(lines, 1):
        match = re.search(r"//\s*(TODO\s*\d+\b.*)$", line)
        if not match:
            continue
        text = match.group(1).strip()
        for more in lines[number:]:  # the comment's next lines, up to its end or the next TODO
            follow = re.match(r"\s*//\s+(\S.*)$", more)
            if not follow or "TODO" in follow.group(1) or text.endswith(":"):
                break  # (a line ending in ":" introduces code, which the file shows better)
            text += " " + follow.group(1).strip()
        text = " ".join(text.split()).rstrip(":")
        sentence = re.match(r"(.*?[.;])(\s|$)", text)
        text = sentence.group(1) if sentence else text
        return number, text if len(text) <= 160 else text[:157] + "..."
    return None


def file_sha256(path):
    """A file's SHA-256 (hex), or None where there is no such file."""
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def skeleton_hashes():
    """labs/skeletons.sha256, in sha256sum's format: {"01_vector_add/vector_add.cu": SHA-256} for
    each lab file as handed out (`make test` checks the list against the skeletons)."""
    listed = {}
    with open(os.path.join(SOURCE_DIR, "labs", "skeletons.sha256")) as f:
        for line in f:
            if line.strip():
                digest, name = line.split(None, 1)
                listed[name.strip().lstrip("*")] = digest
    return listed


def handed_out(path, name):
    """Whether a lab file is still exactly as handed out: its SHA-256 is the one listed for `name`
    (e.g. 01_vector_add/vector_add.cu) in labs/skeletons.sha256."""
    try:
        listed = skeleton_hashes()
    except (OSError, ValueError):
        return False
    return name in listed and file_sha256(path) == listed[name]


def not_started_sentence(path, name, display_path):
    """"not started: ..." for a lab file still as handed out, naming its first TODO; or ""."""
    if not handed_out(path, name):
        return ""
    todo = first_todo(path)
    if not todo:
        return "not started: %s is as handed out" % display_path
    return "not started (the file is as handed out): begin at %s:%d, %s" % (display_path, todo[0], todo[1])


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


def write_report_html(path, labs, seed, device, seconds):
    """report.html beside results.json: one self-contained page, a bar per lab, every test's
    status and points, and each failing test's reason (grouped as make grade groups them) with
    its whole message a click away."""
    from html import escape
    css = ("body{font:14px/1.4 sans-serif;margin:2em auto;max-width:60em;color:#222}"
           "h2{margin:1.6em 0 .4em}table{border-collapse:collapse;width:100%}"
           "td{padding:2px 8px;border-bottom:1px solid #eee;vertical-align:top}"
           ".track{background:#eee;height:1.2em;border-radius:3px;overflow:hidden}"
           ".bar{background:#2e7d32;height:100%}.passed{color:#2e7d32}.failed{color:#c62828}"
           ".skipped{color:#8d6e00}pre{background:#fafafa;border-left:3px solid #c62828;"
           "padding:.4em .8em;white-space:pre-wrap;margin:.2em 0 .6em}.n{text-align:right}"
           "summary{cursor:pointer;color:#555}")
    total, possible = sum(lab.score for lab in labs), sum(lab.max_score for lab in labs)
    bonus, possible_bonus = sum(lab.bonus for lab in labs), sum(lab.max_bonus for lab in labs)
    out = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
           "<title>Grade report: %d/%d</title><link rel='icon' href='data:,'><style>%s</style></head><body>" % (total, possible, css),
           "<h1>Score: %d/%d%s</h1>" % (total, possible,
                                        " +%d/%d bonus" % (bonus, possible_bonus) if possible_bonus else ""),
           "<p>seed %d (replay: <code>make grade SEED=%d</code>); device: %s; %.1f s</p>" % (
               seed, seed, escape(device.get("device", device.get("message", "none"))), seconds),
           "<table>"]
    for lab in labs:
        width = (100.0 * lab.score / lab.max_score if lab.max_score else
                 100.0 * lab.bonus / lab.max_bonus if lab.max_bonus else 0)
        out.append("<tr><td>Lab %s %s</td><td style='width:50%%'><div class='track'><div class='bar' "
                   "style='width:%.1f%%'></div></div></td><td class='n'>%s</td></tr>"
                   % (escape(lab.number), escape(lab.title), width, escape(lab.summary())))
    out.append("</table>")
    for lab in labs:
        out.append("<h2 id='lab-%s'>Lab %s %s: %s</h2>" % (escape(lab.id), escape(lab.number),
                                                       escape(lab.title), escape(lab.summary())))
        if lab.problem:
            out.append("<pre>%s</pre>" % escape(lab.problem))
        if lab.not_started:
            # One sentence, as make grade says it; the tests stay a click away.
            out.append("<p class='skipped'>%s</p><details><summary>its %d tests</summary>"
                       % (escape(lab.not_started), len(lab.tests)))
        out.append("<table>")
        seen = ReasonsSeen()
        for t in lab.tests:
            worth = ("%d/%d" % (t.score, t.points) if t.points else "%d/%d bonus" % (t.score, t.bonus))
            out.append("<tr><td class='%s'>%s</td><td>%s</td><td class='n'>%s</td><td class='n'>"
                       "%.1f s</td></tr>" % (t.status, t.status.upper(), escape(t.name), worth,
                                             t.seconds))
            if t.status == "failed" and t.output.strip() and t.output != lab.problem:
                reason = short_reason(t.output)
                shown = ("same reason as above" if seen.repeats(reason)
                         else "<br>".join(escape(line) for line in reason))
                out.append("<tr><td></td><td colspan='3'>%s<details><summary>every detail</summary>"
                           "<pre>%s</pre></details></td></tr>" % (shown, escape(t.output)))
            elif t.status == "skipped" and t.output and t.output != lab.problem:
                out.append("<tr><td></td><td colspan='3' class='skipped'>%s</td></tr>"
                           % escape(t.output))
        out.append("</table>")
        if lab.not_started:
            out.append("</details>")
    out.append("</body></html>\n")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out))


# ----------------------------------------------------------------------------------------------
# Grading

def reference_cache(trusted_build_dir):
    return os.path.join(trusted_build_dir, "grade", "reference_times.json")


def reference_stamp(trusted, device):
    """What the cached times depend on: the GPU and the reference checker's build."""
    return {"device": device.get("device", ""), "built": os.path.getmtime(trusted)}


def load_reference_times(trusted_build_dir):
    try:
        with open(reference_cache(trusted_build_dir)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def remember_reference_times(trusted_build_dir, lab, trusted, device):
    """Keeps each test's time from a run of the reference solution on this GPU."""
    cache = load_reference_times(trusted_build_dir)
    cache[lab.id] = {"stamp": reference_stamp(trusted, device),
                     "seconds": {t.name: t.seconds for t in lab.tests if t.status == "passed"}}
    os.makedirs(os.path.dirname(reference_cache(trusted_build_dir)), exist_ok=True)
    with open(reference_cache(trusted_build_dir), "w") as f:
        json.dump(cache, f, indent=1)


def test_timeouts(lab, trusted, trusted_build_dir, env_extra, device, args, log):
    """Seconds each test may take: --timeout if given, else from the reference's own times; a
    performance test also gets the time to explain a slow kernel with Nsight Compute."""
    def allowance(test):
        return PROFILE_ALLOWANCE if "performance" in test.name else 0.0
    if args.timeout:
        return lambda test: args.timeout + allowance(test)
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
        remember_reference_times(trusted_build_dir, reference_lab, trusted, device)
        entry = load_reference_times(trusted_build_dir)[lab.id]
    seconds = entry["seconds"]
    said = ("timeouts: %dx the reference solution's time per test on this GPU, at least %.0f s"
            % (TIMEOUT_FACTOR, TIMEOUT_FLOOR))
    log.write(said + "\n")
    if args.verbose:
        print("  " + said)
    return lambda test: (max(TIMEOUT_FLOOR, TIMEOUT_FACTOR * seconds.get(test.name, REFERENCE_TIMEOUT))
                         + allowance(test))


def grade_lab(lab, build_dir, trusted_build_dir, target, filters, env_extra, device, args, log_dir,
              built=False):
    """Builds (unless `built` up front, or --no-build) and runs one lab's checker."""
    print("\nLab %s: %s" % (lab.number, lab.title))
    lab.log_path = os.path.join(log_dir, "%s.log" % lab.id)
    build_each = not args.no_build and not built
    with open(lab.log_path, "w") as log:
        if build_each:
            ok, output = build(trusted_build_dir, "check_%s_solution" % lab.id)
            if not ok:
                sys.exit("the reference checker of lab %s does not build:\n%s"
                         % (lab.id, compiler_errors(output)))
        trusted = os.path.join(trusted_build_dir, "bin", "check_%s_solution" % lab.id)
        lab.tests = list_tests(trusted, filters)

        student_file = os.path.join(labs_dir_of(build_dir), lab.dir, lab.source)
        if not args.no_build and not args.solutions and not args.variant and not os.path.exists(student_file):
            lab.problem = "is missing from the submission (no %s), so every test scores 0" % student_file
            for t in lab.tests:
                t.output = lab.problem
            print("  " + lab.problem)
            return
        if build_each:
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
            # Said once, above every lab: the same words under each of ten labs would hide the rest.
            global device_problem_announced
            print("  skipped, not graded: %s" % ("the same reason as above" if device_problem_announced
                                                 else lab.problem))
            device_problem_announced = True
            return
        binary = os.path.join(build_dir, "bin", target)
        timeout = test_timeouts(lab, trusted, trusted_build_dir, env_extra, device, args, log)
        if not args.solutions and not args.variant:
            shown = os.path.relpath(student_file)
            lab.not_started = not_started_sentence(student_file, "%s/%s" % (lab.dir, lab.source),
                                                   student_file if shown.startswith("..") else shown)
        printer = TestPrinter(args.verbose, quiet=bool(lab.not_started) and not args.verbose)
        problem = run_tests(binary, lab.tests, filters, env_extra, timeout, log, args.verbose, printer)
        if lab.not_started and lab.score + lab.bonus == 0:
            print("  " + lab.not_started)
        elif lab.not_started:
            lab.not_started = ""  # it scores after all: show its tests as any other lab's
            replay = TestPrinter(args.verbose)
            for t in lab.tests:
                replay(t)
        if args.solutions and not problem and not filters:
            remember_reference_times(trusted_build_dir, lab, trusted, device)
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
    p.add_argument("--timeout", type=float,
                   help="seconds per test (default: %d times the reference's time, at least %.0f s)"
                   % (TIMEOUT_FACTOR, TIMEOUT_FLOOR))
    p.add_argument("--verbose", action="store_true", help="also show everything the checker prints")
    p.add_argument("--no-build", action="store_true", help="use the binaries already built")
    p.add_argument("--out", help="where results.json, junit.xml and logs go (default <build>/grade)")
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


def submission_options(trusted_build_dir, submission):
    """CMake's options for a submission's build folder: the student's labs, grading only, the
    trusted build's GPU architectures, and its libraries, checker objects and references
    (WORKBOOK_PREBUILT), so that only the student's own files are compiled."""
    return ["-DCMAKE_BUILD_TYPE=Release", "-DWORKBOOK_LABS_DIR=" + submission, "-DWORKBOOK_GRADE_ONLY=ON",
            "-DCMAKE_CUDA_ARCHITECTURES=" + cmake_cache_value(trusted_build_dir, "CMAKE_CUDA_ARCHITECTURES"),
            "-DWORKBOOK_PREBUILT=" + trusted_build_dir]


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
        # Configure on first use, and again whenever the folder was last built from another path.
        # It compiles the student's files only and links the rest from this build (prebuilt.cmake).
        if (not os.path.exists(os.path.join(build_dir, "CMakeCache.txt"))
                or cmake_cache_value(build_dir, "WORKBOOK_LABS_DIR") != submission
                or cmake_cache_value(build_dir, "WORKBOOK_PREBUILT") != trusted_build_dir):
            if not args.no_build:
                build_references(trusted_build_dir)
            configure(build_dir, submission_options(trusted_build_dir, submission))

    with open(os.path.join(build_dir, "workbook.json")) as f:
        manifest = json.load(f)
    labs = [Lab(entry["id"], entry["source"], entry.get("dir")) for entry in manifest["labs"]]
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
    device = probe_device(trusted_build_dir, args.no_build)
    env_extra = {"WORKBOOK_SEED": str(seed)}
    if device.get("ok"):
        sgemm = float(device.get("sgemm_gflops", 0))
        print("device: %s; copy ceiling %.0f GB/s, cuBLAS SGEMM %.0f GFLOP/s"
              % (device["device"], device["copy_gbs"], sgemm))
        env_extra["WORKBOOK_COPY_GBS"] = "%.3f" % device["copy_gbs"]
        if sgemm > 0:
            env_extra["WORKBOOK_SGEMM_GFLOPS"] = "%.3f" % sgemm
    else:
        print("%s\nEvery GPU test is skipped: nothing is graded." % device.get("message"))
        print_slurm_hint(args)

    out_dir = os.path.abspath(args.out or os.path.join(build_dir, "grade"))
    os.makedirs(out_dir, exist_ok=True)
    filters = ["--test-case=" + args.test] if args.test else []
    suffix = "_solution" if args.solutions else "__" + args.variant if args.variant else ""
    built = not args.no_build and build_up_front(build_dir, trusted_build_dir, labs, suffix)
    for lab in labs:
        grade_lab(lab, build_dir, trusted_build_dir, "check_%s%s" % (lab.id, suffix), filters,
                  env_extra, device, args, out_dir, built)

    reap_checkers()
    print("")
    previous = None
    for lab in labs:
        problem = lab.problem.splitlines()[0] if lab.problem else ""
        note = "" if not problem else " (the same as above)" if problem == previous else " (%s)" % problem
        previous = problem
        print("Lab %s %-24s %s%s" % (lab.number, lab.title, lab.summary(), note))
    total, possible = sum(lab.score for lab in labs), sum(lab.max_score for lab in labs)
    bonus, possible_bonus = sum(lab.bonus for lab in labs), sum(lab.max_bonus for lab in labs)
    print("Score: %d/%d" % (total, possible))
    if possible_bonus:
        print("Bonus: %d/%d" % (bonus, possible_bonus))
    seconds = time.monotonic() - started
    write_results_json(os.path.join(out_dir, "results.json"), labs, seed, device, seconds)
    write_junit(os.path.join(out_dir, "junit.xml"), labs)
    write_report_html(os.path.join(out_dir, "report.html"), labs, seed, device, seconds)
    print("Reports: %s/results.json, %s/junit.xml, %s/report.html, logs in %s/"
          % (out_dir, out_dir, out_dir, out_dir))
    if device.get("ok") and not args.solutions and not args.variant and not args.test:
        for line in next_step(labs):
            print(line)

    if not device.get("ok"):
        status = EXIT_NO_DEVICE
    elif args.expect == "full":
        status = 0 if total == possible and bonus == possible_bonus else 1
    elif args.expect == "zero":
        status = 0 if total == 0 and bonus == 0 else 1
    else:
        status = 0 if total == possible else 1
    return labs, device, seed, status


def next_step(labs):
    """The last lines of `make grade`: the first lab to work on, and the command that shows all
    of its details."""
    def command(lab):
        shared = sum(1 for other in labs if other.number == lab.number) > 1
        return "make check LAB=%s" % (lab.id if shared else lab.number)

    def first_failure(lab):
        return next((t for t in lab.tests if t.status == "failed"), None)

    for lab in labs:
        missing = lab.max_score - lab.score if lab.max_score else lab.max_bonus - lab.bonus
        if lab.max_score and lab.score == lab.max_score:
            continue
        if not lab.max_score and any(other.max_score and other.score < other.max_score for other in labs):
            continue  # going further waits until every lab has its points
        if not missing:
            continue
        name = "lab %s (%s)" % (lab.number, lab.title)
        if lab.not_started:
            return ["Next: %s is %s" % (name, lab.not_started), "  then run: %s" % command(lab)]
        failed = first_failure(lab)
        where = ', first at "%s"' % failed.name if failed else ""
        return ["Next: %s is missing %d %spoint%s%s." % (name, missing, "" if lab.max_score else "bonus ",
                                                          "" if missing == 1 else "s", where),
                "  every detail (maps, counters, hints): %s" % command(lab)]
    return ["Every lab and every going-further part has full marks."]


def labs_dir_of(build_dir):
    """The copy of labs/ a build folder builds its check_NN targets from."""
    return cmake_cache_value(build_dir, "WORKBOOK_LABS_DIR") or os.path.join(SOURCE_DIR, "labs")


def cmake_cache_value(build_dir, key):
    """A value from a build folder's CMake cache, or "" when it has none."""
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return ""


# ----------------------------------------------------------------------------------------------
# Slurm: a login node has no GPU, its cluster has

def print_slurm_hint(args):
    """On a machine with no GPU but with Slurm's srun (a login node), and not already inside a
    Slurm job: says so, and names the command that grades on a GPU of the cluster."""
    if os.environ.get("SLURM_JOB_ID") or shutil.which("srun") is None or nvidia_smi_gpus():
        return
    print("This machine has no GPU (nvidia-smi lists none), but it has Slurm's srun: to grade on "
          "a GPU of the cluster, run\n    %s RUNNER=slurm" % make_command(args))
    sys.stdout.flush()


def make_command(args):
    """The make command of this grade run: make check LAB=NN, or make grade and its variables."""
    if args.verbose and args.lab:
        words = ["make check", "LAB=" + args.lab]
    else:
        words = ["make grade"] + (["LAB=" + args.lab] if args.lab else [])
        words += ["SUBMISSION=" + args.submission] if args.submission else []
    words += ["SOLUTIONS=1"] if args.solutions else []
    words += ["SEED=%d" % args.seed] if args.seed is not None else []
    return " ".join(words)


def run_on_slurm(args, argv):
    """This very grade run, with --runner local, as one task that srun places on a GPU of the
    cluster: its output comes back live, and its exit status is the grade run's."""
    sys.path.insert(0, os.path.join(SOURCE_DIR, "grading"))
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
    if status == EXIT_NO_DEVICE:
        print_slurm_hint(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
