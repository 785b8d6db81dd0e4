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
"""
import argparse
import csv
import json
import os
import re
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SOURCES = os.path.join(HERE, "sources.json")
EXIT_USAGE = 2
DASH = "—"
# Set when this script has re-run itself under another Python, so that it never loops.
REEXEC_ENV = "WORKBOOK_BENCH_REPORT_REEXEC"
# ijcee_table2 is keyed by threads per block; all its runs multiply 512 x 512 matrices.
THREADS_TABLE_SIZE = "512"

# Published figures in warm colours, measured ones in cool colours; one marker per source column,
# so that a column's published line and its measured lines are paired by shape.
PUBLISHED_COLOURS = ["#e65100", "#b71c1c", "#f9a825", "#8d6e63", "#d81b60", "#ff8a65", "#6d4c41"]
MEASURED_COLOURS = ["#1565c0", "#2e7d32", "#6a1b9a", "#00838f", "#283593", "#558b2f", "#00695c"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X"]


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


def load_pyplot():
    """matplotlib.pyplot with the Agg backend (no display needed), or None without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    matplotlib.rcParams["svg.hashsalt"] = "workbook"   # the same SVG for the same numbers
    return plt


# -- reading the results -------------------------------------------------------------------------

def read_meta(results):
    path = os.path.join(results, "meta.json")
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            meta = json.load(f)
    except ValueError as e:
        # The machine is a caption: a damaged meta.json must not cost the tables.
        print("report.py: %s is not valid JSON (%s); the machine is left unnamed" % (path, e))
        return {}
    return meta if isinstance(meta, dict) else {}


def read_table_csv(path):
    """The rows of one table's CSV, each a dict of the header's columns, with "ms" a float or
    None (a run left out). Lines starting with # are comments (the test fixture's label)."""
    rows = []
    with open(path, encoding="utf-8", newline="") as f:
        lines = [line for line in f if line.strip() and not line.lstrip().startswith("#")]
    for raw in csv.DictReader(lines):
        row = {key: (raw.get(key) or "").strip() for key in
               ("table", "size", "implementation", "where", "threads", "copies", "ms", "note")}
        try:
            row["ms"] = float(row["ms"]) if row["ms"] else None
        except ValueError:
            row["note"] = row["note"] or "unreadable time %r" % row["ms"]
            row["ms"] = None
        rows.append(row)
    return rows


def as_int(text, default=0):
    try:
        return int(text)
    except (TypeError, ValueError):
        return default


# -- matching the source's columns to the bench's rows --------------------------------------------

def keyed_by_threads(table):
    return table.get("size_label") == "threads per block"


def column_kind(rows, match):
    """"cpu" or "gpu": where the column's runs ran. Read from the rows, or, when none was
    measured, from the match: only CPU columns name a thread count."""
    wheres = {r["where"] for r in rows if r["implementation"] == match["implementation"]}
    if wheres:
        return "cpu" if wheres == {"cpu"} else "gpu"
    return "cpu" if match.get("threads") else "gpu"


def find_cpu_row(rows, match, size):
    """The CPU row of match's implementation at size: threads "1" is the one-thread run, "all"
    the run with the most threads (more than one)."""
    found = [r for r in rows if r["where"] == "cpu" and r["implementation"] == match["implementation"]
             and r["size"] == size]
    threads = match.get("threads")
    if threads == "all":
        found = [r for r in found if as_int(r["threads"]) > 1]
        return max(found, key=lambda r: as_int(r["threads"])) if found else None
    if threads:
        found = [r for r in found if r["threads"] == threads]
    return found[0] if found else None


def find_gpu_rows(rows, match, size, threads=None):
    """(kernel row, with-copies row) of match's implementation at size; either may be None."""
    found = [r for r in rows if r["where"] == "gpu" and r["implementation"] == match["implementation"]
             and r["size"] == size]
    if threads is not None:
        found = [r for r in found if r["threads"] == threads]
    elif match.get("threads"):
        found = [r for r in found if r["threads"] == match["threads"]]
    kernel = [r for r in found if r["copies"] == "kernel"]
    copies = [r for r in found if r["copies"] == "with copies"]
    return (kernel[0] if kernel else None), (copies[0] if copies else None)


