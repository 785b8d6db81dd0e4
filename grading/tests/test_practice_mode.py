#!/usr/bin/env python3
"""Practice mode on a GPU, with CUDA IPC forced missing (docs/grading.md, "Practice mode").

    test_practice_mode.py --build-dir BUILD

WORKBOOK_FORCE_NO_IPC=1 makes every checker run as where the judge can make no CUDA IPC handle;
=runner sends the runner a handle that is none, so that the runner's own open fails. Either way
the checkers run every test on copies of their device arrays, and say so. Graded as `make check`
grades (--verbose), this checks that:

  - lab 01's and lab 03's solutions (=1 and =runner) show the practice line, with its reason,
    above the lab's results and on every result, pass every correctness test (the timed ones
    are shown, not required), and that make grade writes no results.json nor junit.xml without
    --allow-practice (report.html only), and writes them, every result marked, with it;
  - the skeletons of both labs still fail their correctness tests;
  - buggy variants are rejected for the same reasons as with IPC: a write past the end of the
    output (the guard zones come back with the copy), an element never written, a kernel still
    running on a stream of its own, a round trip that copies nothing back, a write outside the
    transposed output.

Needs a GPU (exit 77 without one) and, built: the checkers of labs 01 and 03 (skeleton and
solution) and of the variants named in VARIANTS.
"""
import json
import os
import re
import subprocess
import sys

import support  # gpu_build_dir

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = os.path.join(SOURCE_DIR, "grading", "driver")

MARK = "practice mode: not for grading"
RESULT = re.compile(r"^  (.+?) \.+ (OK  |FAIL|SKIP) ")
TIMED = ("performance", "padding removes the bank conflicts")  # timed tests: shown, not required
VARIANTS = [("01_vector_add", "write_past_end"), ("01_vector_add", "tail_never_written"),
            ("01_vector_add", "own_stream_not_waited"), ("01_vector_add", "no_copy_back"),
            ("03_shared_transpose", "no_bounds_check")]


