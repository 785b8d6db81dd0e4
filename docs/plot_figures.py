#!/usr/bin/env python3
"""Draws each lab's measured figures from docs/figures/reference_run.csv, with matplotlib.

    plot_figures.py --out DIR [--csv FILE]

Writes DIR/reference_run_<lab>.png for every lab with rows in the CSV: one panel per quantity
(bandwidth, rate, time, ...), one horizontal bar per row. This GPU's reference solutions are
drawn solid, the same GPU's ceilings (copy, cuBLAS) hatched, and the figures that the source
documents published in another colour, each labelled with its source and machine. Times use a
logarithmic axis, since a P100 machine's wall clock and an H100 kernel differ a hundredfold.
docs/build_docs.py runs it before Doxygen; nothing it draws is committed.
"""
import argparse
import csv
import os
import sys
from collections import OrderedDict

HERE = os.path.dirname(os.path.abspath(__file__))

COLOURS = {"measured": "#2e7d32", "ceiling": "#9e9e9e", "published": "#ef6c00"}
LEGEND = {"measured": "this GPU: reference solution", "ceiling": "this GPU: ceiling (same run)",
          "published": "published by a source"}


def read_rows(path):
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(line for line in f if line.strip() and not line.startswith("#")))


def number(text):
    value = float(text)
    if value >= 100:
        return "{:,.0f}".format(value)
    return "%.3g" % value


def plot_lab(plt, lab, rows, out_dir):
    panels = OrderedDict()
    for r in rows:
        panels.setdefault(r["panel"], []).append(r)
    heights = [0.9 + 0.42 * len(p) for p in panels.values()]
    fig, axes = plt.subplots(len(panels), 1, figsize=(9.5, sum(heights) + 0.9),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    measured = [r for r in rows if r["kind"] != "published"]
    gpus = ", ".join(sorted({r["gpu"] for r in measured}))
    dates = ", ".join(sorted({r["date"] for r in measured}))
    fig.suptitle("Lab %s: reference run on %s (%s)" % (lab.replace("_", " ", 1).replace("_", " "),
                                                       gpus, dates), fontsize=12, x=0.02, ha="left")
    kinds_seen = set()
    for ax, (panel, prows) in zip(axes[:, 0], panels.items()):
        unit = prows[0]["unit"]
        values = [float(r["value"]) for r in prows]
        labels = []
        for r in prows:
            label = r["label"]
            if r["kind"] == "published":
                label += "\n%s, %s" % (r["source"], r["gpu"])
            labels.append(label)
        y = list(range(len(prows)))[::-1]
        for yi, r, v in zip(y, prows, values):
            kinds_seen.add(r["kind"])
            ax.barh(yi, v, color=COLOURS.get(r["kind"], "#1565c0"),
                    hatch="//" if r["kind"] == "ceiling" else None,
                    edgecolor="white" if r["kind"] == "ceiling" else None, height=0.65)
        log = unit == "ms" and max(values) / max(min(values), 1e-12) > 50
        if log:
            ax.set_xscale("log")
        top = max(values)
        for yi, v in zip(y, values):
            ax.text(v * (1.08 if log else 1) + (0 if log else top * 0.01), yi, " " + number(v),
                    va="center", fontsize=9)
        ax.set_xlim(right=top * (8 if log else 1.18))
        ax.set_yticks(y)
        ax.set_yticklabels(labels, fontsize=9)
        ax.set_title("%s (%s%s%s)" % (panel, unit, ", log scale" if log else "",
                                        ", shorter is faster" if unit == "ms" else ""), fontsize=10,
                     loc="left")
        ax.spines["top"].set_visible(False)
        ax.spines["right"].set_visible(False)
        ax.tick_params(axis="x", labelsize=8)
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLOURS[k], hatch="//" if k == "ceiling" else None)
               for k in ("measured", "ceiling", "published") if k in kinds_seen]
    names = [LEGEND[k] for k in ("measured", "ceiling", "published") if k in kinds_seen]
    fig.legend(handles, names, loc="lower center", ncol=len(names), fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 0.97))
    path = os.path.join(out_dir, "reference_run_%s.png" % lab)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="folder for the PNG files")
    p.add_argument("--csv", default=os.path.join(HERE, "figures", "reference_run.csv"))
    args = p.parse_args(argv)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    matplotlib.rcParams["svg.hashsalt"] = "workbook"   # reproducible output

    rows = read_rows(args.csv)
    os.makedirs(args.out, exist_ok=True)
    labs = OrderedDict()
    for r in rows:
        labs.setdefault(r["lab"], []).append(r)
    for lab, lab_rows in labs.items():
        print("drew %s" % plot_lab(plt, lab, lab_rows, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
