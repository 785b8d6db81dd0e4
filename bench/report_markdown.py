"""The Markdown of one table: the published figures beside the measured ones, and notes.

Part of bench/report.py (the entry point, which says what the report holds). table_markdown
writes one table's section: where the source's figures came from and where this run's did, the
figures side by side, the ratios the source claims beside the same ratios measured here, each
kernel's rate against this GPU's ceiling, the plot, and notes. The formatting helpers at the top
(times, ratios, what ran) are shared with report_plots.py, so that a plot and its table say the
same thing in the same words.
"""
import re

from report_results import (THREADS_TABLE_SIZE, as_int, column_kind, find_cpu_row, measure,
                            measured_for_label, published, ratio, row_keys)

DASH = "—"   # a figure not published, or not measured in this run


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
    # Every table's kernels do one kind of work, so the first one names the ceiling for all.
    if sized[0][1][2] == "sgemm_gflops":
        ceiling_text = "cuBLAS SGEMM (FP32, %s GFLOP/s)" % "{:,.0f}".format(float(meta["sgemm_gflops"]))
    else:
        ceiling_text = "a device-to-device copy (%s GB/s)" % "{:,.0f}".format(float(meta["copy_gbs"]))
    lines = ["**Against this GPU's ceiling**, each kernel alone at the largest size measured, beside "
             "%s measured in the same run:" % ceiling_text,
             "",
             "| implementation | threads per block | size | rate | % of ceiling |",
             "|---|---|---|---|---|"]
    for r, (work, unit, ceiling) in sized:
        if work != largest:
            continue
        rate = work / (r["ms"] / 1e3)
        percent = 100 * rate / float(meta[ceiling])
        lines.append("| %s | %s | %s | %s %s | %.0f%% |" % (
            r["implementation"], r["threads"] or DASH, r["size"], "{:,.0f}".format(rate), unit, percent))
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

