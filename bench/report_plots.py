"""The plots of one table (PNG and SVG), drawn with matplotlib.

Part of bench/report.py (the entry point, which says what the report holds, and which runs
itself again under a Python with matplotlib when this one lacks it). plot_table draws a table
with several row keys as lines, time against size on log axes, and a table with one row key (the
Stokastik tables) as groups of horizontal bars, one group per column of the source.
"""
import os
import textwrap

from report_markdown import fmt_ms, left_out_text, threads_text, what_ran
from report_results import (THREADS_TABLE_SIZE, column_kind, find_cpu_row, keyed_by_threads,
                            measure, published, row_keys)

# Published figures in warm colours, measured ones in cool colours; one marker per source column,
# so that a column's published line and its measured lines are paired by shape.
PUBLISHED_COLOURS = ["#e65100", "#b71c1c", "#f9a825", "#8d6e63", "#d81b60", "#ff8a65", "#6d4c41"]
MEASURED_COLOURS = ["#1565c0", "#2e7d32", "#6a1b9a", "#00838f", "#283593", "#558b2f", "#00695c"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X"]


# -- matplotlib ----------------------------------------------------------------------------------

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


# -- labels shared by both kinds of plot ---------------------------------------------------------

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


# -- several row keys: lines ---------------------------------------------------------------------

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


# -- one row key: bars ---------------------------------------------------------------------------

def column_bars(table, rows, column, key):
    """One source column's bars, bottom-up, as (style, value, row): here, then published."""
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
    return group


def bar_text(style, value, row):
    """The words beside one bar: its time, or why it has none."""
    if value is not None and value > 0:
        return fmt_ms(value)
    if style == "published":
        return "not published"
    if row is not None and row["ms"] is None:
        return left_out_text(row)
    return "not measured"


def choose_bars(table, rows, key):
    """Every bar as (y, value or None, style, text), each group's label and its y, and the top y."""
    bars = []
    labels, ticks = [], []
    y = 0.0
    for column in reversed(table["columns"]):
        # Bars are laid out bottom-up: with copies, kernel, then published on top.
        start = y
        for style, value, row in column_bars(table, rows, column, key):
            bars.append((y, value if value and value > 0 else None, style,
                         bar_text(style, value, row)))
            y += 1
        ticks.append((start + y - 1) / 2.0)
        labels.append(textwrap.fill(column["label"], 26) if column.get("match") else
                      textwrap.fill(column["label"], 26) + "\n(not rerun)")
        y += 0.8   # a gap between groups
    return bars, ticks, labels, y


def bar_styles(table, meta):
    """How each kind of bar is drawn, with its legend label naming the machine it ran on."""
    gpu = (meta or {}).get("gpu") or "this GPU"
    cpu = short((meta or {}).get("cpu") or "this CPU")
    return {
        "published": dict(facecolor="none", edgecolor="#e65100", hatch="///", linestyle="--",
                          label="published (%s machine)" % table["source_gpu"]),
        "kernel": dict(facecolor="#1565c0", label="here, kernel (%s)" % gpu),
        "copies": dict(facecolor="#90caf9", edgecolor="#1565c0", linestyle=":",
                       label="here, with copies (%s)" % gpu),
        "cpu": dict(facecolor="#455a64", label="here, CPU (%s)" % cpu),
    }


def time_range(bars):
    """(low, high) of the log time axis, with room for the text beyond the longest bar."""
    values = [b[1] for b in bars if b[1]]
    low = min(values) / 4 if values else 0.1
    high = max(values) * 12 if values else 10
    return low, high


def draw_bars(ax, bars, styles, low):
    """Each bar with its time written beyond its end; for a bar with no time, why, at the left."""
    for yi, value, style, text in bars:
        kwargs = dict(styles[style])
        kwargs.pop("label")
        if value:
            ax.barh(yi, value, height=0.85, **kwargs)
            ax.text(value * 1.1, yi, text, va="center", fontsize=8)
        else:
            # Nothing to draw on a log axis: say why at its left edge.
            ax.text(low * 1.1, yi, text, va="center", fontsize=8, color="#616161")


def legend_handles(plt, bars, styles):
    """The legend in reading order, for the kinds of bar the chart has."""
    drawn = {b[2] for b in bars}
    handles = []
    for style in ("published", "kernel", "copies", "cpu"):
        if style in drawn:
            kwargs = dict(styles[style])
            label = kwargs.pop("label")
            handles.append(plt.Rectangle((0, 0), 1, 1, label=label, **kwargs))
    return handles


def label_bar_axes(ax, table, meta, key, ticks, labels, top):
    """The columns' names beside their groups, the time axis's label, the grid and the title."""
    ax.set_yticks(ticks)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_ylim(-0.8, top - 0.5)
    ax.set_xlabel("time at %s (ms, log scale; shorter is faster)" % key)
    ax.grid(True, axis="x", which="major", alpha=0.3)
    ax.spines["top"].set_visible(False)
    ax.spines["right"].set_visible(False)
    ax.set_title(plot_title(table, meta), fontsize=10, loc="left")


def plot_bars(plt, table, rows, meta, key):
    """One row key: a group of horizontal bars per source column (published, kernel, with
    copies), on a log axis since a CPU loop and a kernel differ a thousandfold."""
    bars, ticks, labels, top = choose_bars(table, rows, key)
    # The figure grows with the number of bars, so that every bar keeps the same height.
    fig, ax = plt.subplots(figsize=(11.5, 0.42 * top + 1.8))
    styles = bar_styles(table, meta)
    low, high = time_range(bars)
    draw_bars(ax, bars, styles, low)
    handles = legend_handles(plt, bars, styles)
    ax.set_xscale("log")
    ax.set_xlim(low, high)
    label_bar_axes(ax, table, meta, key, ticks, labels, top)
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
              frameon=False)
    return fig


# -- drawing and saving --------------------------------------------------------------------------

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

