#!/usr/bin/env python3
"""Checks that the grader rejects one buggy variant kept under tests/buggy/, for the right reason.

A variant is a whole file (VARIANT.cu) or, the cheaper way, a patch of its solution
(VARIANT.patch, applied at build time by apply_variant.py). Either way its first lines state
which tests it must fail and what the message must say:

    // expect-fail: kernel: n = 33 (one past a warp)
    // expect-message: written past the end of c
    // expect-pass: kernel: n = 1023
    // expect-lost: 3

Every `expect-fail` test must fail, and its output must match every `expect-message` regular
expression. Every `expect-pass` test must pass: that is how a variant that crashes or hangs in one
test shows that the fault cost only that test. Without `expect-lost`, only the named tests run.
With it, the whole lab runs: exactly the `expect-fail` tests must fail, and they must be worth
exactly that many points (bonus points included) - the grade a planted cheat must get. A correct
answer written another way (own stream, managed memory, ...) says `// expect-lost: 0` and names
no failing test: it must keep full marks. `// expect-no-process-left: TEXT` also checks, once
the lab is graded, that no process whose program path contains TEXT is still running, and
`// expect-unchanged: PATH` that the file PATH (relative to the build folder) is as it was before.
`// expect-absent: REGEX` checks that no test's output, and nothing in the run's results.json
(the file Gradescope shows the student), matches REGEX: text of the grader's that the variant
tried to read must not reach the student. `// expect-needs: minimal view` says that what rejects
the variant is the runner's minimal view of the files (bubblewrap): where the grade log shows the
machine could not give it (no bwrap, no user namespaces), the variant is not judged, exit 77
(skipped, with the log's reason), as a sanitizer test is where compute-sanitizer is missing.

A variant with `// expect-build-error: MESSAGE` must not build at all (it uses a library the labs
forbid, or calls the reference solution): --build-error builds it and expects the build to fail saying MESSAGE. That needs no GPU.

Exit 77 (skipped) without a GPU, like the checkers, and when every test skipped itself (a step
built for an architecture this GPU is not).
"""
import argparse
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grade  # noqa: E402


def variant_file(lab, variant):
    for ext in (".cu", ".patch"):
        path = os.path.join(grade.SOURCE_DIR, "tests", "buggy", lab, variant + ext)
        if os.path.exists(path):
            return path
    sys.exit("no variant %s of lab %s under tests/buggy/" % (variant, lab))


def expectations(path):
    found = {"fail": [], "message": [], "pass": [], "lost": [], "build-error": [], "no-process-left": [],
             "unchanged": [], "absent": [], "needs": []}
    with open(path) as f:
        for line in f:
            m = re.match(r"\s*//\s*expect-(fail|message|pass|lost|build-error|no-process-left|unchanged|absent|needs):"
                         r"\s*(.+?)\s*$", line)
            if m:
                found[m.group(1)].append(m.group(2))
    return found


def check_build_error(build_dir, lab, variant, messages):
    target = "check_%s__%s" % (lab, variant)
    r = subprocess.run(["cmake", "--build", build_dir, "--target", target], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, errors="replace")
    if r.returncode == 0:
        print("VARIANT %s BUILT, but it must be refused at build time" % variant)
        return 1
    missing = [m for m in messages if not re.search(m, r.stdout)]
    if missing:
        print("VARIANT %s failed to build without saying %r; the build said:\n%s"
              % (variant, missing, grade.compiler_errors(r.stdout)))
        return 1
    print("variant %s refused at build time: %s" % (variant, grade.compiler_errors(r.stdout, 3)))
    return 0


