#!/usr/bin/env python3
"""How the Slurm runner reads its tasks' states, against made-up squeue and sacct.

    python3 grading/tests/test_slurm_states.py [-v]

unit.slurm runs a real Slurm, but a cluster of one node cannot make a task run out of memory or
lose its node. Here squeue and sacct are two small scripts on PATH that print what a real
cluster prints (sacct's "CANCELLED by 0", an array's pending range "4242_[6-9]"), so every state
the gradebook names is read, counted in the progress line and explained in the student's row.
No GPU, no root, no Slurm needed.
"""
import os
import shutil
import stat
import sys
import tempfile
import unittest

GRADING_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "driver")
sys.path.insert(0, GRADING_DIR)
import slurm  # noqa: E402
import class_slurm  # noqa: E402
import class_student  # noqa: E402

JOB = "4242"
# squeue knows the tasks that are pending or running, and those that ended a moment ago.
SQUEUE = "0|RUNNING\n1|PENDING\n2|COMPLETED\n"
# sacct knows every task that started; it says who cancelled a task, and lists a pending range.
SACCT = "\n".join([
    "4242_0|RUNNING",            # squeue's word wins for a task both know
    "4242_2|COMPLETED",
    "4242_3|OUT_OF_MEMORY",
    "4242_4|NODE_FAIL",
    "4242_5|CANCELLED by 0",
    "4242_6|TIMEOUT",
    "4242_7|FAILED",
    "4242_[9-11]|PENDING",       # not yet started: no state of a task of its own
    "4242_3.batch|OUT_OF_MEMORY",  # --allocations hides steps; were one printed, it is no task
    "4243_8|COMPLETED",           # another job's task 8
]) + "\n"
EXPECTED = {0: "RUNNING", 1: "PENDING", 2: "COMPLETED", 3: "OUT_OF_MEMORY", 4: "NODE_FAIL",
            5: "CANCELLED", 6: "TIMEOUT", 7: "FAILED", 8: "UNKNOWN", 9: "UNKNOWN"}


class FakeSlurm(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bin = tempfile.mkdtemp(prefix="fake-slurm-")
        for name, text in (("squeue", SQUEUE), ("sacct", SACCT)):
            path = os.path.join(cls.bin, name)
            with open(os.path.join(cls.bin, name + ".out"), "w") as f:
                f.write(text)
            with open(path, "w") as f:
                f.write('#!/bin/sh\necho "$@" >> "%s/%s.args"\ncat "%s/%s.out"\n' % (cls.bin, name, cls.bin, name))
            os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        cls.path = os.environ["PATH"]
        os.environ["PATH"] = cls.bin + os.pathsep + cls.path
        cls.states = slurm.task_states(JOB, len(EXPECTED))

    @classmethod
    def tearDownClass(cls):
        os.environ["PATH"] = cls.path
        shutil.rmtree(cls.bin)

    def test_every_task_gets_its_state_from_squeue_then_sacct(self):
        self.assertEqual(self.states, EXPECTED)

    def test_sacct_is_asked_for_this_job_only(self):
        with open(os.path.join(self.bin, "sacct.args")) as f:
            self.assertIn("--jobs=" + JOB, f.read())

    def test_the_progress_line_counts_each_state_where_it_belongs(self):
        kinds = {}
        for state in self.states.values():
            kinds[slurm.kind(state)] = kinds.get(slurm.kind(state), 0) + 1
        self.assertEqual(kinds, {"running": 1, "pending": 1, "done": 1, "failed": 7})

    def test_each_way_a_task_can_fail_is_explained_in_the_students_row(self):
        class Args:
            time = "00:10:00"
        out = tempfile.mkdtemp(prefix="fake-class-")
        try:
            for index, state in self.states.items():
                if slurm.kind(state) != "failed":
                    continue
                student = class_student.Student("s%d" % index, os.path.join(out, "s%d" % index))
                class_slurm.finish_task(student, state, JOB, index, Args, out, {})
                self.assertEqual(student.status, "grading failed", state)
                self.assertIn("Slurm %s: task %s_%d " % (state, JOB, index), student.note)
                self.assertIn(os.path.join(out, "slurm", "%s_%d.log" % (JOB, index)), student.note)
                self.assertNotIn(" ended;", student.note, "%s has no explanation of its own" % state)
            self.assertIn("ran out of memory", class_slurm.WHY["OUT_OF_MEMORY"])
            self.assertIn("node failed", class_slurm.WHY["NODE_FAIL"])
        finally:
            shutil.rmtree(out)


if __name__ == "__main__":
    unittest.main()
