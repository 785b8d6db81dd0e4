#!/usr/bin/env python3
"""The book in a real browser: ctest's `docs.browser`.

    browser_test.py --build-dir BUILD [--report FILE.html ...] [--quiet]

Serves BUILD/docs/html (the book, built by `make docs`) and a grade report page on 127.0.0.1,
opens every .html page of the book in headless Chromium (Debian's, driven by chromium.py through
the DevTools protocol over a pipe), and checks on each page, in the browser itself:

* the page loads: its HTTP status is 200, no resource of the site fails to load, and its
  scripts throw no exception;
* every image loads: each <img> is complete with a natural width above 0;
* every internal link resolves: each <a href> into the site names a file that exists and, when it
  has a #fragment, an element with that id or name in the target page.

The grade report is checked the same way: a sample that this script writes with grading/driver/grade.py's
own writers (passed, failed, skipped and bonus tests, a lab that does not compile), plus every
--report given and BUILD/grade/report.html when a grade run left one.

It saves screenshots under BUILD/docs/screenshots/, for a person to look at: the main page
(main_page.png), lab 01's page (lab_page.png) and its measured figures (lab_figures.png), and the
sample report (grade_report.png). Each is taken once the navigation tree has settled, and checked:
the PNG exists, is not empty, and its header (the IHDR chunk) gives the window's size, 1280 x 900.
On the book's pages it also checks that the theme applied: doxygen-awesome-css's stylesheets
loaded and set its colours, its sidebar is as wide as the theme's --side-nav-fixed-width and
Doxygen's TREEVIEW_WIDTH equals it (as the theme requires), the text starts right of the sidebar,
the tree marks the page, and every plot fits the text column.

Exit status: 0 all good; 1 a check failed; 77 (skipped) when Chromium is not installed, or when
the book could not be built because one of its tools is missing (docs/build_docs.py names it).
"""
import argparse
import functools
import html.parser
import json
import os
import shutil
import struct
import sys
import tempfile
import time
import urllib.parse

from chromium import WINDOW, Browser, Tab, find_chromium, serve

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXIT_SKIPPED = 77


# ----------------------------------------------------------------------------------------------
# Checking a page in the browser

# What the browser reports about a loaded page.
INSPECT = """(async () => {
  // Doxygen's navigation tree is built by scripts after the load event; wait for it to mark
  // this page's entry (pages outside the tree never do: 2 s at most).
  const tree = document.getElementById('nav-tree');
  const until = Date.now() + 2000;
  while (tree && !tree.querySelector('.selected') && Date.now() < until)
    await new Promise(done => setTimeout(done, 20));
  const images = Array.from(document.images);
  await Promise.all(images.map(i => i.complete ? null : new Promise(done => {
    i.addEventListener('load', done); i.addEventListener('error', done);
    setTimeout(done, 5000);
  })));
  return {
    ready: document.readyState,
    tree: tree ? !!tree.querySelector('.selected') : null,
    title: document.title,
    text: document.body ? document.body.innerText.length : 0,
    images: images.map(i => ({src: i.currentSrc || i.src,
                              ok: i.complete && i.naturalWidth > 0})),
    links: Array.from(document.querySelectorAll('a[href]')).map(a => a.href),
  };
})()"""


# What a screenshot shows, once the page has settled: the navigation tree built and done
# sliding open (Doxygen's navtree.js animates it with jQuery), the fonts loaded, the page at
# `anchor` when one is given. Then what the theme did to it.
SETTLE = """(async (anchor) => {
  const wait = ms => new Promise(done => setTimeout(done, ms));
  const tree = document.getElementById('nav-tree');
  let until = Date.now() + 5000;
  while (tree && !tree.querySelector('.selected') && Date.now() < until) await wait(20);
  until = Date.now() + 5000;
  while (window.jQuery && jQuery(':animated').length && Date.now() < until) await wait(20);
  if (document.fonts) await document.fonts.ready;
  if (anchor) {
    const target = document.getElementById(anchor);
    if (!target) return {error: 'no element #' + anchor};
    target.scrollIntoView({block: 'start'});
  }
  await wait(200);
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
  const root = getComputedStyle(document.documentElement);
  const sheets = Array.from(document.styleSheets).map(sheet => (sheet.href || '').split('/').pop());
  const side = document.getElementById('side-nav');
  const contents = document.querySelector('div.contents');
  const selected = tree && tree.querySelector('.selected');
  const content = document.getElementById('doc-content');
  // TREEVIEW_WIDTH, as Doxygen writes it into navtree.css: #side-nav { width: ...px }.
  let treeview = null;
  for (const sheet of document.styleSheets)
    if ((sheet.href || '').endsWith('/navtree.css'))
      for (const rule of sheet.cssRules)
        if (rule.selectorText === '#side-nav' && rule.style.width)
          treeview = parseFloat(rule.style.width);
  return {
    sheets: sheets,
    primary: root.getPropertyValue('--primary-color').trim(),
    fixed: parseFloat(root.getPropertyValue('--side-nav-fixed-width')) || null,
    side: side ? side.getBoundingClientRect().width : null,
    content: content ? content.getBoundingClientRect().left : null,
    treeview: treeview,
    selected: selected ? selected.innerText.replace(/^[\\s\u25ba\u25bc]+/, '').trim() : null,
    column: contents ? contents.clientWidth : null,
    plots: Array.from(document.querySelectorAll('div.image img, div.dotgraph img')).map(i => ({
      src: i.getAttribute('src'), width: i.getBoundingClientRect().width,
      natural: i.naturalWidth})),
  };
})"""