class Measured:
    """What was measured here for one source column at one row key."""

    def __init__(self, kind, cpu=None, kernel=None, copies=None):
        self.kind = kind          # "cpu" or "gpu"
        self.cpu = cpu            # the CPU row, or None
        self.kernel = kernel      # the GPU row timed without copies, or None
        self.copies = copies      # the GPU row timed with its copies, or None

    def kernel_ms(self):
        row = self.cpu if self.kind == "cpu" else self.kernel
        return row["ms"] if row else None

    def copies_ms(self):
        # A CPU run has no copies: its one time stands beside both of the GPU's.
        row = self.cpu if self.kind == "cpu" else self.copies
        return row["ms"] if row else None

    def rows(self):
        return [r for r in (self.cpu, self.kernel, self.copies) if r]


def measure(table, rows, match, key):
    """The Measured runs of a column (match) at a row key."""
    kind = column_kind(rows, match)
    if keyed_by_threads(table):
        size, gpu_threads = THREADS_TABLE_SIZE, key
    else:
        size, gpu_threads = key, None
    if kind == "cpu":
        return Measured("cpu", cpu=find_cpu_row(rows, match, size))
    kernel, copies = find_gpu_rows(rows, match, size, gpu_threads)
    return Measured("gpu", kernel=kernel, copies=copies)


def row_keys(table, rows):
    """The table's row keys: the published ones, and any measured here only (e.g. 1024 threads
    per block). Numeric keys are sorted by value."""
    keys = list(table["published"].keys())
    matched = {c["match"]["implementation"] for c in table["columns"] if c.get("match")}
    for r in rows:
        if r["implementation"] not in matched:
            continue
        if keyed_by_threads(table):
            key = r["threads"] if r["where"] == "gpu" and r["size"] == THREADS_TABLE_SIZE else None
        else:
            key = r["size"]
        if key and key not in keys:
            keys.append(key)
    if all(k.isdigit() for k in keys):
        keys.sort(key=int)
    return keys


def published(table, label, key):
    """The figure the source published for the column named label at key, or None. The label
    of the table's reference (Table 2's MulH) gives the reference's figure at every key."""
    ref = table.get("reference")
    if ref and ref["label"] == label:
        return ref["ms"]
    for i, column in enumerate(table["columns"]):
        if column["label"] == label:
            values = table["published"].get(key)
            return values[i] if values and i < len(values) else None
    return None


def measured_for_label(table, rows, label, key):
    """The Measured runs beside the column named label (or the reference) at key, or None."""
    ref = table.get("reference")
    if ref and ref["label"] == label:
        # The reference is one host run at the table's one size, whatever the threads per block.
        return Measured("cpu", cpu=find_cpu_row(rows, ref["match"], THREADS_TABLE_SIZE))
    for column in table["columns"]:
        if column["label"] == label and column.get("match"):
            return measure(table, rows, column["match"], key)
    return None


def ratio(slower, faster):
    if slower is None or faster is None or slower <= 0 or faster <= 0:
        return None
    return slower / faster


# -- formatting ----------------------------------------------------------------------------------

def fmt_ms(value):
    """Milliseconds to 3 significant digits, whole numbers with separators from 1,000 on."""
    if value is None:
        return DASH
    if value >= 999.5:
        return "{:,.0f}".format(value)
    if value == 0:
        return "0"
    return "%.3g" % value


def fmt_ratio(value):
    """A speedup: 2.2x, 18.4x, 875x, 1,500x; 0.83x when the "faster" side is slower."""
    if value is None:
        return DASH
    if value >= 99.95:
        return "{:,.0f}x".format(value)
    if value >= 1:
        return "%.1fx" % value
    return "%.2gx" % value


def left_out_text(row):
    """"left out (> 30 s)" from a note such as "left out: over 30 s on one thread"."""
    note = row.get("note", "")
    m = re.search(r"over\s+([0-9.]+)\s*s\b", note)
    if m:
        return "left out (> %s s)" % m.group(1)
    return "left out" if note.lower().startswith("left out") else DASH


def fmt_run(row):
    if row is None:
        return DASH
    if row["ms"] is None:
        return left_out_text(row)
    return fmt_ms(row["ms"])


def fmt_measured(m):
    """A cell of figures measured here: CPU "1,234", GPU "0.137 / 1.21" (kernel / with copies)."""
    if m is None:
        return DASH
    if m.kind == "cpu":
        return fmt_run(m.cpu)
    if m.kernel is None and m.copies is None:
        return DASH
    kernel, copies = fmt_run(m.kernel), fmt_run(m.copies)
    if kernel == copies and kernel.startswith("left out"):
        return kernel
    return "%s / %s" % (kernel, copies)


