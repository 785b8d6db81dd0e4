"""The reference solution's figures across a class: for each timed call of each performance test,
the reference's milliseconds per run in every student's grade, read from each lab's log, and how
far apart they are.

The reference is timed again in every student's grade, beside the student's code. Its figures
should agree across a class graded on one GPU: once, on an H100, lab 02's reference read 1.28 to
1.32 ms in 16 grades and 15.13 ms in one, where a 3.3x-slow transpose then passed. The judge now
checks each reference figure against the reference's own grade (common/judge.hpp,
kReferenceDrift); this table shows the instructor what came out, and marks a test whose figures
spread wider than SPREAD_MOST.

    reference_figures(text)           {(test, call): ms} from one lab's log
    spread_rows(out_dir, students)    [(test, call, [ms, ...])] for calls timed in two grades or more
    spread_table(out_dir, students)   the summary's Markdown lines ([] when there are no such calls)

    python3 reference_spread.py OUT   the table for a class graded into OUT (make grade-class),
                                      exit 1 when a test spreads wider than SPREAD_MOST
"""
import os
import re
import sys

SPREAD_MOST = 0.05  # the widest spread (largest / smallest - 1) expected across one GPU's grades

TEST_CASE = re.compile(r"^TEST CASE:\s+(.*\S)\s*$")
# "MESSAGE: reference:   2700 GB/s = 91% of copy (2958 GB/s), 0.3059 ms (fastest of 3 ..." : the
# first "<number> ms (" of the line is the figure that counted.
REFERENCE = re.compile(r"MESSAGE: reference:\s.*?, ([0-9]+(?:\.[0-9]+)?(?:e[-+]?[0-9]+)?) ms \(")


def reference_figures(text):
    """{(test case, call): ms}: the reference's figure of each timed call in a lab's log, its calls
    counted from 0 in the order the test printed them."""
    figures, test, call = {}, None, 0
    for line in text.splitlines():
        m = TEST_CASE.match(line)
        if m:
            if m.group(1) != test:
                test, call = m.group(1), 0
            continue
        m = REFERENCE.search(line)
        if m and test is not None:
            figures[(test, call)] = float(m.group(1))
            call += 1
    return figures


def spread_rows(out_dir, students):
    """[(test, call, [ms of each grade])] over every lab log of every student folder in out_dir
    (`students`: folder names), for the calls timed in two grades or more, in test order."""
    seen = {}
    for student in students:
        folder = os.path.join(out_dir, student)
        try:
            logs = sorted(n for n in os.listdir(folder) if re.match(r"\d\d_\w+\.log$", n))
        except OSError:
            continue
        for name in logs:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                for key, ms in reference_figures(f.read()).items():
                    seen.setdefault(key, []).append(ms)
    return [(test, call, figures) for (test, call), figures in sorted(seen.items()) if len(figures) >= 2]


def spread(figures):
    return max(figures) / min(figures) - 1 if min(figures) > 0 else float("inf")


def spread_table(out_dir, students, rows=None):
    """The summary's section: a row per timed call, its reference figures' range and spread
    (`rows`: spread_rows's, when already read)."""
    rows = spread_rows(out_dir, students) if rows is None else rows
    if not rows:
        return []
    lines = ["| test | call | grades | fastest (ms) | slowest (ms) | spread |", "|---|---|---|---|---|---|"]
    wide = 0
    for test, call, figures in rows:
        s = spread(figures)
        wide += s > SPREAD_MOST
        mark = " (wider than %.0f%%)" % (100 * SPREAD_MOST) if s > SPREAD_MOST else ""
        lines.append("| %s | %d | %d | %.4g | %.4g | %.1f%%%s |" % (test, call, len(figures), min(figures),
                                                                  max(figures), 100 * s, mark))
    lines.append("")
    lines.append("Each grade times the reference again, beside the student's code; on one GPU its figures "
                 "should agree within %.0f%%. %s" % (100 * SPREAD_MOST,
                                                    "All do." if not wide else
                                                    "%d call(s) spread wider: read those grades' logs." % wide))
    return lines


def main(argv):
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        print("usage: reference_spread.py OUT  (a class's output folder, written by make grade-class)")
        return 2
    out = argv[1]
    students = sorted(n for n in os.listdir(out) if os.path.isdir(os.path.join(out, n)))
    rows = spread_rows(out, students)
    lines = spread_table(out, students, rows)
    print("\n".join(lines) if lines else "no performance test was timed in two grades or more in %s" % out)
    return 1 if any(spread(f) > SPREAD_MOST for _, _, f in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