def minimal_view_missing(log_path):
    """What the grade log says the runner's sandbox lacked, when it did not hold the minimal view of
    the files (its "runner sandbox:" lines, printed by the checker); "" when it held it."""
    with open(log_path, errors="replace") as log:
        lines = [line.strip() for line in log if line.startswith("runner sandbox:")]
    if any("a minimal view of the files" in line for line in lines):
        return ""
    return "; ".join(lines) or "no runner sandbox line"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build-dir", required=True)
    p.add_argument("--lab", required=True)
    p.add_argument("--variant", required=True)
    p.add_argument("--build-error", action="store_true", help="the variant must fail to build")
    a = p.parse_args()
    source = variant_file(a.lab, a.variant)
    expect = expectations(source)
    if a.build_error:
        return check_build_error(a.build_dir, a.lab, a.variant, expect["build-error"])
    fails, messages, passes = expect["fail"], expect["message"], expect["pass"]
    full_marks = expect["lost"] == ["0"]  # a correct answer written another way
    if not fails and not full_marks:
        sys.exit("%s names no `// expect-fail:` test: a variant must say which check rejects it" % source)
    whole_lab = bool(expect["lost"])

    out = os.path.join(a.build_dir, "grade", "variants", a.variant)
    argv = ["--build-dir", a.build_dir, "--lab", a.lab, "--variant", a.variant, "--no-build",
            "--timeout", "20", "--out", out]
    if not whole_lab:
        # Run only the tests the header names: doctest takes them as one comma-separated filter.
        named = fails + passes
        if any("," in name or "*" in name or "?" in name for name in named):
            sys.exit("test names used in variant headers must not contain ',', '*' or '?': %s" % named)
        argv += ["--test", ",".join(named)]
    files = {path: grade.file_sha256(os.path.join(a.build_dir, path)) for path in expect["unchanged"]}
    labs, device, seed, status = grade.grade(grade.parse_args(argv))
    if not device.get("ok"):
        return grade.EXIT_NO_DEVICE
    if labs[0].all_skipped:
        print("every test skipped itself (%s): the variant was not judged" % labs[0].tests[0].output.strip())
        return grade.EXIT_NO_DEVICE
    if "minimal view" in expect["needs"]:
        missing = minimal_view_missing(labs[0].log_path)
        if missing:
            print("skipped, not judged: the runner's minimal view of the files rejects this variant, and this "
                  "machine could not give it (the grade log: %s)" % missing)
            return grade.EXIT_NO_DEVICE
    tests = {t.name: t for t in labs[0].tests}
    problems = []
    for name in fails:
        test = tests.get(name)
        if test is None:
            problems.append("no test named %r" % name)
        elif test.status != "failed":
            problems.append("%r passed, but this variant must fail it" % name)
        else:
            for pattern in messages:
                if not re.search(pattern, test.output):
                    problems.append("%r failed without saying %r; it said:\n%s" % (name, pattern, test.output))
    for name in passes:
        test = tests.get(name)
        if test is None or test.status != "passed":
            problems.append("%r must pass (the fault must cost only its own test), but: %s"
                            % (name, "no such test" if test is None else test.output))
    if whole_lab:
        others = [t for t in labs[0].tests if t.name not in fails and t.status != "passed"]
        for t in others:
            problems.append("%r must pass (only the tests named may be lost), but it %s:\n%s"
                            % (t.name, t.status, t.output))
        lost = sum(t.max_score for t in labs[0].tests if t.status != "passed")
        if lost != int(expect["lost"][0]):
            problems.append("the variant lost %d points; it must lose exactly %s" % (lost, expect["lost"][0]))
    for marker in expect["no-process-left"]:
        # The checker has exited; what it started is gone within moments, or never.
        deadline = time.monotonic() + 10
        while processes_running(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = processes_running(marker)
        if left:
            problems.append("processes of the variant outlived its grading: %s" % "; ".join(left))
    for pattern in expect["absent"]:
        shown = [t.name for t in labs[0].tests if re.search(pattern, t.output)]
        results = os.path.join(out, "results.json")
        if os.path.exists(results) and re.search(pattern, open(results, errors="replace").read()):
            shown.append("results.json")
        if shown:
            problems.append("%r, which must reach no student, is in: %s" % (pattern, ", ".join(shown)))
    for path, before in files.items():
        if grade.file_sha256(os.path.join(a.build_dir, path)) != before:
            problems.append("the variant changed %s (it must not be able to write the grader's files)" % path)
    if problems:
        print("\nVARIANT %s NOT REJECTED AS EXPECTED (seed %d):\n  %s" % (a.variant, seed, "\n  ".join(problems)))
        return 1
    if full_marks:
        print("\nvariant %s, a correct answer written another way, kept full marks" % a.variant)
    else:
        print("\nvariant %s rejected by: %s" % (a.variant, "; ".join(fails)))
    return 0


def processes_running(marker):
    """The processes whose program's path names `marker` (a variant's runner and its children)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            program = os.readlink("/proc/%s/exe" % pid)
        except OSError:
            continue
        if marker in program:
            found.append("%s (%s)" % (pid, program))
    return found


if __name__ == "__main__":
    sys.exit(main())