def graded(build_dir, out, force, extra):
    """grade.py --verbose (make check) on one lab, with WORKBOOK_FORCE_NO_IPC=force: its exit
    status and what it printed."""
    env = dict(os.environ, WORKBOOK_FORCE_NO_IPC=force)
    env.pop("WORKBOOK_PRACTICE_MODE", None)
    r = subprocess.run([sys.executable, os.path.join(DRIVER, "grade.py"), "--build-dir", build_dir, "--no-build",
                        "--verbose", "--out", out] + extra, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    print("$ WORKBOOK_FORCE_NO_IPC=%s grade.py %s\n%s" % (force, " ".join(extra), r.stdout))
    return r.returncode, r.stdout


def results_of(printed):
    """The result lines of a grade run: (name, mark, line)."""
    return [(m.group(1), m.group(2).strip(), line) for line in printed.splitlines() for m in [RESULT.match(line)] if m]


def check_marked(printed, reason_words, problems, what):
    """The practice line with its reason heads the lab, and every result line says practice mode."""
    header = [line for line in printed.splitlines() if line.startswith("  " + MARK + " (")]
    if not header:
        problems.append("%s: no practice line above the results" % what)
    elif not all(words in header[0] for words in reason_words):
        problems.append("%s: the practice line does not say %s: %s" % (what, reason_words, header[0]))
    results = results_of(printed)
    if not results:
        problems.append("%s: no result was printed" % what)
    for name, _, line in results:
        if not line.rstrip().endswith(MARK):
            problems.append("%s: a result without the practice mark: %s" % (what, line))
    return results


def main():
    build_dir = support.gpu_build_dir()
    if build_dir is None:
        return support.SKIP
    base = os.path.join(build_dir, "grade", "practice_mode")
    problems = []

    # The solutions: every correctness test passes; the reports follow --allow-practice.
    runs = [("01", "1", ["CUDA IPC is switched off by WORKBOOK_FORCE_NO_IPC=1"], False),
            ("03", "runner", ["cudaIpcOpenMemHandle", "WORKBOOK_FORCE_NO_IPC=runner"], True)]
    for lab, force, reason, allow in runs:
        out = os.path.join(base, "solution_" + lab)
        for name in ("results.json", "junit.xml"):  # an earlier run's must not pass for this one's
            if os.path.exists(os.path.join(out, name)):
                os.remove(os.path.join(out, name))
        status, printed = graded(build_dir, out, force, ["--lab", lab, "--solutions"] +
                                 (["--allow-practice"] if allow else []))
        what = "lab %s's solution" % lab
        results = check_marked(printed, reason, problems, what)
        for name, mark, _ in results:
            if mark != "OK" and not name.startswith(TIMED):
                problems.append("%s: %r did not pass in practice mode (%s)" % (what, name, mark))
        timed = ["%s: %s" % (name, mark) for name, mark, _ in results if name.startswith(TIMED)]
        print("%s, timed tests in practice mode: %s" % (what, "; ".join(timed) or "none"))
        if not os.path.exists(os.path.join(out, "report.html")):
            problems.append("%s: no report.html" % what)
        written = os.path.exists(os.path.join(out, "results.json"))
        if not allow:
            if written or os.path.exists(os.path.join(out, "junit.xml")):
                problems.append("%s: results.json or junit.xml written in practice mode without --allow-practice" % what)
            last = [line for line in printed.splitlines() if line.strip()][-1:]
            if not last or "results.json and junit.xml were not written" not in last[0]:
                problems.append("%s: the run does not end saying that results.json was not written: %s" % (what, last))
        elif not written:
            problems.append("%s: --allow-practice wrote no results.json" % what)
        else:
            with open(os.path.join(out, "results.json")) as f:
                results_json = json.load(f)
            if not all(words in results_json.get("extra_data", {}).get("practice_mode", "") for words in reason):
                problems.append("%s: results.json's extra_data does not name practice mode: %s"
                                % (what, results_json.get("extra_data")))
            for entry in results_json["tests"]:
                if not entry["output"].startswith(MARK + " ("):
                    problems.append("%s: results.json's %r is not marked practice" % (what, entry["name"]))

    # The skeletons still fail their correctness tests.
    for lab, tests in (("01", "kernel*"), ("03", "step*")):
        status, printed = graded(build_dir, os.path.join(base, "skeleton_" + lab), "1",
                                 ["--lab", lab, "--test", tests, "--timeout", "60"])
        what = "lab %s's skeleton" % lab
        results = check_marked(printed, ["WORKBOOK_FORCE_NO_IPC=1"], problems, what)
        for name, mark, _ in results:
            if mark != "FAIL":
                problems.append("%s: %r did not fail in practice mode (%s)" % (what, name, mark))

    # Buggy variants: rejected as with IPC (expect_rejected.py, the variant's own expectations).
    for lab, variant in VARIANTS:
        env = dict(os.environ, WORKBOOK_FORCE_NO_IPC="1")
        r = subprocess.run([sys.executable, os.path.join(DRIVER, "expect_rejected.py"), "--build-dir", build_dir,
                            "--lab", lab, "--variant", variant], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        print("$ WORKBOOK_FORCE_NO_IPC=1 expect_rejected.py --lab %s --variant %s\n%s" % (lab, variant, r.stdout))
        if r.returncode != 0:
            problems.append("variant %s of lab %s was not rejected as with CUDA IPC (exit status %d)"
                            % (variant, lab, r.returncode))
        elif MARK not in r.stdout:
            problems.append("variant %s of lab %s was not graded in practice mode" % (variant, lab))

    if problems:
        print("PRACTICE MODE WRONG:\n  " + "\n  ".join(problems))
        return 1
    print("practice mode: every result marked, the solutions' correctness tests pass, the skeletons and "
          "%d variants fail as with CUDA IPC, results.json only with --allow-practice" % len(VARIANTS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