def cell(text):
    return str(text).replace("|", "\\|")


def threads_text(threads):
    return "1 thread" if threads == "1" else "%s threads" % threads


def cpu_threads_text(rows, match):
    """"1 thread", "16 threads": the thread count of a CPU column's runs."""
    if match.get("threads") == "1":
        return "1 thread"
    counts = {r["threads"] for r in rows if r["where"] == "cpu"
              and r["implementation"] == match["implementation"] and as_int(r["threads"]) > 1}
    if len(counts) == 1:
        return threads_text(counts.pop())
    return "all threads"   # not measured, or (unexpectedly) several counts


def what_ran(rows, match, kind):
    """The bench's implementation behind a column, e.g. "host loop, 16 threads"."""
    if kind == "cpu":
        return "%s, %s" % (match["implementation"], cpu_threads_text(rows, match))
    return match["implementation"]


def machine_line(meta):
    """One sentence naming this machine, from meta.json (every field optional)."""
    if not meta:
        return "This machine: not recorded (no usable meta.json in the results)."
    gpu = meta.get("gpu") or "an unnamed GPU"
    details = []
    if meta.get("sm"):
        details.append("sm %s" % meta["sm"])
    if meta.get("cuda"):
        details.append("CUDA %s" % meta["cuda"])
    if meta.get("driver"):
        details.append("driver %s" % meta["driver"])
    text = "This machine: %s%s" % (gpu, " (%s)" % ", ".join(details) if details else "")
    cpu = meta.get("cpu") or "an unnamed CPU"
    threads = meta.get("cpu_threads")
    text += " and %s%s" % (cpu, " (%s threads)" % threads if threads else "")
    if meta.get("date"):
        text += ", on %s" % meta["date"]
    text += "."
    if meta.get("gpu_timing"):
        text += " GPU times: %s." % meta["gpu_timing"].rstrip(".")
    if meta.get("cpu_flags"):
        text += " Host code built with %s." % meta["cpu_flags"]
    return text


# -- one table's Markdown ------------------------------------------------------------------------

def key_header(table):
    if table.get("size_label") == "8n":
        return ["n", "8n"]
    return [table.get("size_label") or "size"]


