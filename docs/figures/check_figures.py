#!/usr/bin/env python3
"""The book's measured figures against the committed bench run (docs/bench/).

    check_figures.py            exit 1, naming each figure, where one disagrees with the run
    check_figures.py --write    rewrite those figures from the run (after `make bench PUBLISH=1`)

A row of docs/figures/reference_run.csv whose `bench` column names a measurement of the run is
that measurement, written at the row's own rounding (as many decimals as the row shows):
    table|size|implementation|threads     a time of docs/bench/<table>.csv (the kernel alone, or
                                           the host loop on that many threads); a GFLOP/s row of
                                           size S is 2 S^3 floating-point operations over it
    A / B                                  the speedup of B over A: time(A) / time(B)
    meta|copy_gbs, meta|sgemm_gflops       a ceiling of docs/bench/meta.json
A percentage in a row's note ("11% of cuBLAS", "21.5% of copy") is the row's value over its
panel's ceiling, at the note's own rounding. And each percentage that a walkthrough states and
docs/figures/claims.json lists is checked the same way against the run.
"""
import argparse
import csv
import io
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIGURES = os.path.join(ROOT, "docs", "figures", "reference_run.csv")
CLAIMS = os.path.join(ROOT, "docs", "figures", "claims.json")
BENCH = os.path.join(ROOT, "docs", "bench")


def decimals(text):
    return len(text.split(".")[1]) if "." in text else 0


def written(value, like):
    """`value` at the rounding of the figure `like` (its number of decimals)."""
    return "%.*f" % (decimals(like), value)


class Run:
    """The committed bench run: its tables' times and meta.json's ceilings."""

    def __init__(self, folder):
        with open(os.path.join(folder, "meta.json")) as f:
            self.meta = json.load(f)
        self.times = {}
        for name in os.listdir(folder):
            if not name.endswith(".csv"):
                continue
            with open(os.path.join(folder, name)) as f:
                for row in csv.DictReader(f):
                    if row["ms"] and row["copies"] in ("kernel", ""):
                        key = "|".join((row["table"], row["size"], row["implementation"], row["threads"]))
                        self.times[key] = float(row["ms"])

    def time(self, key):
        if key not in self.times:
            raise KeyError("the committed run has no measurement %s" % key)
        return self.times[key]

    def value(self, key, unit):
        """What the run says a figure with this key and unit is."""
        if key.startswith("meta|"):
            return float(self.meta[key.split("|", 1)[1]])
        if " / " in key:
            first, second = key.split(" / ")
            return self.time(first.strip()) / self.time(second.strip())
        ms = self.time(key)
        if unit == "ms":
            return ms
        if unit == "GFLOP/s":
            size = int(key.split("|")[1])
            return 2.0 * size ** 3 / (ms * 1e-3) / 1e9
        raise ValueError("no rule turns a time into %s (%s)" % (unit, key))


def read_figures(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    header = [line for line in text.splitlines(keepends=True) if line.startswith("#")]
    rows = list(csv.DictReader(line for line in text.splitlines() if line.strip() and not line.startswith("#")))
    return header, rows


def write_figures(path, header, rows):
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0].keys()), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(header) + out.getvalue())


def check_rows(rows, run, fix):
    """Each figure taken from the run, and each percentage in a note; returns the disagreements."""
    problems = []
    ceilings = {(r["lab"], r["panel"]): r for r in rows if r["kind"] == "ceiling"}
    def where(row):
        return "%s, %s: %s" % (row["lab"], row["panel"], row["label"])

    for row in rows:
        if row.get("bench"):
            expected = written(run.value(row["bench"], row["unit"]), row["value"])
            if expected != row["value"]:
                problems.append("%s is %s %s, but the committed run gives %s (%s)"
                                % (where(row), row["value"], row["unit"], expected, row["bench"]))
                if fix:
                    row["value"] = expected
    for row in rows:  # once every value is the run's, ceilings included
        ceiling = ceilings.get((row["lab"], row["panel"]))
        match = re.search(r"(\d+(?:\.\d+)?)% of (cuBLAS|copy)", row["note"])
        if match and ceiling is not None and row is not ceiling:
            share = written(100.0 * float(row["value"]) / float(ceiling["value"]), match.group(1))
            if share != match.group(1):
                problems.append("%s: its note says %s%% of %s, but %s over %s is %s%%"
                                % (where(row), match.group(1), match.group(2), row["value"], ceiling["value"], share))
                if fix:
                    row["note"] = row["note"][:match.start(1)] + share + row["note"][match.end(1):]
    return problems


def check_claims(claims, run):
    """The percentages that walkthroughs state, against the run."""
    problems = []
    for claim in claims:
        path = os.path.join(ROOT, claim["file"])
        with open(path, encoding="utf-8") as f:
            lines = [line for line in f if claim["line"] in line]
        if len(lines) != 1:
            problems.append("%s: %d lines contain %r (expected one)" % (claim["file"], len(lines), claim["line"]))
            continue
        stated = re.findall(r"(\d+(?:\.\d+)?)%", lines[0])
        if claim["percent"] >= len(stated):
            problems.append("%s: the line %r has no percentage #%d" % (claim["file"], claim["line"], claim["percent"]))
            continue
        said = stated[claim["percent"]]
        share = written(100.0 * run.value(claim["value"], claim["unit"]) / run.value(claim["of"], ""), said)
        if share != said:
            problems.append("%s: the line %r says %s%%, but the committed run gives %s%% (%s over %s)"
                            % (claim["file"], claim["line"], said, share, claim["value"], claim["of"]))
    return problems


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write", action="store_true", help="rewrite the figures from the committed run")
    p.add_argument("--figures", default=FIGURES)
    p.add_argument("--claims", default=CLAIMS)
    p.add_argument("--bench", default=BENCH, help="the committed run (default docs/bench)")
    args = p.parse_args(argv)
    run = Run(args.bench)
    header, rows = read_figures(args.figures)
    try:
        problems = check_rows(rows, run, args.write)
        if args.write:
            write_figures(args.figures, header, rows)
            print("check_figures.py: %d figure(s) of %s set from %s" % (len(problems), args.figures, args.bench))
            problems = []
        with open(args.claims) as f:
            problems += check_claims(json.load(f)["claims"], run)
    except (KeyError, ValueError) as e:
        print("check_figures.py: %s" % e.args[0])
        return 1
    for problem in problems:
        print("DISAGREES: " + problem)
    taken = sum(1 for r in rows if r.get("bench"))
    print("%d figures taken from the committed run (%s, %s), %d percentages in notes and walkthroughs: %s"
          % (taken, run.meta.get("gpu", "?"), run.meta.get("date", "?"),
             sum(1 for r in rows if "% of " in r["note"]),
             "%d disagree" % len(problems) if problems else "all agree"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
