"""Running a checker: its process, its signed results, and starting it again after a fault.

A checker runs in its own process group with a fresh seed. Each test's result arrives on a pipe
of its own (WORKBOOK_RESULTS_FD), never parsed from stdout, so text that student code prints
cannot raise a score. Each result line is signed with a key made for this process and handed over
on another pipe (WORKBOOK_KEY_FD); unsigned or wrongly signed lines are ignored.

A test that hangs past its time is killed; a test during which the checker crashed, exited or
lost its GPU context fails, and the checker is started again at the next test, so a fault costs
only the test it happened in. A test that never reported a result counts as failed.
"""
import hashlib
import hmac
import json
import os
import secrets
import selectors
import signal
import subprocess
import sys
import time

from results import Test
from timeouts import TIMEOUT_FLOOR

EXIT_NO_DEVICE = 77        # checker and grader: no usable GPU, nothing was graded
EXIT_CONTEXT_LOST = 75     # checker: a sticky CUDA error; resume in a fresh process


def start_checker(cmd, env_extra, go_fd=None, **popen_args):
    """Starts a checker with a results pipe and a fresh signing key: (process, results fd, key).
    With `go_fd` (the read end of a pipe), it waits for a byte there before its first test."""
    key = secrets.token_hex(32).encode()
    read_fd, write_fd = os.pipe()
    key_read, key_write = os.pipe()
    env = dict(os.environ, WORKBOOK_RESULTS_FD=str(write_fd), WORKBOOK_KEY_FD=str(key_read), **env_extra)
    passed = (write_fd, key_read)
    if go_fd is not None:
        env["WORKBOOK_GO_FD"] = str(go_fd)
        passed += (go_fd,)
    proc = subprocess.Popen(cmd, env=env, pass_fds=passed, **popen_args)
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
            test.practice = str(event.get("practice") or "")  # practice mode: why it is not for grading
            self.on_result(test)
            self.position, self.current, self.started = self.position + 1, None, time.monotonic()
        elif kind == "no_device":
            self.problem = str(event.get("message", "no CUDA device found"))


EXITING = []  # checkers that reported every test and are still exiting (run_checker)


def doctest_report(log_name, position):
    """Where doctest's own report of a checker run from tests[position] goes (each failure
    again, raw); then into the log, so that the student sees each failure once, in the
    grader's block."""
    return "%s.doctest-%d" % (log_name, position + 1)


def checker_command(binary, position, filters, log_name):
    """The command that runs a checker from tests[position] on."""
    return [binary, "--first=%d" % (position + 1), *filters, "--out=" + doctest_report(log_name, position)]


class HeldChecker:
    """A lab's checker started before its turn. The grader grades the labs one after another;
    started while the lab before it runs, the checker starts CUDA and its runners there, and
    holds before anything else (wait_for_turn in checker_main.cpp) until its turn: go() lets it
    run its tests, discard() stops it when its lab does not run it after all."""

    def __init__(self, binary, filters, env_extra, log_name, tests):
        self.tests = tests  # its lab's tests (list_tests of the reference), listed ahead too
        self.env_extra = env_extra  # what it was started with (one_lab.grade_lab compares)
        self.cmd = checker_command(binary, 0, filters, log_name)
        go_read, self.go_write = os.pipe()
        self.proc, self.read_fd, self.key = start_checker(self.cmd, env_extra, go_fd=go_read,
                                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                                          start_new_session=True)
        os.close(go_read)
        self.taken = False

    def go(self):
        """Its turn: the checker starts its tests. Returns (process, results fd, key)."""
        self.taken = True
        try:
            os.write(self.go_write, b"g")
        except OSError:
            pass  # it has already exited: run_checker reads why
        os.close(self.go_write)
        return self.proc, self.read_fd, self.key

    def discard(self):
        """Stops the checker if its turn never came; nothing once go() was called."""
        if self.taken:
            return
        self.taken = True
        os.close(self.go_write)
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.proc.stdout.close()
        os.close(self.read_fd)


def run_checker(binary, run, filters, env_extra, timeout_for, log, verbose, held=None):
    """Starts the checker at run.position (or lets `held`, started ahead at the first test, go)
    and reads its output and its signed events until it exits, or kills it when the test it is
    in runs past its time."""
    cmd = checker_command(binary, run.position, filters, log.name)
    report = doctest_report(log.name, run.position)
    log.write("$ %s\n" % " ".join(cmd))
    log.flush()
    if held is not None and held.cmd == cmd:
        proc, read_fd, signing_key = held.go()
        run.started = time.monotonic()
    else:
        proc, read_fd, signing_key = start_checker(cmd, env_extra, stdout=subprocess.PIPE,
                                                   stderr=subprocess.STDOUT, start_new_session=True)
    events = os.fdopen(read_fd, "rb", buffering=0)
    try:
        follow_checker(proc, events, signing_key, run, timeout_for, log, verbose)
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