# The theme's stylesheets, as docs/Doxyfile (HTML_EXTRA_STYLESHEET) names them.
THEME_SHEETS = ("doxygen-awesome.css", "doxygen-awesome-sidebar-only.css", "book.css")


def png_size(path):
    """(width, height) from a PNG's header: the signature, then the IHDR chunk, which the PNG
    standard puts first: its length (4 bytes), its type, then width and height (4 bytes each,
    big-endian). None when the file is not a PNG."""
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def take_screenshot(tab, url, path, problems, anchor=None, book=True):
    """Opens url, waits for it to settle, saves a screenshot to path and checks it; on a page of
    the book also checks that the theme applied. Returns a line for the log."""
    name = os.path.basename(path)
    result = tab.open(url)
    for failure in result["failed"]:
        problems.append("%s: a resource failed to load: %s" % (name, failure))
    info = tab.evaluate("%s(%s)" % (SETTLE, json.dumps(anchor)))
    if info.get("error"):
        problems.append("%s: %s" % (name, info["error"]))
    if os.path.exists(path):
        os.remove(path)         # a screenshot left by an earlier run must not pass for this one
    tab.screenshot(path)
    size = png_size(path) if os.path.exists(path) else None
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        problems.append("%s: the screenshot was not saved, or is empty" % name)
    elif size != WINDOW:
        problems.append("%s: the screenshot is %s, not the window's %d x %d pixels"
                        % (name, "%d x %d" % size if size else "not a PNG", *WINDOW))
    line = "  %-18s %s, %d bytes" % (name, "%d x %d" % size if size else "?",
                                      os.path.getsize(path) if os.path.exists(path) else 0)
    if not book:
        return line
    missing = [sheet for sheet in THEME_SHEETS if sheet not in info["sheets"]]
    if missing or not info["primary"]:
        problems.append("%s: the doxygen-awesome-css theme did not apply (%s)" % (
            name, "stylesheets not loaded: " + ", ".join(missing) if missing
            else "its --primary-color is not set"))
    if info["side"] is None or info["fixed"] is None or abs(info["side"] - info["fixed"]) > 1:
        problems.append("%s: the sidebar is %s px wide, not the theme's --side-nav-fixed-width "
                        "(%s px, set in docs/book.css)" % (name, info["side"], info["fixed"]))
    if info["treeview"] != info["fixed"]:
        problems.append("%s: TREEVIEW_WIDTH in docs/Doxyfile (%s px) differs from the theme's "
                        "--side-nav-fixed-width in docs/book.css (%s px): the theme needs them "
                        "equal" % (name, info["treeview"], info["fixed"]))
    if info["content"] is None or info["side"] is None or info["content"] < info["side"] - 1:
        problems.append("%s: the page's text starts at x = %s px, under the %s px sidebar"
                        % (name, info["content"], info["side"]))
    if not info["selected"]:
        problems.append("%s: the navigation tree does not mark the page" % name)
    for plot in info["plots"]:
        if info["column"] is None or plot["width"] > info["column"] + 1 or not plot["natural"]:
            problems.append("%s: the image %s is %s px wide in a %s px column (the theme's "
                            "`.contents img` rule should fit it)"
                            % (name, plot["src"], plot["width"], info["column"]))
    return line + ", theme %s, sidebar %d px, tree at \"%s\", %d plot(s)" % (
        info["primary"], info["side"] or 0, info["selected"], len(info["plots"]))


# ----------------------------------------------------------------------------------------------
# Checking anchors