def key_cells(table, key):
    if table.get("size_label") == "8n":
        # The paper's n: the matrices are 8n x 8n.
        return [str(as_int(key) // 8) if key.isdigit() else DASH, key]
    return [key]


def source_header(table, meta):
    lines = [
        "Source: %s. Its GPU: %s; its CPU: %s. Its timings: %s." % (
            table["source"], table["source_gpu"], table["source_cpu"],
            table["source_timing"].rstrip(".")),
        "",
        machine_line(meta),
        "",
    ]
    return lines


def figures_table(table, rows, keys):
    """The published figures beside the measured ones. Several row keys: a row per key, two
    columns per source column (one when not rerun). One row key (the Stokastik tables): a row per
    source column, which reads far better than one row ten cells wide."""
    columns = table["columns"]
    out = []
    if len(keys) == 1:
        key = keys[0]
        out.append("| %s | published | here | what ran here |" % ("column of the source, at %s" % key))
        out.append("|---|---:|---:|---|")
        for column in columns:
            pub = fmt_ms(published(table, column["label"], key))
            match = column.get("match")
            if not match:
                out.append("| %s | %s | not rerun | %s |" % (cell(column["label"]), pub, DASH))
                continue
            kind = column_kind(rows, match)
            ran = what_ran(rows, match, kind)
            if kind == "gpu":
                ran += " (kernel / with copies)"
            out.append("| %s | %s | %s | %s |" % (cell(column["label"]), pub,
                                                   fmt_measured(measure(table, rows, match, key)),
                                                   cell(ran)))
        return out
    header = key_header(table)
    align = ["---:"] * len(header)
    for column in columns:
        match = column.get("match")
        if not match:
            header.append("%s: published (not rerun here)" % column["label"])
            align.append("---:")
            continue
        kind = column_kind(rows, match)
        header.append("%s: published" % column["label"])
        header.append("here: %s%s" % (what_ran(rows, match, kind),
                                      " (kernel / with copies)" if kind == "gpu" else ""))
        align += ["---:", "---:"]
    out.append("| %s |" % " | ".join(cell(h) for h in header))
    out.append("|%s|" % "|".join(align))
    for key in keys:
        cells = key_cells(table, key)
        for column in columns:
            cells.append(fmt_ms(published(table, column["label"], key)))
            if column.get("match"):
                cells.append(fmt_measured(measure(table, rows, column["match"], key)))
        out.append("| %s |" % " | ".join(cells))
    return out


def reference_line(table, rows):
    """Table 2's host reference (MulH, 357 ms) beside the host loop measured here at 512."""
    ref = table.get("reference")
    if not ref:
        return []
    one = find_cpu_row(rows, ref["match"], THREADS_TABLE_SIZE)
    all_match = dict(ref["match"], threads="all")
    many = find_cpu_row(rows, all_match, THREADS_TABLE_SIZE)
    def took(row, threads):
        if row is None:
            return "not measured on %s" % threads_text(threads)
        if row["ms"] is None:
            return "%s on %s" % (left_out_text(row), threads_text(row["threads"]))
        return "%s ms on %s" % (fmt_ms(row["ms"]), threads_text(row["threads"]))

    text = ("Host reference at %s x %s: %s, published %s ms; here %s: %s"
            % (THREADS_TABLE_SIZE, THREADS_TABLE_SIZE, ref["label"], fmt_ms(ref["ms"]),
               ref["match"]["implementation"], took(one, "1")))
    if many:
        text += ", %s" % took(many, many["threads"])
    return [text + ".", ""]


def claims_table(table, rows):
    """Each claim's ratio (slower / faster) from the published figures and as measured here."""
    out = ["| claim | at | slower / faster | source | here |", "|---|---:|---|---:|---|"]
    for claim in table.get("claims", []):
        key, slow, fast = claim["size"], claim["slower"], claim["faster"]
        claimed = ratio(published(table, slow, key), published(table, fast, key))
        m_slow = measured_for_label(table, rows, slow, key)
        m_fast = measured_for_label(table, rows, fast, key)
        if m_slow is None or m_fast is None:
            ours = DASH
        else:
            by_kernel = ratio(m_slow.kernel_ms(), m_fast.kernel_ms())
            with_copies = ratio(m_slow.copies_ms(), m_fast.copies_ms())
            if m_slow.kind == "cpu" and m_fast.kind == "cpu":
                ours = fmt_ratio(by_kernel)          # no copies on either side
            elif by_kernel is None and with_copies is None:
                ours = DASH
            else:
                ours = "%s kernel, %s with copies" % (fmt_ratio(by_kernel), fmt_ratio(with_copies))
        out.append("| %s | %s | %s / %s | %s | %s |" % (
            cell(claim["text"]), key, cell(slow), cell(fast), fmt_ratio(claimed), ours))
    return out


def notes(table, rows, keys, meta):
    """Columns not rerun, runs left out, and runs that no column of the source matches."""
    out = []
    for label, why in table.get("not_rerun", {}).items():
        out.append("%s: %s." % (label, why.rstrip(".")))
    for column in table["columns"]:
        match = column.get("match")
        if not match:
            continue
        for key in keys:
            for r in measure(table, rows, match, key).rows():
                if r["ms"] is None:
                    if r["where"] == "cpu":
                        ran = "%s, %s" % (r["implementation"], threads_text(r["threads"]))
                    else:
                        ran = "%s, %s" % (r["implementation"], r["copies"])
                    out.append("%s at %s (%s): %s." % (column["label"], key, ran,
                                                       (r["note"] or "not measured").rstrip(".")))
    matched = {c["match"]["implementation"] for c in table["columns"] if c.get("match")}
    if table.get("reference"):
        matched.add(table["reference"]["match"]["implementation"])
    extra = {}
    for r in rows:
        if r["implementation"] not in matched:
            extra.setdefault(r["implementation"], [])
            if r["size"] not in extra[r["implementation"]]:
                extra[r["implementation"]].append(r["size"])
    for implementation, sizes in extra.items():
        out.append("Also measured here, beside no column of the source: %s (at %s); see %s.csv."
                   % (implementation, ", ".join(sizes), table["id"]))
    # What each of this run's implementations is, so that a reader can tell, say, the source's
    # 32 x 32 tiles from the workbook's 16 x 16 ones.
    described = (meta or {}).get("implementations", {})
    for implementation in sorted({r["implementation"] for r in rows}):
        if implementation in described:
            out.append("%s: %s." % (implementation, described[implementation].rstrip(".")))
    if any(v == 0 for values in table["published"].values() for v in values):
        out.append("A published 0 is a time the source printed in whole milliseconds: under 1 ms.")
    unmeasured = [k for k in keys if not any(
        measure(table, rows, c["match"], k).rows() for c in table["columns"] if c.get("match"))]
    if unmeasured:
        out.append("Not measured in this run%s: %s." % (
            " (a quick run, `--quick`, measures fewer sizes)" if meta and meta.get("quick") else "",
            ", ".join(unmeasured)))
    return out


# The work of one GPU kernel run, per table: floating-point operations for the matrix products
# (2mnk), bytes for the transpose and the convolution (the input read once, the output written
# once), and the ceiling each is set beside.
MATMUL_TABLES = ("ijcee_table1", "ijcee_table2", "cis750", "stokastik_matmul")
BYTES_TABLES = ("stokastik_transpose", "stokastik_convolution")


def kernel_work(table_id, size):
    """(work per run, unit, ceiling key in meta.json) for a size cell, or None."""
    dims = [int(d) for d in re.findall(r"\d+", size)]
    if table_id in MATMUL_TABLES and len(dims) in (1, 3):
        m, k, n = dims * 3 if len(dims) == 1 else dims
        return 2.0 * m * k * n / 1e9, "GFLOP/s", "sgemm_gflops"
    if table_id in BYTES_TABLES and len(dims) == 2:
        return 2.0 * dims[0] * dims[1] * 4 / 1e9, "GB/s", "copy_gbs"
    return None


def ceiling_table(table, rows, meta):
    """Each GPU implementation's kernel-alone rate at the table's largest size, as a percentage
    of this GPU's ceiling measured in the same run (cuBLAS SGEMM FP32, or a device copy)."""
    kernel_rows = [r for r in rows if r["where"] == "gpu" and r["copies"] == "kernel" and r["ms"]]
    sized = [(r, kernel_work(table["id"], r["size"])) for r in kernel_rows]
    sized = [(r, w) for r, w in sized if w and meta.get(w[2])]
    if not sized:
        return []
    largest = max(w[0] for _, w in sized)
    lines = ["**Against this GPU's ceiling**, each kernel alone at the largest size measured, beside "
             "%s measured in the same run:" % ("cuBLAS SGEMM (FP32, %s GFLOP/s)" % "{:,.0f}".format(float(meta["sgemm_gflops"]))
                                               if sized[0][1][2] == "sgemm_gflops" else
                                               "a device-to-device copy (%s GB/s)" % "{:,.0f}".format(float(meta["copy_gbs"]))),
             "", "| implementation | threads per block | size | rate | % of ceiling |", "|---|---|---|---|---|"]
    for r, (work, unit, ceiling) in sized:
        if work != largest:
            continue
        rate = work / (r["ms"] / 1e3)
        lines.append("| %s | %s | %s | %s %s | %.0f%% |" % (r["implementation"], r["threads"] or DASH, r["size"],
                                                          "{:,.0f}".format(rate), unit, 100 * rate / float(meta[ceiling])))
    return lines + [""]


def table_markdown(table, rows, meta, level, plot_file):
    """One table's section; level 1 for its own file, 2 inside README.md."""
    keys = row_keys(table, rows)
    lines = ["%s %s" % ("#" * level, table["title"]), ""]
    lines += source_header(table, meta)
    lines.append("Times in milliseconds; a figure measured here is a median. GPU cells read "
                 "*kernel / with copies*: the kernel alone, and the kernel with the copy of its "
                 "inputs to the device and of its output back. %s: not published, or not "
                 "measured in this run." % DASH)
    lines.append("")
    lines += figures_table(table, rows, keys)
    lines.append("")
    lines += reference_line(table, rows)
    lines.append("**Ratios** claimed by the source, slower time over faster time, beside the "
                 "same ratio measured here:")
    lines.append("")
    lines += claims_table(table, rows)
    lines.append("")
    lines += ceiling_table(table, rows, meta)
    if plot_file:
        lines += ["![%s](%s)" % (table["title"].replace("]", ")").replace("[", "("), plot_file), ""]
    else:
        lines += ["(No plot: matplotlib was not found when this report was written.)", ""]
    found = notes(table, rows, keys, meta)
    if found:
        lines += ["**Notes**", ""] + ["- %s" % n for n in found] + [""]
    return lines


# -- plots ---------------------------------------------------------------------------------------

def short(text, width=40):
    text = text or ""
    return text if len(text) <= width else text[:width - 1] + "…"


def plot_title(table, meta):
    gpu = (meta or {}).get("gpu") or "this GPU"
    return "%s\npublished: %s; measured here: %s" % (
        textwrap.fill(table["title"], 110), table["source_gpu"], gpu)


def published_label(table, label, kind):
    """"MulDG (global memory) (GeForce 9400M)": a published column and the machine it ran on."""
    if kind is None:
        return "%s (published; not rerun here)" % label
    if kind == "cpu":
        return "%s (the source's CPU)" % label
    return "%s (%s)" % (label, table["source_gpu"])


def measured_label(rows, match, kind, meta, copies):
    meta = meta or {}
    if kind == "cpu":
        return "%s (%s)" % (what_ran(rows, match, kind), short(meta.get("cpu") or "this CPU"))
    return "%s, %s (%s)" % (match["implementation"], "with copies" if copies else "kernel",
                            meta.get("gpu") or "this GPU")


def plot_lines(plt, table, rows, meta, keys):
    """Time against size (or threads per block): one line per published column and per run."""
    fig, ax = plt.subplots(figsize=(11.5, 6.2))
    xs = {k: float(k) for k in keys}
    for i, column in enumerate(table["columns"]):
        colour_p = PUBLISHED_COLOURS[i % len(PUBLISHED_COLOURS)]
        colour_m = MEASURED_COLOURS[i % len(MEASURED_COLOURS)]
        marker = MARKERS[i % len(MARKERS)]
        points = [(xs[k], published(table, column["label"], k)) for k in keys]
        points = [(x, y) for x, y in points if y is not None and y > 0]   # log axis: no zeros
        match = column.get("match")
        kind = column_kind(rows, match) if match else None
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], linestyle="--",
                    marker=marker, markerfacecolor="none", color=colour_p, linewidth=1.4,
                    label=published_label(table, column["label"], kind))
        if not match:
            continue
        series = [("kernel", "-", False)] if kind == "cpu" else [("kernel", "-", False),
                                                                  ("copies", ":", True)]
        for which, style, copies in series:
            points = []
            for k in keys:
                m = measure(table, rows, match, k)
                y = m.kernel_ms() if which == "kernel" else m.copies_ms()
                if y is not None and y > 0:
                    points.append((xs[k], y))
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], linestyle=style,
                        marker=marker, color=colour_m, linewidth=1.8,
                        label=measured_label(rows, match, kind, meta, copies))
    ref = table.get("reference")
    if ref:
        # Table 2's host reference is one time, whatever the threads per block: a level line.
        ax.axhline(ref["ms"], linestyle="--", color="#795548", linewidth=1.2,
                   label=published_label(table, ref["label"], "cpu"))
        cpu = short((meta or {}).get("cpu") or "this CPU")
        for threads, style in (("1", "-"), ("all", "-.")):
            row = find_cpu_row(rows, dict(ref["match"], threads=threads), THREADS_TABLE_SIZE)
            if row and row["ms"]:
                ax.axhline(row["ms"], linestyle=style, color="#455a64", linewidth=1.4,
                           label="%s, %s (%s)" % (row["implementation"],
                                                   threads_text(row["threads"]), cpu))
    if keyed_by_threads(table):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("threads per block (log2 scale); matrices %s x %s"
                      % (THREADS_TABLE_SIZE, THREADS_TABLE_SIZE))
    else:
        ax.set_xscale("log")
        ax.set_xlabel("matrix side 8n (log scale; the paper's n is 8n / 8)"
                      if table.get("size_label") == "8n" else "matrix side n (log scale)")
    ax.set_xticks([xs[k] for k in keys])
    ax.set_xticklabels(keys)
    ax.xaxis.set_minor_locator(plt.NullLocator())
    ax.set_yscale("log")
    ax.set_ylabel("time (ms, log scale; lower is faster)")
    ax.grid(True, which="major", alpha=0.3)
    ax.set_title(plot_title(table, meta), fontsize=10, loc="left")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return fig


