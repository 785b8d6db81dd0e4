#!/usr/bin/env python3
"""Sets the tables that the workbook's source documents published beside the same runs measured here.

    python3 bench/report.py --results DIR [--out DIR2] [--sources FILE]

`make bench` runs `workbook_bench`, which reruns the sources' tables on this machine's GPU and CPU
and writes into one folder a CSV per table (`<table id>.csv`) and `meta.json` (the machine, the
date, how the times were taken). This script reads that folder and bench/sources.json (the
figures each source published, and which of the bench's runs each one stands beside) and
writes into DIR2 (DIR by default):

* `<table id>.md`: the table's heading, its source and machines, one Markdown table with each
  published figure followed by the one measured here (GPU runs as "kernel / with copies"), the
  speedup ratios the source claims beside the same ratios measured here, and notes (columns not
  rerun, CPU runs left out because they would take too long, runs that no column matches);
* `<table id>.png` and `<table id>.svg`: the same figures plotted, time on a log axis, published
  dashed with hollow markers, measured solid (kernel) and dotted (with copies);
* `README.md`: the machine, then every table's Markdown in order with its plot.

A table whose CSV is missing is skipped with a line saying so; a missing row shows "—". The
plots need matplotlib: when this Python lacks it, the script runs itself again under one that has
it (Debian's /usr/bin/python3 with python3-matplotlib), and when none has it, it still writes the
Markdown and says that the plots were skipped.

Exit status: 0 when the report was written; 2 when DIR holds neither meta.json nor a table's CSV.
docs/build_docs.py runs it on docs/bench (the committed results) for the book's page.

This file is the entry point: the arguments, finding matplotlib, and README.md. The rest lies
beside it, one module per concept:

* report_results.py: reading the CSVs and meta.json, and matching the bench's runs to the
  sources' columns;
* report_markdown.py: one table's Markdown (the figures, the ratios, the ceiling, the notes);
* report_plots.py: one table's plot.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SOURCES = os.path.join(HERE, "sources.json")
EXIT_USAGE = 2
# Set when this script has re-run itself under another Python, so that it never loops.
REEXEC_ENV = "WORKBOOK_BENCH_REPORT_REEXEC"

# The modules beside this file, found even when it is run by runpy.run_path from another folder
# (as bench/tests/test_report.py does), where Python would look in that folder instead.
sys.path.insert(0, HERE)
from report_markdown import cell, table_markdown  # noqa: E402
from report_plots import load_pyplot, plot_table  # noqa: E402
from report_results import read_meta, read_table_csv  # noqa: E402


# -- finding matplotlib --------------------------------------------------------------------------

# One search for a Python with matplotlib, shared with the book's build.
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "docs"))
from build_docs import python_with_matplotlib  # noqa: E402

def reexec_with_matplotlib(argv):
    """Runs this script again under a Python with matplotlib when this one lacks it.

    Returns only when this Python has matplotlib, or when no Python has it (the Markdown is then
    written without plots)."""
    try:
        import matplotlib  # noqa: F401
        return
    except ImportError:
        pass
    if os.environ.get(REEXEC_ENV):
        return
    python = python_with_matplotlib()
    if python and os.path.realpath(python) != os.path.realpath(sys.executable):
        env = dict(os.environ)
        env[REEXEC_ENV] = "1"
        sys.stdout.flush()
        os.execve(python, [python, os.path.abspath(__file__)] + list(argv), env)


# -- the index -----------------------------------------------------------------------------------

def machine_table(meta):
    if not meta:
        return ["This machine is not recorded: no usable meta.json in the results.", ""]
    rows = []
    gpu = meta.get("gpu")
    if gpu:
        extra = ", ".join(x for x in (
            "sm %s" % meta["sm"] if meta.get("sm") else "",
            "CUDA %s" % meta["cuda"] if meta.get("cuda") else "",
            "driver %s" % meta["driver"] if meta.get("driver") else "") if x)
        rows.append(("GPU", gpu + (" (%s)" % extra if extra else "")))
    if meta.get("cpu") or meta.get("cpu_threads"):
        rows.append(("CPU", "%s%s" % (meta.get("cpu") or "not named",
                                      ", %s threads" % meta["cpu_threads"]
                                      if meta.get("cpu_threads") else "")))
    if meta.get("date"):
        rows.append(("date", str(meta["date"])))
    if meta.get("gpu_timing"):
        rows.append(("GPU times", meta["gpu_timing"]))
    cpu_times = "median milliseconds of the host loop"
    if meta.get("cpu_flags"):
        cpu_times += ", built with %s" % meta["cpu_flags"]
    if meta.get("cpu_limit_s") is not None:
        cpu_times += "; a run predicted to take over %s s is left out, never extrapolated" \
                     % meta["cpu_limit_s"]
    rows.append(("CPU times", cpu_times))
    if meta.get("copy_gbs"):
        rows.append(("device copy", "%s GB/s (a device-to-device copy, the GPU's memory "
                                    "ceiling)" % "{:,.0f}".format(float(meta["copy_gbs"]))))
    if "quick" in meta:
        rows.append(("run", "quick (`--quick`: fewer sizes)" if meta["quick"] else "full"))
    if meta.get("seed") is not None:
        rows.append(("seed", str(meta["seed"])))
    if meta.get("seconds") is not None:
        rows.append(("bench took", "%.0f s" % float(meta["seconds"])))
    out = ["| | this run |", "|---|---|"]
    out += ["| %s | %s |" % (cell(k), cell(v)) for k, v in rows]
    return out + [""]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", required=True, help="the bench's folder: <table id>.csv, meta.json")
    p.add_argument("--out", help="where to write the report (the results folder by default)")
    p.add_argument("--sources", default=DEFAULT_SOURCES, help="the published figures")
    args = p.parse_args(argv)
    reexec_with_matplotlib(argv)

    results = os.path.abspath(args.results)
    out_dir = os.path.abspath(args.out or args.results)
    with open(args.sources, encoding="utf-8") as f:
        tables = json.load(f)["tables"]
    meta = read_meta(results) if os.path.isdir(results) else None
    csvs = [t["id"] for t in tables if os.path.exists(os.path.join(results, t["id"] + ".csv"))]
    if meta is None and not csvs:
        print("report.py: %s holds no bench results (no meta.json and no table CSV such as %s.csv);"
              " run `make bench` first" % (args.results, tables[0]["id"]), file=sys.stderr)
        return EXIT_USAGE
    os.makedirs(out_dir, exist_ok=True)

    plt = load_pyplot()
    if plt is None:
        print("report.py: plots skipped: no Python with matplotlib found "
              "(apt-get install python3-matplotlib); writing the Markdown only")

    index = [
        "# Benchmarks: the sources' tables on this machine",
        "",
        "The tables that the workbook's source documents published, rerun here by "
        "`workbook_bench` (`make bench`) with the workbook's own kernels and a plain host loop, "
        "and set beside the published figures by `bench/report.py` (the published figures and "
        "the matching of runs to columns are in `bench/sources.json`). The sources ran on GPUs "
        "and CPUs a decade older, and timed different things; what carries over is mostly the "
        "ratios, each set beside the source's claim.",
        "",
    ]
    index += machine_table(meta)
    for table in tables:
        path = os.path.join(results, table["id"] + ".csv")
        if not os.path.exists(path):
            # A bench run may leave a table out: say so, and go on with the others.
            line = "No %s.csv in the results, so this table is skipped." % table["id"]
            print("report.py: skipped %s: no %s.csv in %s" % (table["id"], table["id"], results))
            index += ["## %s" % table["title"], "", line, ""]
            continue
        rows = read_table_csv(path)
        plot_file = plot_table(plt, table, rows, meta, out_dir) if plt else None
        with open(os.path.join(out_dir, table["id"] + ".md"), "w", encoding="utf-8") as f:
            f.write("\n".join(table_markdown(table, rows, meta, 1, plot_file)))
        index += table_markdown(table, rows, meta, 2, plot_file)
        print("report.py: wrote %s.md%s" % (table["id"], " and its plot" if plot_file else ""))
    with open(os.path.join(out_dir, "README.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(index))
    print("report.py: wrote %s" % os.path.join(out_dir, "README.md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