class AnchorParser(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.anchors = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("id", "name") and value:
                self.anchors.add(value)


@functools.lru_cache(maxsize=None)
def anchors_of(path):
    parser = AnchorParser()
    with open(path, encoding="utf-8", errors="replace") as f:
        parser.feed(f.read())
    return frozenset(parser.anchors)


def check_link(href, base_url, root):
    """None when href resolves; otherwise why not. Links that leave the site are not checked."""
    if not href.startswith(base_url):
        return None
    parsed = urllib.parse.urlsplit(href)
    rel = urllib.parse.unquote(parsed.path)[len(urllib.parse.urlsplit(base_url).path):]
    path = os.path.join(root, rel)
    if os.path.isdir(path):
        path = os.path.join(path, "index.html")
    if not os.path.isfile(path):
        return "%s: no such file %s" % (href, rel or "index.html")
    if parsed.fragment and path.endswith(".html"):
        fragment = urllib.parse.unquote(parsed.fragment)
        if fragment not in anchors_of(path):
            return "%s: %s has no anchor #%s" % (href, os.path.basename(path), fragment)
    return None


# ----------------------------------------------------------------------------------------------
# The sample grade report

def write_sample_report(out_dir):
    """A report.html from grading/driver/grade.py's own writers, with every kind of result in it."""
    sys.path.insert(0, os.path.join(ROOT, "grading", "driver"))
    import grade

    def make_test(name, points, status, output="", bonus=0, seconds=0.4):
        t = grade.Test(name, points, bonus)
        t.status, t.output, t.seconds = status, output, seconds
        return t

    lab1 = grade.Lab("01_vector_add", "vector_add.cu")
    lab1.tests = [
        make_test("kernel: n = 1", 1, "passed"),
    ] + [
        make_test("kernel: n = %d" % n, 1, "failed",
                  "launch_vector_add, n = %d: launched no kernel on the GPU.\nHint: the work must be "
                  "done by a __global__ kernel that launch_vector_add launches." % n)
        for n in (31, 32, 33)
    ] + [
        make_test("kernel: n = 1000", 1, "failed",
                  "run 1 of 2, n = 1000:\nc: 232 of 1000 elements are wrong (all of them never "
                  "written: they still hold the poison value)\n  c[768]: expected 0.767680168, "
                  "got nothing (never written)\nHint: does your grid cover all n elements? "
                  "<Round the number of blocks up> & try again."),
        make_test("kernel: n = 1025 (one past 1024)", 1, "failed",
                  "run 1 of 2, n = 1025:\nc: 1 of 1025 elements are wrong (all of them never "
                  "written: they still hold the poison value)\n  c[1024]: expected 0.25, "
                  "got nothing (never written)\nHint: does your grid cover all n elements? "
                  "<Round the number of blocks up> & try again."),
        make_test("round trip from host: frees what it allocates", 1, "passed"),
        make_test("performance: bandwidth against the reference at n = 2^26 + 1", 3, "passed",
                  "your kernel: 2700 GB/s = 91% of copy (2958 GB/s)"),
    ]
    lab3 = grade.Lab("03_shared_transpose", "transpose.cu")
    lab3.tests = [
        make_test("step 1 (unpadded): 31 x 33", 1, "passed"),
        make_test("no shared-memory race: compute-sanitizer racecheck (100 x 70)", 2, "skipped",
                  "compute-sanitizer is not installed"),
        make_test("padding removes the bank conflicts (4096 x 4096)", 3, "failed",
                  "2.1 bank conflicts per shared request (at most 0.5 passes)"),
    ]
    lab4 = grade.Lab("04_naive_matmul", "matmul.cu")
    lab4.problem = ("does not compile, so every test scores 0:\nmatmul.cu(17): error: "
                    "identifier \"rowz\" is undefined")
    lab4.tests = [make_test("1 x 1 x 1", 1, "failed", lab4.problem),
                  make_test("optional, 1-D blocks: 17 x 33 x 65", 0, "failed", lab4.problem, bonus=1)]
    lab5 = grade.Lab("05_register_blocking", "register_blocking.cu")
    lab5.tests = [make_test("register blocking: 1 x 1 x 1", 0, "passed", bonus=1)]
    lab6 = grade.Lab("06_thread_sweep", "sweep.cu")
    lab6.not_started = ("not started: labs/06_thread_sweep/sweep.cu is as handed out; begin at "
                        "labs/06_thread_sweep/sweep.cu:23, TODO 1: the shared memory holds two tiles")
    lab6.tests = [make_test("tile %d x %d: 100 x 70 x 90" % (t, t), 1, "failed",
                            "launch_matmul_dynamic_tile with tile %d, 100 x 70 x 90: launched no kernel "
                            "on the GPU.\nHint: the work must be done by a __global__ kernel." % t)
                  for t in (1, 2, 4)]
    labs = [lab1, lab3, lab4, lab5, lab6]
    device = {"ok": True, "device": "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB, L2 50 MiB)"
                                     " [a sample: no grade run made this page]"}
    os.makedirs(out_dir, exist_ok=True)
    grade.write_results_json(os.path.join(out_dir, "results.json"), labs, 1234, device, 12.3)
    path = os.path.join(out_dir, "report.html")
    grade.write_report_html(path, labs, 1234, device, 12.3)
    return path


# ----------------------------------------------------------------------------------------------

def check_site(tab, base_url, root, pages, problems, log):
    checked_links = 0
    images = 0
    for i, rel in enumerate(pages):
        url = base_url + urllib.parse.quote(rel)
        result = tab.open(url)
        where = rel
        if result["status"] != 200:
            problems.append("%s: the page did not load (HTTP status %s)" % (where, result["status"]))
        for failure in result["failed"]:
            problems.append("%s: a resource failed to load: %s" % (where, failure))
        for exception in result["exceptions"]:
            problems.append("%s: a script threw: %s" % (where, exception))
        info = tab.evaluate(INSPECT)
        if info["ready"] != "complete" or info["text"] == 0:
            problems.append("%s: the page is not complete or shows no text (%s, %d characters)"
                            % (where, info["ready"], info["text"]))
        for image in info["images"]:
            images += 1
            if not image["ok"]:
                problems.append("%s: the image %s did not load" % (where, image["src"]))
        for href in sorted(set(info["links"])):
            if href.startswith(("javascript:", "mailto:")):
                continue
            checked_links += href.startswith(base_url)
            why = check_link(href, base_url, root)
            if why:
                problems.append("%s: a broken link, %s" % (where, why))
        log("  %-66s %2d images, %3d links%s" % (rel[:66], len(info["images"]), len(info["links"]),
                                                 "" if info["tree"] is not False else ", not in the tree"))
    return images, checked_links


# ----------------------------------------------------------------------------------------------
# The test: every page of the book, screenshots of a few, then the grade reports

def main(argv=None):
    args = parse_args(argv)
    started = time.monotonic()
    build_dir = os.path.abspath(args.build_dir)
    site = os.path.join(build_dir, "docs", "html")
    log = (lambda text: None) if args.quiet else print

    chromium = find_chromium()
    if not chromium:
        print("SKIPPED: Chromium is not installed (Debian: apt-get install chromium; `make test` "
              "as root installs it).")
        return EXIT_SKIPPED
    status = book_missing(site)
    if status is not None:
        return status

    pages = book_pages(site)
    reports = reports_to_check(build_dir, args.report)
    shots = os.path.join(build_dir, "docs", "screenshots")
    os.makedirs(shots, exist_ok=True)

    problems = []
    servers = []
    profile = tempfile.mkdtemp(prefix="workbook-chromium-")
    browser = None
    try:
        server, base = serve(site)
        servers.append(server)
        browser = Browser(chromium, profile)
        version = browser.send("Browser.getVersion").get("product", "Chromium")
        print("Opening the book (%d pages) in %s" % (len(pages), version))
        tab = Tab(browser)
        images, links = check_site(tab, base, site, pages, problems, log)
        take_book_screenshots(tab, base, pages, shots, problems, log)
        more_images, more_links = check_reports(tab, reports, servers, shots, problems, log)
        images, links = images + more_images, links + more_links
        tab.send("Page.close")
    finally:
        # Even after a failure: no Chromium, server thread or profile outlives the test.
        if browser:
            browser.close()
        for server in servers:
            server.shutdown()
        shutil.rmtree(profile, ignore_errors=True)
    return print_outcome(problems, pages, reports, images, links, time.monotonic() - started, shots)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", required=True)
    p.add_argument("--report", action="append", default=[], help="another report.html to check")
    p.add_argument("--quiet", action="store_true", help="print only the summary and problems")
    return p.parse_args(argv)


def book_missing(site):
    """None when the book is there to check; otherwise it says why not and returns the exit
    status: 77 (skipped) when a tool of the book is missing, 1 when the book was not built."""
    # docs.build skips when a tool of the book is missing (Doxygen, graphviz, matplotlib, the
    # doxygen-awesome-css theme): then there is no book, or an old one, to check.
    sys.path.insert(0, os.path.join(ROOT, "docs"))
    import build_docs
    _, missing = build_docs.find_tools()
    if missing:
        print("SKIPPED: the book was not built: " + build_docs.missing_message(missing))
        return EXIT_SKIPPED
    if not os.path.exists(os.path.join(site, "index.html")):
        print("FAILED: %s does not exist: build the book first (make docs)" % site)
        return 1
    return None


def book_pages(site):
    """Every .html page of the book, as paths relative to its folder (with /), sorted."""
    return sorted(os.path.relpath(os.path.join(d, name), site).replace(os.sep, "/")
                  for d, _, files in os.walk(site) for name in files if name.endswith(".html"))


def reports_to_check(build_dir, given):
    """The grade reports to open: the sample written now from grade.py's own writers (always
    first), those given with --report, and the last grade run's, when there is one."""
    reports = [write_sample_report(os.path.join(build_dir, "docs", "grade_sample"))]
    reports += [os.path.abspath(r) for r in given]
    real = os.path.join(build_dir, "grade", "report.html")
    if os.path.exists(real) and real not in reports:
        reports.append(real)
    return reports


def take_book_screenshots(tab, base, pages, shots, problems, log):
    """Screenshots for a person: the main page, lab 01's page (the first lab's), and the same
    page at its measured figures (the plot, sized by docs/book.css)."""
    labs = [page for page in pages if page.startswith("lab_") and page.endswith(".html")
            and "_figures" not in page]
    log("Screenshots, in %s" % shots)
    if not labs:
        problems.append("no lab page (lab_*.html) in the book")
    lab = labs[0] if labs else None
    for name, page, anchor in (("main_page.png", "index.html", None),
                               ("lab_page.png", lab, None),
                               ("lab_figures.png", lab, lab and lab[:-len(".html")] + "_figures")):
        if page:
            log(take_screenshot(tab, base + page, os.path.join(shots, name), problems, anchor))


def check_reports(tab, reports, servers, shots, problems, log):
    """Checks each grade report as a page of the book that shows a score and a seed, the first
    (the sample) more closely; each is served from its folder. Returns (images, links) checked."""
    images = links = 0
    for i, report in enumerate(reports):
        server, base = serve(os.path.dirname(report))
        servers.append(server)  # main shuts it down, even after a failure
        name = os.path.basename(report)
        print("Opening the grade report %s" % report)
        before = len(problems)
        more_images, more_links = check_site(tab, base, os.path.dirname(report), [name],
                                             problems, log)
        images, links = images + more_images, links + more_links
        html_text = open(report, encoding="utf-8").read()
        for needed in ("Score", "seed"):
            if needed not in html_text:
                problems.append("%s: the report does not show its %s" % (report, needed))
        if i == 0:
            bars, pres = check_sample_report(tab, base + name, report, html_text, shots, problems, log)
            if len(problems) == before:
                log("  the sample report shows %d bars and %d failure messages" % (bars, pres))
    return images, links


def check_sample_report(tab, url, report, html_text, shots, problems, log):
    """The sample report's screenshot, and what the sample must show: score bars, failure
    messages, a repeated reason shown once, every detail a click away, and a lab not started
    as one sentence with its tests folded. Returns how many bars and failure messages it has."""
    log(take_screenshot(tab, url, os.path.join(shots, "grade_report.png"), problems, book=False))
    bars = tab.evaluate("document.querySelectorAll('.bar').length")
    pres = tab.evaluate("document.querySelectorAll('pre').length")
    if not bars or not pres:
        problems.append("%s: the sample report shows %s bars and %s failure messages"
                        % (report, bars, pres))
    grouped = tab.evaluate("document.body.innerText.split('same reason as above').length - 1")
    folded = tab.evaluate("document.querySelectorAll('details').length")
    if grouped != 3 or folded < 4 or "not started:" not in html_text:
        problems.append("%s: the sample report groups %s repeated reasons (expected 3), has %s "
                        "folded details, and %s a lab not started"
                        % (report, grouped, folded,
                           "shows" if "not started:" in html_text else "does not show"))
    return bars, pres


def print_outcome(problems, pages, reports, images, links, seconds, shots):
    """Each problem, then what was checked; returns the exit status: 1 if there was a problem."""
    for problem in problems:
        print("PROBLEM: " + problem)
    print("%d pages and %d report(s): %d images, %d internal links checked in %.0f s; "
          "screenshots in %s" % (len(pages), len(reports), images, links, seconds, shots))
    if problems:
        print("FAILED: %d problem(s)" % len(problems))
        return 1
    print("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
