#!/usr/bin/env python3
"""Checks that the grader rejects one buggy variant kept under tests/buggy/, for the right reason.

Each variant states in its header which tests it must fail and what the message must say:

    // expect-fail: kernel: n = 33 (one past a warp)
    // expect-message: written past the end of c
    // expect-pass: kernel: n = 1023

Every `expect-fail` test must fail, and its output must match every `expect-message` regular
expression. Every `expect-pass` test must pass: that is how a variant that crashes or hangs in one
test shows that the fault cost only that test. Exit 77 (skipped) without a GPU, like the checkers.
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grade  # noqa: E402


def expectations(path):
    found = {"fail": [], "message": [], "pass": []}
    with open(path) as f:
        for line in f:
            m = re.match(r"\s*//\s*expect-(fail|message|pass):\s*(.+?)\s*$", line)
            if m:
                found[m.group(1)].append(m.group(2))
    return found["fail"], found["message"], found["pass"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build-dir", required=True)
    p.add_argument("--lab", required=True)
    p.add_argument("--variant", required=True)
    a = p.parse_args()
    source = os.path.join(grade.SOURCE_DIR, "tests", "buggy", a.lab, a.variant + ".cu")
    fails, messages, passes = expectations(source)
    if not fails:
        sys.exit("%s names no `// expect-fail:` test: a variant must say which check rejects it" % source)

    # Run only the tests the header names: doctest takes them as one comma-separated filter.
    named = fails + passes
    if any("," in name or "*" in name or "?" in name for name in named):
        sys.exit("test names used in variant headers must not contain ',', '*' or '?': %s" % named)
    args = grade.parse_args(["--build-dir", a.build_dir, "--lab", a.lab, "--variant", a.variant,
                             "--test", ",".join(named),
                             "--no-build", "--timeout", "20", "--out", os.path.join(a.build_dir, "grade", "variants", a.variant)])
    labs, device, seed, status = grade.grade(args)
    if not device.get("ok"):
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
    if problems:
        print("\nVARIANT %s NOT REJECTED AS EXPECTED (seed %d):\n  %s" % (a.variant, seed, "\n  ".join(problems)))
        return 1
    print("\nvariant %s rejected by: %s" % (a.variant, "; ".join(fails)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
