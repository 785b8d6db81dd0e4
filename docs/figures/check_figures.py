#!/usr/bin/env python3
"""The book's measured figures against the committed bench run (docs/bench/).

    check_figures.py            exit 1, naming each figure, where one disagrees with the run
    check_figures.py --write    rewrite those figures from the run (`make bench PUBLISH=1` does),
                                the walkthroughs' too, printing each line it changes

A row of docs/figures/reference_run.csv whose `bench` column names a measurement of the run is
that measurement, written at the row's own rounding (as many decimals as the row shows):
    table|size|implementation|threads     a time of docs/bench/<table>.csv (the kernel alone, or
                                           the host loop on that many threads), in ms, or as a
                                           rate: GFLOP/s for size S is 2 S^3 operations over it;
                                           GB/s for size N (vector add) is 3 N floats moved, for
                                           size HxW (transpose, convolution "HxW kK") 2 H W floats;
                                           Mpixel/s for size HxW is H W pixels over it
    A / B                                  the speedup of B over A: time(A) / time(B)
    meta|copy_gbs, meta|sgemm_gflops       a ceiling of docs/bench/meta.json
    bank_conflicts|size|implementation     conflicts per shared-memory request, as Nsight Compute
                                           counted them in the run (docs/bench/bank_conflicts.csv)
Every measured or ceiling row must name one: a figure the run does not measure is not in the book.
A percentage in a row's note ("11% of cuBLAS", "21.5% of copy") is the row's value over its
panel's ceiling, at the note's own rounding. And each figure that a walkthrough states and
docs/figures/claims.json lists is checked against the run the same way: a percentage of a ceiling
("percent": which percentage of the line), or a figure with its unit ("figure": which one).
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
        self.counters = {}
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".csv"):
                continue
            with open(os.path.join(folder, name)) as f:
                for row in csv.DictReader(f):
                    if name == "bank_conflicts.csv":
                        self.counters["bank_conflicts|%s|%s" % (row["size"], row["implementation"])] = \
                            float(row["per_request"])
                    elif row["ms"] and row["copies"] in ("kernel", ""):
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
        if key.startswith("bank_conflicts|"):
            if key not in self.counters:
                raise KeyError("the committed run has no bank-conflict count %s" % key)
            return self.counters[key]
        if " / " in key:
            first, second = key.split(" / ")
            return self.time(first.strip()) / self.time(second.strip())
        ms = self.time(key)
        if unit == "ms":
            return ms
        size = key.split("|")[1]
        if unit == "GFLOP/s":
            return 2.0 * int(size) ** 3 / (ms * 1e-3) / 1e9
        if unit == "GB/s":
            dims = [int(d) for d in re.match(r"(\d+)(?:x(\d+))?", size).groups() if d]
            floats = 3 * dims[0] if len(dims) == 1 else 2 * dims[0] * dims[1]
            return floats * 4 / (ms * 1e-3) / 1e9
        if unit == "Mpixel/s":
            height, width = re.match(r"(\d+)x(\d+)", size).groups()
            return int(height) * int(width) / (ms * 1e-3) / 1e6
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
        if not row.get("bench"):
            if row["kind"] != "published":
                problems.append("%s: a %s figure that names no measurement of the committed run (bench column)"
                                % (where(row), row["kind"]))
            continue
        expected = written(run.value(row["bench"], row["unit"]), row["value"])
        if expected != row["value"]:
            problems.append("%s is %s %s, but the committed run gives %s (%s)"
                            % (where(row), row["value"], row["unit"], expected, row["bench"]))
            if fix:
                row["value"] = expected
        if row["date"] != run.meta.get("date", row["date"]):
            problems.append("%s: dated %s, but the committed run is of %s" % (where(row), row["date"], run.meta["date"]))
            if fix:
                row["date"] = run.meta["date"]
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


def claimed_line(claim):
    """The one line of the claim's walkthrough that holds its text (after its `after` text, if any)."""
    with open(os.path.join(ROOT, claim["file"]), encoding="utf-8") as f:
        lines = f.read().splitlines()
    if claim.get("after"):
        starts = [i for i, line in enumerate(lines) if claim["after"] in line]
        if not starts:
            raise ValueError("%s: no line contains %r" % (claim["file"], claim["after"]))
        lines = lines[starts[0] + 1:]
    found = [line for line in lines if claim["line"] in line]
    if claim.get("after") and found:
        found = found[:1]  # the first after the `after` text: the row of that table
    if len(found) != 1:
        raise ValueError("%s: %d lines contain %r (expected one)" % (claim["file"], len(found), claim["line"]))
    return found[0]


