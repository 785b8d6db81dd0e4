#!/usr/bin/env python3
"""The walkthroughs' tables of tests, generated from the checkers' own test lists.

Each lab part of labs.json has, in its walkthrough (labs/<dir>/<stem>.md where the part's file
labs/<dir>/<stem>.cu has a page of its own, else labs/<dir>/README.md: walkthrough_of in
docs/md_filter.py), a table of its checker's tests and their points between two markers:

    <!-- checker-table: 05_warp_tiling begin -->
    | test | points |
    ...
    <!-- checker-table: 05_warp_tiling end -->

The table is written from what the built checker lists (<build>/bin/check_<id>_solution
--list-test-cases, read on the results channel as the grader reads it: list_tests in
grading/driver/checker_process.py), so a test renamed, added, removed or given other points
changes the table too. Listing runs no test and needs no GPU. Anything said about the tests in
prose belongs outside the markers; what is between them is overwritten.

    docs/checker_tables.py --build-dir build            rewrite the tables
    docs/checker_tables.py --build-dir build --check    exit 1, with a diff, where a table differs
                                                        (the CTest test unit.checker_tables)
"""
import argparse
import difflib
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "grading", "driver"))
sys.path.insert(0, os.path.join(ROOT, "docs"))

from checker_process import list_tests  # noqa: E402  (the grader's own reading of the list)
from md_filter import walkthrough_of  # noqa: E402  (which page walks each lab part through)

GENERATED = "generated from the checker's test list by docs/checker_tables.py: edit the checker, then run it"


def labs():
    with open(os.path.join(ROOT, "labs.json"), encoding="utf-8") as f:
        return json.load(f)["labs"]


def markers(part):
    return ("<!-- checker-table: %s begin (%s) -->" % (part, GENERATED),
            "<!-- checker-table: %s end -->" % part)


def region(part):
    """The whole marked region of a part, markers included (the begin marker's note may vary)."""
    return re.compile(r"^<!-- checker-table: %s begin\b[^\n]*-->\n.*?^<!-- checker-table: %s end -->$"
                      % (re.escape(part), re.escape(part)), re.M | re.S)


def code(name):
    """A test name as a code span a table cell can hold."""
    ticks = "``" if "`" in name else "`"
    pad = " " if "`" in name else ""
    return "%s%s%s%s%s" % (ticks, pad, name.replace("|", "\\|"), pad, ticks)


def points_text(test):
    parts = []
    if test.points or not test.bonus:
        parts.append(str(test.points))
    if test.bonus:
        parts.append("%d bonus" % test.bonus)
    return " + ".join(parts)


def table(part, tests):
    begin, end = markers(part)
    lines = [begin, "| test | points |", "|------|--------|"]
    lines += ["| %s | %s |" % (code(t.name), points_text(t)) for t in tests]
    points, bonus = sum(t.points for t in tests), sum(t.bonus for t in tests)
    total = ("%d" % points if points or not bonus else "") + \
            (" + " if points and bonus else "") + ("%d bonus" % bonus if bonus else "")
    lines += ["| **all %d tests** | **%s** |" % (len(tests), total), end]
    return "\n".join(lines)


def checker(build_dir, part):
    return os.path.join(build_dir, "bin", "check_%s_solution" % part)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", required=True, help="a build of the workbook with its solution checkers")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 where a table differs")
    parser.add_argument("--lab", action="append", help="only these lab parts (ids of labs.json)")
    args = parser.parse_args()

    problems, readmes = [], {}
    for lab in labs():
        part = lab["id"]
        if args.lab and part not in args.lab:
            continue
        path = os.path.join(ROOT, walkthrough_of(lab["dir"], lab["source"]))
        if path not in readmes:
            with open(path, encoding="utf-8") as f:
                readmes[path] = [f.read(), None]
        text = readmes[path][1] if readmes[path][1] is not None else readmes[path][0]
        found = region(part).findall(text)
        if len(found) != 1:
            problems.append("%s: %s markers for %s's table (%s ... %s), expected one pair"
                            % (os.path.relpath(path, ROOT), "no" if not found else len(found), part,
                               *markers(part)))
            continue
        binary = checker(args.build_dir, part)
        if not os.access(binary, os.X_OK):
            problems.append("%s: not built (the target check_%s_solution)" % (binary, part))
            continue
        try:
            tests = list_tests(binary, [])
        except RuntimeError as e:
            problems.append(str(e))
            continue
        new = table(part, tests)
        readmes[path][1] = region(part).sub(lambda m: new, text)

    changed = []
    for path, (old, new) in readmes.items():
        if new is None or new == old:
            continue
        changed.append(path)
        rel = os.path.relpath(path, ROOT)
        if args.check:
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                       "a/" + rel, "b/" + rel))
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
            print("rewrote the tables of %s" % rel)
    for problem in problems:
        print("checker_tables: " + problem, file=sys.stderr)
    if args.check and changed:
        print("checker_tables: %d walkthrough(s) list tests other than their checkers do; run "
              "docs/checker_tables.py --build-dir <build> and commit the READMEs" % len(changed), file=sys.stderr)
    return 1 if problems or (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
