"""The local runner (--runner local, the default): grades a class on this host's GPUs.

grading/grade_class.py makes a LocalRun (the GPUs, the class's seed, a fresh --out), prints its
describe() line, then calls grade(). That runs a pool of threads:
  - builders (--build-jobs of them, niced) configure and build each submission ahead of the
    graders (class_student.prebuild), so that the GPUs are not left waiting for the compiler;
  - graders, one per GPU (a single one when there is none), each take the next built student
    and run grading/grade.py on it with CUDA_VISIBLE_DEVICES set to its own GPU
    (class_student.grade_student), then read its scores (class_student.read_results).
^C stops every process the pool started, checkers included, and the gradebook is not written.
"""
import os
import queue
import secrets
import sys
import threading
import time

import grade
from class_student import (clear_out, grade_student, plural, prebuild, print_lock, read_results,
                           say, score_text, stop_all)


class LocalRun:
    """What grade_class.py's main needs of this runner: the seed, a line saying where the class
    is graded, and grade()."""

    def __init__(self, args, out_dir, to_grade):
        self.args, self.out_dir = args, out_dir
        self.gpus = find_gpus(args.gpus)
        workers = max(1, len(self.gpus))
        # Two builds per grader, so that the next student is built while one is graded (about
        # 35 s for a full-marks student on an H100) even when a build takes longer than that.
        self.build_jobs = args.build_jobs or max(1, min(2 * workers, (os.cpu_count() or 2) // 4))
        self.seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
        clear_out(out_dir)
        for s in to_grade:
            os.makedirs(os.path.join(out_dir, s.key))

    def describe(self):
        if self.gpus:
            return "%s (%s): one student per GPU at a time" % (
                plural(len(self.gpus), "GPU"), ", ".join(g.label for g in self.gpus))
        return "no GPU found (nvidia-smi): every submission is built and every GPU test is skipped"

    def grade(self, to_grade, labs, tests_by_name):
        """Grades every student; returns where, for the summary ("2 GPUs", "no GPU")."""
        grade_here(to_grade, self.args, labs, self.seed, self.out_dir, tests_by_name, self.gpus,
                   self.build_jobs)
        return plural(len(self.gpus), "GPU") if self.gpus else "no GPU"


# ----------------------------------------------------------------------------------------------
# GPUs

class Gpu:
    """label: its name in progress lines; visible: its CUDA_VISIBLE_DEVICES; env: more of its
    grader's environment."""

    def __init__(self, label, visible, env=None):
        self.label, self.visible, self.env = label, visible, env or {}


def find_gpus(requested):
    """--gpus, else the CUDA_VISIBLE_DEVICES we were given, else every GPU nvidia-smi lists
    (by its index, in its PCI bus order, which CUDA_DEVICE_ORDER=PCI_BUS_ID makes CUDA's too)."""
    if requested is None and os.environ.get("CUDA_VISIBLE_DEVICES") is not None:
        requested = os.environ["CUDA_VISIBLE_DEVICES"]
    if requested is not None:
        return [Gpu(g.strip(), g.strip()) for g in requested.split(",") if g.strip()]
    return [Gpu(i, i, {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}) for i in grade.nvidia_smi_gpus()]


# ----------------------------------------------------------------------------------------------
# The pool: builders feeding one grader per GPU

def grade_here(to_grade, args, labs, seed, out_dir, tests_by_name, gpus, build_jobs):
    """Grades every student on this machine's GPUs (or with none), one at a time per GPU."""
    pool = Pool(to_grade, args, labs, seed, out_dir, tests_by_name, build_jobs)
    builders = [threading.Thread(target=pool.builder, daemon=True) for _ in range(build_jobs)]
    graders = [threading.Thread(target=pool.grader, args=(gpu,), daemon=True) for gpu in (gpus or [None])]
    try:
        run_pool(builders, graders, pool.ready)
    except KeyboardInterrupt:
        stop_all()
        sys.exit("interrupted: the gradebook was not written")


def run_pool(builders, graders, ready):
    """Starts every thread and waits for the builders; then a None per grader, after the last
    built student, tells each grader to stop, and it waits for them."""
    for t in builders + graders:
        t.start()
    for t in builders:
        join(t)
    for _ in graders:
        ready.put(None)
    for t in graders:
        join(t)


def join(thread):
    # In short slices: a join without a timeout would hold ^C off until the thread ends.
    while thread.is_alive():
        thread.join(0.5)


class Pool:
    """The students on their way: builders take them from `pending`, build them and put them in
    `ready`; graders take them from `ready`, grade them and print their scores."""

    def __init__(self, to_grade, args, labs, seed, out_dir, tests_by_name, build_jobs):
        self.args, self.labs, self.seed, self.out_dir = args, labs, seed, out_dir
        self.tests_by_name = tests_by_name
        self.pending, self.ready = queue.Queue(), queue.Queue()
        for s in to_grade:
            self.pending.put(s)
        self.count, self.done = len(to_grade), 0      # done: graded so far, under print_lock
        # The CPUs, shared among the builders that run side by side.
        self.jobs_each = max(1, (os.cpu_count() or 2) // build_jobs)
        self.possible = sum(lab.max_score for lab in labs)
        self.possible_bonus = sum(lab.max_bonus for lab in labs)

    def builder(self):
        """One builder thread: builds the students left to build, one after another."""
        while True:
            try:
                s = self.pending.get_nowait()
            except queue.Empty:
                return
            self.build(s)
            self.ready.put(s)

    def build(self, s):
        t0 = time.monotonic()
        try:
            s.note = prebuild(s, self.args.build_dir, self.labs, self.out_dir, self.jobs_each)
        except Exception as e:  # a broken student must not stop the class
            s.note = "could not build it: %r" % e
        say("        built %s (%.0f s)%s" % (s.name, time.monotonic() - t0,
                                           ": " + s.note if s.note else ""))

    def grader(self, gpu):
        """One grader thread, on one GPU (None: no GPU): grades built students until a None.
        A student whose build could not even be configured (a note) keeps that note as their
        row, "grading failed"."""
        where = "on GPU %s" % gpu.label if gpu else "(no GPU)"
        while True:
            s = self.ready.get()
            if s is None:
                return
            if not s.note:
                say("        start %s %s" % (s.name, where))
                self.grade(s, gpu)
            self.report(s, where)

    def grade(self, s, gpu):
        try:
            status = grade_student(s, gpu, self.args, self.seed, self.out_dir)
            read_results(s, status, self.out_dir, self.tests_by_name, self.args.student_timeout)
        except Exception as e:  # as in build: a row for this student, and the class goes on
            s.status, s.note = "grading failed", "grade_class.py: %r" % e

    def report(self, s, where):
        """The student's progress line: "[2/30] name on GPU 1: 80/100 (35 s)"."""
        with print_lock:
            self.done += 1
            print("[%*d/%d] %s %s: %s (%.0f s)" % (
                len(str(self.count)), self.done, self.count, s.name, where,
                score_text(s, self.possible, self.possible_bonus), s.seconds), flush=True)