def follow_checker(proc, events, signing_key, run, timeout_for, log, verbose):
    """Copies the checker's output into the log and hands its signed events to `run`, until it
    closes both pipes; kills it (run.timed_out) when the test it is in runs past its time."""
    selector = selectors.DefaultSelector()
    selector.register(events, selectors.EVENT_READ, "events")
    selector.register(proc.stdout, selectors.EVENT_READ, "output")
    pending = b""  # the start of an event line whose end has not arrived yet
    while selector.get_map():
        # After the last test, the checker only has to exit: the floor is time enough.
        allowed = timeout_for(run.tests[run.position]) if run.position < len(run.tests) else TIMEOUT_FLOOR
        limit = allowed - (time.monotonic() - run.started)
        if limit <= 0:
            run.timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            return
        # Wake at least once a second: the time left is checked between reads.
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
                pending = take_events(pending + chunk, signing_key, run, log)


def take_events(data, signing_key, run, log):
    """Hands each whole signed line of `data` to run.record, notes in the log how many lines
    were not signed by this run, and returns the unfinished last line."""
    while b"\n" in data:
        line, data = data.split(b"\n", 1)
        accepted, rejected = read_events(line, signing_key)
        if rejected:
            log.write("[grader: ignored %d result line(s) without this run's signature]\n"
                      % rejected)
        for event in accepted:
            run.record(event)
    return data


def reap_checkers(timeout=30):
    """Waits for the checkers still exiting; one that takes longer than `timeout` is killed.
    Then ends whatever they left behind (end_leftovers)."""
    deadline = time.monotonic() + timeout
    while EXITING:
        proc = EXITING.pop()
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    end_leftovers(max(deadline - time.monotonic(), 5.0))


PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


def adopt_leftovers():
    """Makes this process the reaper of every process its checkers leave behind: an orphan below
    it (a process whose parent died, with setsid or without) becomes its child instead of
    init's, so that end_leftovers can find and end it. Linux only; elsewhere it does nothing.

    A checker's runner runs in a PID namespace of its own (grading/judge/sandbox.hpp), and the
    namespace's first process ends every process of it as it exits; but a checker stops its
    runner without waiting for that (CUDA's teardown of the runner would delay the next lab), so
    the namespace may still be ending when the checker has gone. Adopted, its first process is
    waited for here: it is reaped only once its namespace is empty."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def children():
    """The pids of this process's children, from /proc (none where there is no /proc)."""
    me, found = os.getpid(), []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, "rb") as f:
                stat = f.read()
        except OSError:
            continue  # it ended meanwhile
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1 and int(fields[1]) == me:
            found.append(int(entry))
    return found


def end_leftovers(timeout=10.0):
    """Kills and reaps every child this process still has: called once every checker has been
    waited for, when any child left is a process the checkers left behind (adopt_leftovers), or
    the first process of a runner's PID namespace that is still ending. A process that is still
    there after `timeout` seconds is named on stderr."""
    deadline = time.monotonic() + timeout
    pending = set(children())
    while pending:
        for pid in list(pending):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid  # no longer a child of ours
            if done == pid:
                pending.discard(pid)
        pending |= set(children())  # an orphan of one of them comes to us in turn
        if pending and time.monotonic() > deadline:
            sys.stderr.write("grade.py: processes left behind by the checkers did not end within %.0f s "
                             "of SIGKILL: %s\n" % (timeout, " ".join(map(str, sorted(pending)))))
            break
        if pending:
            time.sleep(0.01)


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


def run_tests(binary, tests, filters, env_extra, timeout, log, verbose, on_result, held=None):
    """Runs a checker over `tests` (its list, in run order), restarting it after any fault: the
    test it was in when it hung, crashed or exited fails, and the next process starts after it.

    `timeout` is seconds per test, or a function giving a test's seconds. `held` is this
    checker started ahead (HeldChecker), which the first process is. Returns a lab-level
    problem string ("" if none), e.g. the no-GPU message.
    """
    timeout_for = timeout if callable(timeout) else (lambda test: timeout)
    position = 0                                  # index of the first test not yet finished
    while position < len(tests):
        run = CheckerRun(tests, position, on_result)
        run_checker(binary, run, filters, env_extra, timeout_for, log, verbose, held if position == 0 else None)
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
