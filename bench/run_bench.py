#!/usr/bin/env python3
"""`make bench`: reruns the source documents' tables on this GPU and CPU, then reports them.

    run_bench.py --bench BUILD/bin/workbook_bench --out DIR [--quick] [--publish] [--check]

1. Runs workbook_bench, which prints its progress and writes DIR/<table>.csv and DIR/meta.json
   (see bench/workbook_bench.cpp for the columns).
   Then, where Nsight Compute (ncu) can read the GPU's counters, counts lab 03's shared-memory
   bank conflicts at 4096 x 4096 (`workbook_bench --launch-transposes` under ncu) into
   DIR/bank_conflicts.csv: the lab 03 page's other figures.
2. Runs bench/report.py on DIR: DIR/<table>.md, .png and .svg beside the sources' figures, and
   DIR/README.md with every table.
3. --publish copies the CSVs and meta.json into docs/bench/, which the book draws its benchmark
   page from, and sets the lab pages' figures that this run measures to its values
   and the walkthroughs' figures listed in docs/figures/claims.json (check_figures.py --write,
   which prints each walkthrough line it changes): read those, commit, and the docs show this run.

Without a GPU nothing is measured: it says so and exits 0 (77 with --check, ctest's "skipped").
--check (the test gpu.bench.quick) also verifies that every table came out: a CSV with rows, a
Markdown table and both plots.
"""
import argparse
import csv
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


# Lab 03's figures: what Nsight Compute counts for its two kernels, loads and stores together.
CONFLICTS = ["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
             "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"]
REQUESTS = ["smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum"]
PROFILED = ["lab 03 unpadded", "lab 03 padded"]  # in the order --launch-transposes launches them


def find_ncu():
    for candidate in (shutil.which("ncu"), "/usr/local/cuda/bin/ncu"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def count_bank_conflicts(bench, out_dir):
    """Runs lab 03's kernels once each under ncu; writes bank_conflicts.csv. Returns what it did."""
    ncu = find_ncu()
    if ncu is None:
        return "bank conflicts not counted: no ncu (Nsight Compute) on PATH or in /usr/local/cuda/bin"
    run = subprocess.run([ncu, "--csv", "--metrics", ",".join(CONFLICTS + REQUESTS), "--kernel-name",
                          "regex:transpose", bench, "--launch-transposes"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    launches = {}
    for row in csv.DictReader(line for line in run.stdout.splitlines() if line.startswith('"')):
        launch = launches.setdefault(int(row["ID"]), {})
        launch[row["Metric Name"]] = float(row["Metric Value"].replace(",", ""))
    if len(launches) != len(PROFILED):
        return ("bank conflicts not counted: ncu profiled %d kernel(s), expected %d (exit status %d):\n%s"
                % (len(launches), len(PROFILED), run.returncode, run.stdout[-1500:]))
    with open(os.path.join(out_dir, "bank_conflicts.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["size", "implementation", "conflicts", "requests", "per_request"])
        for name, launch_id in zip(PROFILED, sorted(launches)):
            counts = launches[launch_id]
            conflicts = sum(counts.get(m, 0) for m in CONFLICTS)
            requests = sum(counts.get(m, 0) for m in REQUESTS)
            writer.writerow(["4096x4096", name, "%.0f" % conflicts, "%.0f" % requests,
                             "%.4f" % (conflicts / requests if requests else 0)])
    return "bank conflicts counted by ncu: %s" % os.path.join(out_dir, "bank_conflicts.csv")


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
    if not args.quick:
        print("make bench: " + count_bank_conflicts(args.bench, out))

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
        # The lab pages' figures and the walkthroughs' claimed figures become this run's; the
        # changed walkthrough lines are printed, for the author to reread the text around them.
        check = [sys.executable, os.path.join(ROOT, "docs", "figures", "check_figures.py")]
        if subprocess.call(check + ["--write"]) != 0 or subprocess.call(check) != 0:
            print("make bench: the book's figures could not all be set from this run (see above)")
            return 1
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
