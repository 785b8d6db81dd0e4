#!/usr/bin/env python3
"""Builds the book: `make docs`, and the test `docs.build`.

    build_docs.py --build-dir BUILD [--skip-if-missing]

1. Finds the tools: Doxygen, graphviz's dot, and a Python with matplotlib (this one, or
   Debian's /usr/bin/python3, where python3-matplotlib installs). A missing one is named with
   the command that installs it; the exit status is then 1, or 77 with --skip-if-missing
   (ctest's "skipped": the test suite never reports a docs check as passed that did not run).
2. Draws each lab's measured figures from docs/figures/reference_run.csv into BUILD/docs/figures
   (docs/plot_figures.py).
3. Runs Doxygen with docs/Doxyfile from the repository root, into BUILD/docs/html, after
   removing the previous site (a page of a removed lab must not linger). Every warning is an
   error: Doxygen's own (an undocumented public function of common/, a broken \\ref or
   \\snippet, a missing image) and the Markdown filter's (a marker or link that leads nowhere).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXIT_SKIPPED = 77
INSTALL = "apt-get install doxygen graphviz python3-matplotlib"


def python_with_matplotlib():
    candidates = [sys.executable, "/usr/bin/python3", shutil.which("python3") or ""]
    for python in candidates:
        if python and os.path.exists(python):
            r = subprocess.run([python, "-c", "import matplotlib"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            if r.returncode == 0:
                return python
    return None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", required=True)
    p.add_argument("--skip-if-missing", action="store_true",
                   help="exit 77 (skipped) instead of 1 when a tool is not installed")
    args = p.parse_args(argv)
    started = time.monotonic()
    out = os.path.join(os.path.abspath(args.build_dir), "docs")

    doxygen, dot, python = shutil.which("doxygen"), shutil.which("dot"), python_with_matplotlib()
    missing = [name for name, found in (("doxygen", doxygen), ("graphviz (dot)", dot),
                                        ("matplotlib for Python 3", python)) if not found]
    if missing:
        print("make docs needs %s, which %s not installed. Install: %s (Debian/Ubuntu; "
              "`make docs` or `make test` run as root installs them)."
              % (", ".join(missing), "is" if len(missing) == 1 else "are", INSTALL))
        return EXIT_SKIPPED if args.skip_if_missing else 1

    figures = os.path.join(out, "figures")
    shutil.rmtree(figures, ignore_errors=True)
    r = subprocess.run([python, os.path.join(ROOT, "docs", "plot_figures.py"), "--out", figures])
    if r.returncode != 0:
        print("docs: drawing the figures failed")
        return 1

    html = os.path.join(out, "html")
    shutil.rmtree(html, ignore_errors=True)
    with open(os.path.join(ROOT, "docs", "Doxyfile"), encoding="utf-8") as f:
        config = f.read()
    # Paths that depend on the build folder, and the filter run by this very Python.
    filter_cmd = "%s %s" % (sys.executable, os.path.join(ROOT, "docs", "md_filter.py"))
    config += "\n".join([
        "",
        'OUTPUT_DIRECTORY = "%s"' % out,
        'IMAGE_PATH = "%s" labs docs' % figures,
        'FILTER_PATTERNS = "*.md=%s"' % filter_cmd,
        'DOT_PATH = "%s"' % os.path.dirname(dot),
        "",
    ])
    r = subprocess.run([doxygen, "-"], input=config, cwd=ROOT, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, errors="replace")
    sys.stdout.write(r.stdout)
    problems = [line for line in r.stderr.splitlines()
                if re.search(r"\b(warning|error)\b", line, re.I)]
    if r.stderr.strip():
        sys.stderr.write(r.stderr)
    if problems or r.returncode != 0:
        print("\ndocs: FAILED, %d warning(s) (warnings are errors; doxygen exit status %d). Fix "
              "them: document the public API of common/, fix the \\ref, \\snippet or link."
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