def stated_figures(claim, line):
    """The figures of the claim's kind on its line (re matches: percentages, or numbers written
    with its unit), and which of them the claim is."""
    if "figure" in claim:
        suffix = claim.get("suffix", " " + claim["unit"])
        return list(re.finditer(r"(\d+(?:\.\d+)?)%s" % re.escape(suffix), line)), claim["figure"]
    return list(re.finditer(r"(\d+(?:\.\d+)?)%", line)), claim["percent"]


def claimed_value(claim, run):
    """What the committed run says the claimed figure is."""
    value = run.value(claim["value"], claim["unit"])
    return 100.0 * value / run.value(claim["of"], claim["unit"]) if "of" in claim else value


def check_claims(claims, run, fix):
    """The figures and percentages that walkthroughs state, against the run; with `fix`, each
    disagreeing figure is rewritten in place (the changed line is printed for the author to read)."""
    problems = []
    for claim in claims:
        try:
            line = claimed_line(claim)
        except ValueError as e:
            problems.append(e.args[0])
            continue
        stated, index = stated_figures(claim, line)
        if not -len(stated) <= index < len(stated):
            problems.append("%s: the line %r has no figure #%d of its kind" % (claim["file"], claim["line"], index))
            continue
        said = stated[index].group(1)
        measured = written(claimed_value(claim, run), said)
        if measured == said:
            continue
        problems.append("%s: the line %r says %s%s, but the committed run gives %s (%s%s)"
                        % (claim["file"], claim["line"], said, "%" if "of" in claim else " " + claim["unit"],
                           measured, claim["value"], " over " + claim["of"] if "of" in claim else ""))
        if fix:
            path = os.path.join(ROOT, claim["file"])
            with open(path, encoding="utf-8") as f:
                text = f.read().splitlines(keepends=True)
            new_line = line[:stated[index].start(1)] + measured + line[stated[index].end(1):]
            text = [new_line + "\n" if t.rstrip("\n") == line else t for t in text]
            with open(path, "w", encoding="utf-8") as f:
                f.write("".join(text))
            print("%s: %s" % (claim["file"], new_line))
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
    with open(args.claims) as f:
        claims = json.load(f)["claims"]
    try:
        problems = check_rows(rows, run, args.write)
        claimed = check_claims(claims, run, args.write)
        if args.write:
            write_figures(args.figures, header, rows)
            print("check_figures.py: %d figure(s) of %s and %d in walkthroughs set from %s; read the lines "
                  "above, and the text around them, before committing" % (len(problems), args.figures,
                                                                           len(claimed), args.bench))
            problems, claimed = [], []
        problems += claimed
    except (KeyError, ValueError) as e:
        print("check_figures.py: %s" % e.args[0])
        return 1
    for problem in problems:
        print("DISAGREES: " + problem)
    taken = sum(1 for r in rows if r.get("bench"))
    print("%d lab-page figures from the committed run (%s, %s), %d percentages in their notes, "
          "%d figures and percentages in walkthroughs: %s"
          % (taken, run.meta.get("gpu", "?"), run.meta.get("date", "?"),
             sum(1 for r in rows if "% of " in r["note"]), len(claims),
             "%d disagree" % len(problems) if problems else "all agree"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
