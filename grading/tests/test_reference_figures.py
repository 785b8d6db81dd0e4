#!/usr/bin/env python3
"""The reference's figure in a grade is checked against the reference run's own (issue 63, item 3).

A grade of the reference solution keeps, with its times, the reference's figure for each timed
call (<build>/grade/reference_times.json, "figures"). A checker grading anyone else is handed
them (WORKBOOK_REFERENCE_FIGURES), and a reference figure further than kReferenceDrift from its
own run's is timed again with the student's process stopped; if it is still off, the reference
run's figure counts, and the "reference:" line says so. Once, in a class on an H100, lab 02's
reference was timed at 15.13 ms per call against 1.28 to 1.32 ms in every other grade, and a
3.3x-slow transpose passed its performance test.

On lab 02:
  1. the solutions graded (--solutions): the performance test's figure is kept, and is plausible;
  2. its performance test again, handed that very figure: full marks, and nothing timed again;
  3. handed a tenth of it, as if the reference had run ten times faster on its own run: the figure
     here is timed again, is still off, the record counts, and the solution, now "10x the
     reference's time", loses the test, with a log that says all of it.

Needs a GPU (exit 77 without one) and lab 02's solution checker built.

Usage: test_reference_figures.py --build-dir BUILD
"""
import json
import os
import subprocess
import sys

import support  # gpu_build_dir

LAB = "02_naive_transpose"
TEST = "performance: bandwidth against the reference at 8192 x 8192"


def grade(build_dir, out, extra_env, *args):
    """grade.py on lab 02's solutions: (its results' tests, its log)."""
    r = subprocess.run([sys.executable, os.path.join(support.SOURCE_DIR, "grading", "driver", "grade.py"),
                        "--build-dir", build_dir, "--lab", "02", "--solutions", "--no-build", "--out", out, *args],
                       env=dict(os.environ, **extra_env))
    if r.returncode == support.SKIP:
        return None, ""
    with open(os.path.join(out, "results.json")) as f:
        tests = json.load(f)["tests"]
    with open(os.path.join(out, LAB + ".log")) as f:
        return tests, f.read()


def the_test(tests):
    found = [t for t in tests if t["name"].endswith(": " + TEST)]
    return found[0] if len(found) == 1 else None


def main():
    build_dir = support.gpu_build_dir()
    if build_dir is None:
        return support.SKIP
    root = os.path.join(build_dir, "grade", "reference_figures_test")
    problems = []

    # 1. The solutions' grade keeps the figure.
    tests, _ = grade(build_dir, os.path.join(root, "solutions"), {})
    if tests is None:
        print("skipped, nothing was graded: no usable GPU")
        return support.SKIP
    with open(os.path.join(build_dir, "grade", "reference_times.json")) as f:
        figures = json.load(f).get(LAB, {}).get("figures", {})
    kept = {name: calls for name, calls in figures.items() if name.endswith(TEST)}
    if len(kept) != 1 or "0" not in list(kept.values())[0]:
        print("REFERENCE FIGURES, WRONG: the solutions' grade kept no figure for %r: %s" % (TEST, figures))
        return 1
    name, calls = list(kept.items())[0]
    ms = calls["0"]
    print("kept: %r, call 0: %.4f ms" % (name, ms))
    if not 0.05 < ms < 50:
        problems.append("the kept figure, %.4f ms, is not a plausible time for an 8192 x 8192 transpose" % ms)

    def handed(figure):
        return {"WORKBOOK_REFERENCE_FIGURES": "0\t%.6g\t%s" % (figure, name)}

    # 2. Handed its own figure: full marks, nothing timed again.
    tests, log = grade(build_dir, os.path.join(root, "same"), handed(ms), "--test", TEST)
    test = the_test(tests or [])
    if test is None or test["status"] != "passed":
        problems.append("handed the reference run's own figure, the solution lost %r:\n%s"
                        % (TEST, test["output"] if test else tests))
    if "timed again with your process stopped" in log:
        problems.append("handed the reference run's own figure, the reference was timed again:\n%s" % log)

    # 3. Handed a tenth of it: timed again, still off, the record counts, the test fails.
    tests, log = grade(build_dir, os.path.join(root, "tenth"), handed(ms / 10), "--test", TEST)
    test = the_test(tests or [])
    if test is None or test["status"] == "passed":
        problems.append("handed a tenth of the reference run's figure, the solution still passed %r" % TEST)
    for said in ("was far from its own run's: the process that runs your code was stopped",
                 "timed again with your process stopped: ",
                 "still off, so the reference run's %.4g ms counts" % (ms / 10)):
        if said not in log:
            problems.append("handed a tenth of the reference run's figure, the log does not say %r" % said)
    if problems:
        print("REFERENCE FIGURES, WRONG:\n  " + "\n  ".join(problems))
        print("the last log:\n" + log)
        return 1
    print([line.strip() for line in log.splitlines() if "reference:" in line or "timed again" in line][:6])
    print("the reference's figure is checked against its own run's: kept, used, and when off timed again "
          "and replaced by the record")
    return 0


if __name__ == "__main__":
    sys.exit(main())
