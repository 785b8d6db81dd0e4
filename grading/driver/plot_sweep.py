#!/usr/bin/env python3
"""Draws lab 06's sweep: time and percent of the ceiling against threads per block (log x axis).

Usage: plot_sweep.py FOLDER   (reads FOLDER/sweep.csv and FOLDER/cpu.csv, writes FOLDER/sweep.png
and FOLDER/sweep.svg). Uses only matplotlib (Debian: python3-matplotlib).

plot_sweep.py --on-request FOLDER loads matplotlib, then waits for a line "plot" on its standard
input before drawing, and exits without drawing when the input ends first: lab 06's checker starts
it early, so that loading matplotlib overlaps the sweeps.
"""
import csv
import io
import os
import sys

NO_MATPLOTLIB = 77  # the exit status that tells the checker to skip, not fail

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("plot_sweep.py: this python3 has no matplotlib (Debian: python3-matplotlib)")
    sys.exit(NO_MATPLOTLIB)


def main(folder):
    with open(os.path.join(folder, "sweep.csv")) as f:
        rows = list(csv.DictReader(f))
    cpu = []
    if os.path.exists(os.path.join(folder, "cpu.csv")):
        with open(os.path.join(folder, "cpu.csv")) as f:
            cpu = list(csv.DictReader(f))
    experiments = []
    for r in rows:
        if r["experiment"] not in experiments:
            experiments.append(r["experiment"])

    fig, (time_ax, share_ax) = plt.subplots(1, 2, figsize=(12, 4.8))
    for name in experiments:
        points = [r for r in rows if r["experiment"] == name]
        threads = [int(r["threads_per_block"]) for r in points]
        time_ax.plot(threads, [float(r["median_ms"]) for r in points], "o-", label=name)
        share_ax.plot(threads, [float(r["percent_of_ceiling"]) for r in points], "o-",
                      label="%s (%% of %s)" % (name, points[0]["ceiling"]))
        share_ax.plot(threads, [100 * float(r["predicted_occupancy"]) for r in points], ":",
                      color=share_ax.lines[-1].get_color(), alpha=0.6,
                      label="%s: predicted occupancy" % name)
    for r in cpu:
        time_ax.axhline(float(r["ms"]), linestyle="--", color="grey" if r["threads"] == "1" else "black",
                        label="CPU %s x %s, %s thread%s" % (r["size"], r["size"], r["threads"],
                                                            "" if r["threads"] == "1" else "s"))
    time_ax.set(xscale="log", yscale="log", xlabel="threads per block", ylabel="median time (ms)",
                title="Time per run")
    share_ax.set(xscale="log", xlabel="threads per block", ylabel="percent",
                 title="Speed as % of the ceiling, and predicted occupancy", ylim=(0, 105))
    for ax in (time_ax, share_ax):
        ax.set_xticks([1, 4, 16, 32, 64, 128, 256, 512, 1024])
        ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        # The ticks above are all the x axis needs: a log axis's minor ticks, each measured for
        # the layout, took half of the drawing's time.
        ax.get_xaxis().set_minor_locator(matplotlib.ticker.NullLocator())
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(folder, "sweep." + ext), dpi=120)


def warm_up():
    """Draws an empty figure in both formats: the fonts and both backends load before they are needed."""
    fig = plt.figure()
    fig.text(0.5, 0.5, "warm-up")
    for ext in ("png", "svg"):
        fig.savefig(io.BytesIO(), format=ext)
    plt.close(fig)


if __name__ == "__main__":
    if sys.argv[1] == "--on-request":
        warm_up()
        if sys.stdin.readline().strip() != "plot":
            sys.exit(0)
        main(sys.argv[2])
    else:
        main(sys.argv[1])
