#!/usr/bin/env python3
"""`make bench`: reruns the source documents' tables on this GPU and CPU, then reports them.

    run_bench.py --bench BUILD/bin/workbook_bench --out DIR [--quick] [--publish] [--check]

1. Runs workbook_bench, which prints its progress and writes DIR/<table>.csv and DIR/meta.json
   (see bench/workbook_bench.cpp for the columns).
2. Runs bench/report.py on DIR: DIR/<table>.md, .png and .svg beside the sources' figures, and
   DIR/README.md with every table.
3. --publish copies the CSVs and meta.json into docs/bench/, which the book draws its benchmark
   page from, and sets the lab pages' figures that this run measures to its values
   (docs/figures/check_figures.py --write): commit them, and the docs show this run.

Without a GPU nothing is measured: it says so and exits 0 (77 with --check, ctest's "skipped").
--check (the test gpu.bench.quick) also verifies that every table came out: a CSV with rows, a
Markdown table and both plots.
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
EXIT_NO_DEVICE = 77
TABLES = ["ijcee_table1", "ijcee_table2", "cis750", "stokastik_transpose", "stokastik_matmul",
          "stokastik_convolution"]


def check_outputs(out_dir):
    """Every table's CSV has rows; its Markdown and plots exist. Returns a list of problems."""
    problems = []
    for table in TABLES:
        csv_path = os.path.join(out_dir, table + ".csv")
        if not os.path.exists(csv_path):
            problems.append("%s: no CSV" % table)
            continue
        with open(csv_path) as f:
            rows = [line for line in f.read().splitlines()[1:] if line.strip()]
        if not rows:
            problems.append("%s: the CSV has no rows" % table)
        if not any(",gpu," in r and r.split(",")[6] for r in rows):
            problems.append("%s: no GPU figure was measured" % table)
        for ext in (".md", ".png", ".svg"):
            path = os.path.join(out_dir, table + ext)
            if not os.path.exists(path) or os.path.getsize(path) == 0:
                problems.append("%s: no %s" % (table, ext))
    if not os.path.exists(os.path.join(out_dir, "README.md")):
        problems.append("no README.md")
    return problems


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bench", required=True, help="the workbook_bench executable")
    p.add_argument("--out", required=True, help="where the CSVs, Markdown and plots go")
    p.add_argument("--quick", action="store_true", help="the smallest sizes only (the test)")
    p.add_argument("--publish", action="store_true", help="copy the results into docs/bench/")
    p.add_argument("--check", action="store_true", help="verify every output (the test)")
    args = p.parse_args(argv)

    out = os.path.abspath(args.out)
    # A new run never mixes with an old one: a table this run did not write must not linger.
    # Only what a run writes is removed, never the folder itself or anything else in it.
    os.makedirs(out, exist_ok=True)
    for ext in ("*.csv", "*.md", "*.png", "*.svg", "meta.json"):
        for old in glob.glob(os.path.join(out, ext)):
            os.remove(old)
    cmd = [args.bench, "--out", out] + (["--quick"] if args.quick else [])
    status = subprocess.call(cmd)
    if status == EXIT_NO_DEVICE:
        print("make bench: skipped (see above); no tables were written.")
        return EXIT_NO_DEVICE if args.check else 0
    if status != 0:
        print("make bench: workbook_bench failed (exit status %d); the tables are incomplete." % status)
        return 1

    status = subprocess.call([sys.executable, os.path.join(HERE, "report.py"), "--results", out])
    if status != 0:
        print("make bench: the report failed (exit status %d)." % status)
        return 1
    print("make bench: tables in %s/README.md (and each table's .md, .csv, .png, .svg)" % out)

    if args.publish:
        target = os.path.join(ROOT, "docs", "bench")
        os.makedirs(target, exist_ok=True)
        for old in glob.glob(os.path.join(target, "*.csv")) + glob.glob(os.path.join(target, "meta.json")):
            os.remove(old)
        for path in glob.glob(os.path.join(out, "*.csv")) + [os.path.join(out, "meta.json")]:
            shutil.copy(path, target)
        # The lab pages' figures that this run measures become this run's, and the walkthroughs'
        # percentages are checked against it (what disagrees is named: the text is the author's).
        subprocess.call([sys.executable, os.path.join(ROOT, "docs", "figures", "check_figures.py"), "--write"])
        subprocess.call([sys.executable, os.path.join(ROOT, "docs", "figures", "check_figures.py")])
        print("make bench: published to docs/bench/ and docs/figures/reference_run.csv; commit them, "
              "and `make docs` shows this run.")

    if args.check:
        problems = check_outputs(out)
        for problem in problems:
            print("bench check: " + problem)
        if problems:
            return 1
        print("bench check: every table has its CSV, Markdown and plots")
    return 0


if __name__ == "__main__":
    sys.exit(main())
