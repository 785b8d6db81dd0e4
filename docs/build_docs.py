#!/usr/bin/env python3
"""Builds the book: `make docs`, and the test `docs.build`.

    build_docs.py --build-dir BUILD [--skip-if-missing]

1. Finds the tools: Doxygen, graphviz's dot, a Python with matplotlib (this one, or Debian's
   /usr/bin/python3, where python3-matplotlib installs), and the book's theme, the
   doxygen-awesome-css stylesheets (where Debian's package doxygen-awesome-css installs them,
   /usr/share/doxygen-awesome-css, or the folder that $DOXYGEN_AWESOME_CSS names: a checkout of
   the theme). A missing one is named with the command that installs it; the exit status is
   then 1, or 77 with --skip-if-missing
   (ctest's "skipped": the test suite never reports a docs check as passed that did not run).
2. Draws each lab's measured figures from docs/figures/reference_run.csv into BUILD/docs/figures
   (docs/plot_figures.py).
3. Writes the page "Benchmarks: the sources' tables on this GPU" (label `benchmarks`) into
   BUILD/docs/bench: when docs/bench/meta.json exists (the results that `make bench PUBLISH=1`
   copied there), bench/report.py turns docs/bench into Markdown tables and plots in that folder
   and the page is its README.md, plots shown with \\image; otherwise the page says that no
   bench results are committed yet and how to make them.
4. Runs Doxygen with docs/Doxyfile from the repository root, into BUILD/docs/html, after
   removing the previous site (a page of a removed lab must not linger). Every warning is an
   error: Doxygen's own (an undocumented public function of common/ or grading/, a broken \\ref or
   \\snippet, a missing image) and the Markdown filter's (a marker or link that leads nowhere).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "docs"))

from md_filter import walkthrough_of  # noqa: E402  (which page of the book walks a lab part through)
EXIT_SKIPPED = 77
INSTALL = "apt-get install doxygen graphviz python3-matplotlib doxygen-awesome-css"
# The theme: where Debian's doxygen-awesome-css package puts it, and the stylesheets the book
# uses, in the order docs/Doxyfile gives them (the base theme, then its sidebar-only variant).
THEME_DIRS = ["/usr/share/doxygen-awesome-css"]
THEME_FILES = ["doxygen-awesome.css", "doxygen-awesome-sidebar-only.css"]
BENCH_RESULTS = os.path.join(ROOT, "docs", "bench")
BENCH_TITLE = "Benchmarks: the sources' tables on this GPU"
# A Markdown image on a line of its own, as bench/report.py writes one under each table.
MD_IMAGE = re.compile(r"^!\[(.*)\]\(([^()\s/]+\.png)\)\s*$")


def python_with_matplotlib():
    candidates = [sys.executable, "/usr/bin/python3", shutil.which("python3") or ""]
    for python in candidates:
        if python and os.path.exists(python):
            r = subprocess.run([python, "-c", "import matplotlib"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            if r.returncode == 0:
                return python
    return None


def find_theme():
    """The folder that holds the doxygen-awesome-css stylesheets, or None."""
    folders = [os.environ.get("DOXYGEN_AWESOME_CSS", "")] + THEME_DIRS
    for folder in folders:
        if folder and all(os.path.isfile(os.path.join(folder, name)) for name in THEME_FILES):
            return folder
    return None


def find_tools():
    """((doxygen, dot, python, theme), missing): the paths of the book's tools, None for a
    missing one, and the missing ones' names. docs/tests/browser_test.py asks this too, to skip
    when the book could not be built."""
    tools = (shutil.which("doxygen"), shutil.which("dot"), python_with_matplotlib(), find_theme())
    names = ("doxygen", "graphviz (dot)", "matplotlib for Python 3",
             "the doxygen-awesome-css theme (package doxygen-awesome-css, in %s)" % THEME_DIRS[0])
    return tools, [name for name, found in zip(names, tools) if not found]


def missing_message(missing):
    return ("make docs needs %s, which %s not installed. Install: %s (Debian/Ubuntu; `make docs` "
            "or `make test` run as root installs them)."
            % (", ".join(missing), "is" if len(missing) == 1 else "are", INSTALL))


def doxygen_version(doxygen):
    """Doxygen's version as a tuple of numbers, (0,) when it does not say."""
    r = subprocess.run([doxygen, "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       text=True)
    m = re.match(r"\s*(\d+(?:\.\d+)*)", r.stdout)
    return tuple(int(part) for part in m.group(1).split(".")) if m else (0,)


def write_bench_page(python, bench_dir):
    """Writes bench_dir/benchmarks.md, the book's benchmarks page; returns its path, or None
    when bench/report.py failed on the committed results."""
    os.makedirs(bench_dir, exist_ok=True)
    lines = ["# %s {#benchmarks}" % BENCH_TITLE, ""]
    if os.path.exists(os.path.join(BENCH_RESULTS, "meta.json")):
        r = subprocess.run([python, os.path.join(ROOT, "bench", "report.py"),
                            "--results", BENCH_RESULTS, "--out", bench_dir])
        if r.returncode != 0:
            print("docs: bench/report.py failed on docs/bench (exit status %d)" % r.returncode)
            return None
        lines += [
            "From the bench results committed in `docs/bench/` (by `make bench PUBLISH=1`), "
            "drawn by `bench/report.py` when this book was built; \\ref sources names the "
            "documents.",
            "",
        ]
        with open(os.path.join(bench_dir, "README.md"), encoding="utf-8") as f:
            report = f.read().split("\n")
        if report and report[0].startswith("# "):
            report = report[1:]          # the page has its own title and label
        for line in report:
            m = MD_IMAGE.match(line)
            if m:
                # Doxygen finds the plot on IMAGE_PATH, which holds bench_dir.
                line = '\\image html %s "%s"' % (m.group(2), m.group(1).replace('"', "'"))
            lines.append(line)
    else:
        with open(os.path.join(ROOT, "bench", "sources.json"), encoding="utf-8") as f:
            tables = json.load(f)["tables"]
        lines += [
            "No bench results are committed yet.",
            "",
            "`make bench` runs `workbook_bench`, which reruns on this machine's GPU and CPU the "
            "tables that the workbook's sources published (\\ref sources), with the workbook's "
            "own kernels and a plain host loop, and writes one CSV per table and `meta.json` "
            "(the machine, the date, how the times were taken). `bench/report.py` then sets "
            "each table beside the published one, with the ratios the source claims, and plots "
            "it. `make bench PUBLISH=1` also copies the CSVs and `meta.json` into `docs/bench/`: "
            "commit them, and the next `make docs` draws this page from them.",
            "",
            "The tables it reruns:",
            "",
        ]
        lines += ["- %s (%s)." % (t["title"], t["source_gpu"]) for t in tables]
        lines.append("")
    page = os.path.join(bench_dir, "benchmarks.md")
    with open(page, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return page


def existing_paths_only(config, tags=("INPUT", "EXAMPLE_PATH")):
    """Lines that give each of `tags` only its paths that exist, for those of docs/Doxyfile's
    that name a missing one: the student edition (make handout) has no solutions/, which
    EXAMPLE_PATH names, and Doxygen warns of a missing path (a warning is an error here)."""
    joined = re.sub(r"\\\n", " ", config)  # a value continued on the next line
    lines = []
    for tag in tags:
        m = re.search(r"^%s\s*=(.*)$" % tag, joined, re.M)
        if not m:
            continue
        paths = m.group(1).split()
        kept = [path for path in paths if os.path.exists(os.path.join(ROOT, path.strip('"')))]
        if kept != paths:
            lines.append("%s = %s" % (tag, " ".join(kept)))
    return lines


def lab_pages_missing():
    """What the book lacks of labs.json, the one list of labs: each lab's walkthrough
    (labs/DIR/README.md, its page), each part's page (md_filter.walkthrough_of: its own
    labs/DIR/STEM.md, or the README) and, in that page, a snippet of the part's file."""
    with open(os.path.join(ROOT, "labs.json"), encoding="utf-8") as f:
        labs = json.load(f)["labs"]
    problems = []
    for lab in labs:
        readme = os.path.join(ROOT, "labs", lab["dir"], "README.md")
        if not os.path.exists(readme):
            problems.append("labs.json names %s, but %s is missing" % (lab["id"], os.path.relpath(readme, ROOT)))
            continue
        page = walkthrough_of(lab["dir"], lab["source"])
        with open(os.path.join(ROOT, page), encoding="utf-8") as f:
            text = f.read()
        shown = "labs/%s/%s" % (lab["dir"], lab["source"]), "solutions/%s/%s" % (lab["dir"], lab["source"])
        if not any(path in text for path in shown):
            problems.append("%s, the page of %s, shows no code of it (no snippet of %s)"
                            % (page, lab["id"], " or ".join(shown)))
    return problems


def lab_step_pages():
    """The further pages of the labs, labs/DIR/PAGE.md beside a README.md (a page a step, in a lab
    of several parts), which Doxygen's INPUT (README.md and *.hpp under labs/) would not read."""
    found = []
    for lab_dir in sorted(os.listdir(os.path.join(ROOT, "labs"))):
        folder = os.path.join(ROOT, "labs", lab_dir)
        if not os.path.exists(os.path.join(folder, "README.md")):
            continue
        found += ["labs/%s/%s" % (lab_dir, name) for name in sorted(os.listdir(folder))
                  if name.endswith(".md") and name != "README.md"]
    return found


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", required=True)
    p.add_argument("--skip-if-missing", action="store_true",
                   help="exit 77 (skipped) instead of 1 when a tool is not installed")
    args = p.parse_args(argv)
    started = time.monotonic()
    out = os.path.join(os.path.abspath(args.build_dir), "docs")

    (doxygen, dot, python, theme), missing = find_tools()
    if missing:
        print(missing_message(missing))
        return EXIT_SKIPPED if args.skip_if_missing else 1

    missing_pages = lab_pages_missing()
    if missing_pages:
        print("docs: the book does not cover every lab of labs.json:\n  " + "\n  ".join(missing_pages))
        return 1

    figures = os.path.join(out, "figures")
    shutil.rmtree(figures, ignore_errors=True)
    r = subprocess.run([python, os.path.join(ROOT, "docs", "plot_figures.py"), "--out", figures])
    if r.returncode != 0:
        print("docs: drawing the figures failed")
        return 1

    bench = os.path.join(out, "bench")
    shutil.rmtree(bench, ignore_errors=True)
    bench_page = write_bench_page(python, bench)
    if bench_page is None:
        return 1

    html = os.path.join(out, "html")
    shutil.rmtree(html, ignore_errors=True)
    with open(os.path.join(ROOT, "docs", "Doxyfile"), encoding="utf-8") as f:
        config = f.read()
    # Paths that depend on the build folder, and the filter run by this very Python.
    filter_cmd = "%s %s" % (sys.executable, os.path.join(ROOT, "docs", "md_filter.py"))
    config += "\n".join([
        "",
        *existing_paths_only(config),
        'OUTPUT_DIRECTORY = "%s"' % out,
        'IMAGE_PATH = "%s" "%s" labs docs' % (figures, bench),
        # The benchmarks page is written into the build folder; stripping that folder keeps
        # its directories (build/docs/bench, or /tmp/...) out of the book's list of files.
        'INPUT += "%s"' % bench_page,
        *['INPUT += "%s"' % page for page in lab_step_pages()],
        'STRIP_FROM_PATH += "%s"' % bench,
        'FILTER_PATTERNS = "*.md=%s"' % filter_cmd,
        'DOT_PATH = "%s"' % os.path.dirname(dot),
        # The theme where it was found, then the book's own few rules (docs/book.css).
        "HTML_EXTRA_STYLESHEET = %s" % " ".join(
            '"%s"' % path for path in [os.path.join(theme, name) for name in THEME_FILES]
            + ["docs/book.css"]),
        "",
    ])
    if doxygen_version(doxygen) >= (1, 9, 5):
        # Doxygen 1.9.5 added a dark style of its own, which the theme's README turns off (the
        # theme has its own); older Doxygens do not know the tag, and would warn.
        config += "HTML_COLORSTYLE = LIGHT\n"
    r = subprocess.run([doxygen, "-"], input=config, cwd=ROOT, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, errors="replace")
    sys.stdout.write(r.stdout)
    problems = [line for line in r.stderr.splitlines()
                if re.search(r"\b(warning|error)\b", line, re.I)]
    if r.stderr.strip():
        sys.stderr.write(r.stderr)
    if problems or r.returncode != 0:
        print("\ndocs: FAILED, %d warning(s) (warnings are errors; doxygen exit status %d). Fix "
              "them: document the public API of common/ and grading/, fix the \\ref, \\snippet or link."
              % (len(problems), r.returncode))
        return 1
    index = os.path.join(html, "index.html")
    if not os.path.exists(index):
        print("docs: doxygen wrote no %s" % index)
        return 1
    pages = sum(1 for _, _, files in os.walk(html) for name in files if name.endswith(".html"))
    print("docs: %d pages in %.0f s, no warnings. Open %s" % (pages, time.monotonic() - started,
                                                               index))
    return 0


if __name__ == "__main__":
    sys.exit(main())
