#!/usr/bin/env python3
"""Lab 07's timed tests when the process that runs the student's code is started afresh between
the call's setup and its timing.

A checker stops that process (rather than pausing it) before the reference solution is timed
wherever the pause leaves the GPU busy, where the runner has no PID namespace of its own, and
whenever a checker is run by hand (no idle figure from the grader). A timing that was too slow is
then taken again, in the new process. Lab 07's calls read a mask that an earlier call, set_mask,
copied into constant memory: a new process holds none, so the second timing once computed with
a mask of zeros and the correct solution failed with "the output is wrong for this run's input".
Every timing now runs the call's setup first.

WORKBOOK_FORCE_RUNNER_RESTART=1 has the checker start that process afresh before each timing of
the student's code. The solution must keep every point of the bandwidth test, and the log must
say that the knob was in force (so that this test cannot pass without it).

Needs a GPU (exit 77 without one) and lab 07's solution checker built.

Usage: test_timed_after_a_restart.py --build-dir BUILD
"""
import json
import os
import subprocess
import sys

import support  # gpu_build_dir

TEST = "performance: direct bandwidth against the reference at 8192 x 8192"
KNOB_LINE = "started afresh before each timing (WORKBOOK_FORCE_RUNNER_RESTART)"


def main():
    build_dir = support.gpu_build_dir()
    if build_dir is None:
        return support.SKIP
    out = os.path.join(build_dir, "grade", "timed_after_a_restart")
    env = dict(os.environ, WORKBOOK_FORCE_RUNNER_RESTART="1")
    r = subprocess.run([sys.executable, os.path.join(support.SOURCE_DIR, "grading", "driver", "grade.py"),
                        "--build-dir", build_dir, "--lab", "07", "--solutions", "--no-build", "--test", TEST,
                        "--out", out], env=env)
    if r.returncode == support.SKIP:
        print("skipped, nothing was graded: no usable GPU")
        return support.SKIP
    try:
        with open(os.path.join(out, "results.json")) as f:
            tests = json.load(f)["tests"]
        with open(os.path.join(out, "07_convolution.log")) as f:
            log = f.read()
    except (OSError, ValueError, KeyError) as e:
        print("lab 07 was not graded: %s" % e)
        return 1
    found = [t for t in tests if t["name"].endswith(": " + TEST)]
    problems = []
    if len(found) != 1:
        problems.append("%r did not run once: %s" % (TEST, [t["name"] for t in tests]))
    elif found[0]["status"] != "passed" or found[0]["score"] != found[0]["max_score"]:
        problems.append("the solution lost points with its process started afresh before each timing "
                        "(%s of %s):\n%s" % (found[0]["score"], found[0]["max_score"], found[0]["output"]))
    if KNOB_LINE not in log:
        problems.append("the log does not say that the process was started afresh before each timing: "
                        "WORKBOOK_FORCE_RUNNER_RESTART did not reach the checker")
    if problems:
        print("TIMED AFTER A RESTART, WRONG:\n  " + "\n  ".join(problems))
        return 1
    print("%s: %s of %s with the process that runs the solution started afresh before each timing"
          % (TEST, found[0]["score"], found[0]["max_score"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