def plot_bars(plt, table, rows, meta, key):
    """One row key: a group of horizontal bars per source column (published, kernel, with
    copies), on a log axis since a CPU loop and a kernel differ a thousandfold."""
    bars = []   # (y, value, style, text)
    labels, ticks = [], []
    y = 0.0
    for column in reversed(table["columns"]):
        # Bars are laid out bottom-up: with copies, kernel, then published on top.
        group = []
        match = column.get("match")
        if match:
            m = measure(table, rows, match, key)
            if m.kind == "cpu":
                group.append(("cpu", m.kernel_ms(), m.cpu))
            else:
                group.append(("copies", m.copies_ms(), m.copies))
                group.append(("kernel", m.kernel_ms(), m.kernel))
        group.append(("published", published(table, column["label"], key), None))
        start = y
        for style, value, row in group:
            if value is not None and value > 0:
                text = fmt_ms(value)
            elif style == "published":
                text = "not published"
            elif row is not None and row["ms"] is None:
                text = left_out_text(row)
            else:
                text = "not measured"
            bars.append((y, value if value and value > 0 else None, style, text))
            y += 1
        ticks.append((start + y - 1) / 2.0)
        labels.append(textwrap.fill(column["label"], 26) if match else
                      textwrap.fill(column["label"], 26) + "\n(not rerun)")
        y += 0.8
    fig, ax = plt.subplots(figsize=(11.5, 0.42 * y + 1.8))
    gpu = (meta or {}).get("gpu") or "this GPU"
    cpu = short((meta or {}).get("cpu") or "this CPU")
    styles = {
        "published": dict(facecolor="none", edgecolor="#e65100", hatch="///", linestyle="--",
                          label="published (%s machine)" % table["source_gpu"]),
        "kernel": dict(facecolor="#1565c0", label="here, kernel (%s)" % gpu),
        "copies": dict(facecolor="#90caf9", edgecolor="#1565c0", linestyle=":",
                       label="here, with copies (%s)" % gpu),
        "cpu": dict(facecolor="#455a64", label="here, CPU (%s)" % cpu),
    }
    values = [b[1] for b in bars if b[1]]
    low = min(values) / 4 if values else 0.1
    high = max(values) * 12 if values else 10
    for yi, value, style, text in bars:
        kwargs = dict(styles[style])
        kwargs.pop("label")
        if value:
            ax.barh(yi, value, height=0.85, **kwargs)
            ax.text(value * 1.1, yi, text, va="center", fontsize=8)
        else:
            # Nothing to draw on a log axis: say why at its left edge.
            ax.text(low * 1.1, yi, text, va="center", fontsize=8, color="#616161")
    # The legend in reading order, for the kinds of bar the chart has.
    drawn = {b[2] for b in bars}
    handles = []
    for style in ("published", "kernel", "copies", "cpu"):
        if style in drawn:
            kwargs = dict(styles[style])
            label = kwargs.pop("label")
            handles.append(plt.Rectangle((0, 0), 1, 1, label=label, **kwargs))
    ax.set_xscale("log")
    ax.set_xlim(low, high)
    ax.set_yticks(ticks)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_ylim(-0.8, y - 0.5)
    ax.set_xlabel("time at %s (ms, log scale; shorter is faster)" % key)
    ax.grid(True, axis="x", which="major", alpha=0.3)
    ax.spines["top"].set_visible(False)
    ax.spines["right"].set_visible(False)
    ax.set_title(plot_title(table, meta), fontsize=10, loc="left")
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
              frameon=False)
    return fig


def plot_table(plt, table, rows, meta, out_dir):
    """Draws <id>.png and <id>.svg; returns the PNG's file name."""
    keys = row_keys(table, rows)
    if len(keys) == 1:
        fig = plot_bars(plt, table, rows, meta, keys[0])
    else:
        fig = plot_lines(plt, table, rows, meta, keys)
    name = table["id"] + ".png"
    fig.savefig(os.path.join(out_dir, name), dpi=110, bbox_inches="tight")
    fig.savefig(os.path.join(out_dir, table["id"] + ".svg"), bbox_inches="tight",
                metadata={"Date": None})   # no date: the same numbers give the same file
    plt.close(fig)
    return name


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
