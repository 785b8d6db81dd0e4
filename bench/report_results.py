"""Reading the bench's results, and matching its runs to the columns of the sources' tables.

Part of bench/report.py (the entry point, which says what the report holds). This module reads
one results folder: meta.json (the machine) and a CSV per table, each row one run. A source's
table has columns (bench/sources.json), each naming with "match" the bench's implementation that
stands beside it; the functions below find, for a column and a row key (a size, or for
ijcee_table2 a number of threads per block), the runs measured here (a Measured) and the figure
the source published. report_markdown.py and report_plots.py both draw from these.
"""
import csv
import json
import os

# ijcee_table2 is keyed by threads per block; all its runs multiply 512 x 512 matrices.
THREADS_TABLE_SIZE = "512"


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
