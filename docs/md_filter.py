#!/usr/bin/env python3
"""Doxygen's input filter for the book's Markdown pages (FILTER_PATTERNS in docs/Doxyfile).

Doxygen runs `python3 docs/md_filter.py FILE` from the repository root for every Markdown file it
reads and uses what this prints instead of the file. The files themselves stay plain Markdown
that a code host renders as it is: there is one copy of each walkthrough, labs/NN_name/README.md,
and of each further page of a lab, labs/NN_name/PAGE.md (one per step of a lab with several
parts: the page of a part whose file is PAGE.cu, see walkthrough_of).

What the filter changes, and only when Doxygen reads the file:

* Markers. A code host shows nothing for an HTML comment, and Doxygen ignores the commands inside
  one, so the walkthroughs carry their Doxygen-only content as comments of a fixed form, which the
  filter turns into commands, one line for one line:

      <!-- snippet: labs/01_vector_add/vector_add.cu kernel -->   ->  \\snippet labs/01_vector_add/vector_add.cu kernel
      <!-- include: labs/01_vector_add/vector_add.cu -->          ->  \\include labs/01_vector_add/vector_add.cu
      <!-- figure: reference run -->                              ->  the lab's measured figures (below)

  Paths are from the repository root. The snippet regions are the `//! [name]` pairs in the real,
  compiled and tested files, so a renamed region or file fails the docs build instead of leaving a
  stale copy. A lab page without a figure marker gets its figures at the end.

* Page labels. The first `# ` heading gets a label, so pages can be named with \\ref:
  labs/01_vector_add/README.md -> lab_01_vector_add, labs/05_tiled_matmul/wgmma.md ->
  lab_05_tiled_matmul_wgmma, docs/grading.md -> grading.

* Links. Relative Markdown links are resolved against the file's folder: a link to another page
  of the book becomes `@ref label`, a link to a lab's .cu file becomes a link to that file's page
  (an \\example page of the book), and a link to anything missing is reported as an error. In a
  lab's README.md, the first link to each further page of the same lab (outside a table) becomes
  `\\subpage`, so that the book shows those pages under the lab's.

* The main page's `<!-- labs -->` marker becomes the list of labs, in order, read from the
  README.md table of labs (planned labs included) and from the labs/*/README.md that exist.

* Figures. The lab's rows of docs/figures/reference_run.csv become a short section: the plot that
  docs/plot_figures.py draws from them at doc build (\\image), then a table of the same numbers,
  this GPU's beside the sources' published ones, each with its source.

Problems are printed to stderr as "FILE:LINE: error: ...", which docs/build_docs.py counts as
warnings, so that they fail the build as Doxygen's own warnings do.
"""
import csv
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURES_CSV = os.path.join(ROOT, "docs", "figures", "reference_run.csv")

MARKER = re.compile(r"^\s*<!--\s*(snippet|include|figure|labs)\s*:?\s*(.*?)\s*-->\s*$")
LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^()\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^#\s+(.*?)\s*$")
LAB_README = re.compile(r"^labs/([0-9]{2}[A-Za-z0-9_]*)/README\.md$")
LAB_PAGE = re.compile(r"^labs/([0-9]{2}[A-Za-z0-9_]*)/([A-Za-z0-9_]+)\.md$")  # README.md or a further page


def walkthrough_of(lab_dir, source):
    """The walkthrough of a lab part (labs.json's dir and source), relative to the repository root:
    labs/DIR/STEM.md when the part's file labs/DIR/STEM.cu has a page of its own, else the lab's
    README.md. docs/build_docs.py and docs/checker_tables.py find each part's page here."""
    page = "labs/%s/%s.md" % (lab_dir, os.path.splitext(source)[0])
    if os.path.exists(os.path.join(ROOT, page)):
        return page
    return "labs/%s/README.md" % lab_dir


def rel(path):
    return os.path.relpath(os.path.abspath(path), ROOT).replace(os.sep, "/")


def label_for(relpath):
    """The page label of a Markdown file of the book, or None if it is not one."""
    m = LAB_README.match(relpath)
    if m:
        return "lab_" + m.group(1)
    m = LAB_PAGE.match(relpath)
    if m:
        return "lab_%s_%s" % (m.group(1), m.group(2))
    if relpath.startswith("docs/") and relpath.endswith(".md") and relpath.count("/") == 1:
        name = relpath[len("docs/"):-len(".md")]
        return "index" if name == "mainpage" else re.sub(r"[^A-Za-z0-9_]", "_", name)
    return None


class Filter:
    def __init__(self, path):
        self.path = path
        self.relpath = rel(path)
        self.errors = []
        lab = LAB_README.match(self.relpath)
        self.lab = lab.group(1) if lab else None            # a lab's README.md: figures, file pages
        page = LAB_PAGE.match(self.relpath)
        self.lab_dir = page.group(1) if page else None      # any page of a lab: its README or a step's
        self.subpages = set()                               # further pages already made \subpage

    def error(self, line, text):
        self.errors.append("%s:%d: error: %s" % (self.path, line, text))

    # -- links ----------------------------------------------------------------------------------

    def resolve_link(self, lineno, image, text, target):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith(("#", "@", "\\")):
            return None                                       # a URL, an anchor, a \ref already
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(self.path)), path))
        relpath = rel(full)
        if not os.path.exists(full):
            self.error(lineno, "the link to %s leads nowhere: %s does not exist" % (target, relpath))
            return None
        if image:
            return "![%s](%s)" % (text, relpath)
        if os.path.isdir(full) and os.path.exists(os.path.join(full, "README.md")):
            full, relpath = os.path.join(full, "README.md"), relpath.rstrip("/") + "/README.md"
        label = label_for(relpath)
        if label and self.subpage_here and LAB_PAGE.match(relpath) and not LAB_README.match(relpath) \
                and relpath.startswith("labs/%s/" % self.lab) and label not in self.subpages:
            self.subpages.add(label)
            return '\\subpage %s "%s"' % (label, text.replace('"', "'"))
        if label:
            return "[%s](@ref %s)" % (text, label)
        if re.match(r"^labs/[^/]+/[^/]+\.(cu|cuh)$", relpath):
            return "[%s](@ref %s)" % (text, relpath)          # the file's \example page
        # A file the book has no page for (a folder, a test): name it, without a dead link.
        return "%s (`%s`)" % (text, relpath) if text.strip("`") != relpath else "`%s`" % relpath

    def links(self, lineno, line):
        # A further page of the lab becomes a subpage of its README where the README first links
        # to it outside a table (a \subpage in a table cell would break the table's row).
        self.subpage_here = self.lab is not None and not line.lstrip().startswith("|")
        def replace(m):
            new = self.resolve_link(lineno, m.group(1) == "!", m.group(2), m.group(3))
            return m.group(0) if new is None else new
        # Leave code spans alone: split on backticks and rewrite the parts outside them.
        parts = re.split(r"(`+[^`]*`+)", line)
        return "".join(p if p.startswith("`") else LINK.sub(replace, p) for p in parts)

    # -- markers --------------------------------------------------------------------------------

    def marker(self, lineno, kind, arg):
        if kind == "snippet":
            parts = arg.split(None, 1)
            if len(parts) != 2:
                self.error(lineno, "a snippet marker needs a file and a region: "
                                   "<!-- snippet: path/from/root.cu region -->")
                return [""]
            if not os.path.isfile(os.path.join(ROOT, parts[0])):
                self.error(lineno, "snippet file %s does not exist" % parts[0])
            return ["%s \\snippet{lineno} %s %s" % (self.source_caption(parts[0]), parts[0], parts[1])]
        if kind == "include":
            if not arg or not os.path.isfile(os.path.join(ROOT, arg)):
                self.error(lineno, "include file %r does not exist" % arg)
            return ["%s \\include{lineno} %s" % (self.source_caption(arg), arg)]
        if kind == "figure":
            if not self.lab:
                self.error(lineno, "a figure marker belongs in a lab's README.md")
                return [""]
            self.figure_done = True
            return self.figure_section(lineno)
        if kind == "labs":
            return self.lab_list()
        return [""]

    def source_caption(self, path):
        """"From labs/01_vector_add/vector_add.cu:", linked to the file's page where it has one."""
        if re.match(r"^labs/[^/]+/[^/]+\.(cu|cuh)$", path) and path.startswith("labs/%s/" % self.lab_dir):
            return "<em>From \\ref %s \"%s\":</em>" % (path, path)
        return "<em>From <code>%s</code>:</em>" % path

    # -- the lab list of the main page -----------------------------------------------------------

    def lab_list(self):
        """Every lab in course order: the README table's rows, and any lab README not in it."""
        readme = os.path.join(ROOT, "README.md")
        rows = []
        if os.path.exists(readme):
            for line in open(readme, encoding="utf-8"):
                m = re.match(r"^\|\s*(.+?)\s*\|\s*(.+?)\s*\|\s*(.+?)\s*\|\s*$", line)
                if not m or not re.match(r"^\[?\s*[0-9]{2}\b", m.group(1)):
                    continue
                number = re.match(r"^\[?\s*([0-9]{2})", m.group(1)).group(1)
                name = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1))[3:].strip()
                rows.append((number, name, m.group(2), m.group(3)))
        found = {}
        for path in sorted(glob.glob(os.path.join(ROOT, "labs", "*", "README.md"))):
            relpath = rel(path)
            m = LAB_README.match(relpath)
            if m:
                found.setdefault(m.group(1)[:2], []).append((m.group(1), first_heading(path)))
        numbers = [r[0] for r in rows]
        for number in sorted(found):
            if number not in numbers:
                rows.append((number, found[number][0][0][3:].replace("_", " "), "", "ready"))
        rows.sort(key=lambda r: r[0])
        out = []
        for number, name, idea, status in rows:
            idea_text = (": " + idea) if idea else ""
            if number in found:
                for lab_dir, title in found[number]:
                    out.append("%d. \\subpage lab_%s \"%s\"%s" % (
                        len(out) + 1, lab_dir, title or "Lab " + number, idea_text))
            else:
                out.append("%d. Lab %s, %s%s (%s: its walkthrough is not written yet)" % (
                    len(out) + 1, number, name, idea_text, status))
        return out

    # -- measured figures -------------------------------------------------------------------------

    def figure_section(self, lineno):
        rows = [r for r in read_figures(self.error, lineno) if r["lab"] == self.lab]
        if not rows:
            return [""]
        measured = [r for r in rows if r["kind"] != "published"]
        gpus = sorted({r["gpu"] for r in measured})
        dates = sorted({r["date"] for r in measured})
        title = first_heading(self.path) or self.lab
        out = [
            "",
            "## Measured figures {#lab_%s_figures}" % self.lab,
            "",
            "The workbook's reference solutions, measured on %s on %s. The numbers come from "
            "`docs/figures/reference_run.csv`, where each figure that the committed bench run "
            "measures is that run's (`docs/figures/check_figures.py` checks it in `make test`); "
            "the plot is drawn from that file with matplotlib "
            "whenever the book is built. Figures that a source document published stand beside "
            "them, each with its source (see \\ref sources).%s" % (
                " and ".join(gpus) or "a GPU", " and ".join(dates) or "an unrecorded date",
                "" if any(r["kind"] == "published" for r in rows) else
                " No source document's figure for this lab is quoted here."),
            "",
            "\\image html reference_run_%s.png \"%s: reference run\"" % (self.lab, title),
            "",
            "| figure | value | GPU | measured | source |",
            "|--------|-------|-----|----------|--------|",
        ]
        for r in rows:
            what = r["label"]
            if r["panel"]:
                what = "%s: %s" % (r["panel"], what)
            source = ("the committed bench run (`docs/bench/`)" if r.get("bench") else
                      "this workbook's reference run" if r["kind"] != "published" else r["source"])
            if r["kind"] == "published":
                source = "\\ref sources \"%s\" (published)" % r["source"]
            if r.get("note"):
                source += "; " + r["note"]
            out.append("| %s | %s %s | %s | %s | %s |" % (
                cell(what), format_value(r["value"]), cell(r["unit"]), cell(r["gpu"]),
                cell(r["date"] or "(as published)"), cell(source)))
        out.append("")
        return out

    # -- the whole file -------------------------------------------------------------------------

    def run(self):
        lines = open(self.path, encoding="utf-8").read().split("\n")
        out, in_fence, labelled = [], False, False
        self.figure_done = False
        for lineno, line in enumerate(lines, 1):
            if FENCE.match(line):
                in_fence = not in_fence
                out.append(line)
                continue
            if in_fence:
                out.append(line)
                continue
            m = MARKER.match(line)
            if m:
                out.extend(self.marker(lineno, m.group(1), m.group(2)))
                continue
            h = HEADING.match(line)
            if h and not labelled:
                labelled = True
                label = label_for(self.relpath)
                if label and label != "index" and "{#" not in line:
                    line = "%s {#%s}" % (line.rstrip(), label)
            out.append(self.links(lineno, line))
        if self.lab:
            if not self.figure_done:
                out.extend(self.figure_section(len(lines)))
            out.extend(self.file_pages())
        return "\n".join(out)

    def file_pages(self):
        """An \\example page for each file the lab has you edit, for the README's links to it."""
        out = []
        for path in sorted(glob.glob(os.path.join(ROOT, "labs", self.lab, "*.cu")) +
                           glob.glob(os.path.join(ROOT, "labs", self.lab, "*.cuh"))):
            relpath = rel(path)
            out += ["", "\\example %s" % relpath,
                    "The file you edit, `%s`, as it is in the repository: the kernel and launch "
                    "are yours to write (the TODOs), and \\ref lab_%s explains each of them."
                    % (relpath, self.lab), ""]
        return out


def first_heading(path):
    for line in open(path, encoding="utf-8"):
        m = HEADING.match(line)
        if m:
            return re.sub(r"\s*\{#[^}]*\}\s*$", "", m.group(1))
    return ""


def cell(text):
    return str(text).replace("|", "\\|")


def format_value(text):
    try:
        value = float(text)
    except ValueError:
        return text
    if value >= 100:
        return "{:,.0f}".format(value)
    return ("%.3g" % value)


_FIGURES = None


def read_figures(error, lineno):
    global _FIGURES
    if _FIGURES is None:
        _FIGURES = []
        if os.path.exists(FIGURES_CSV):
            with open(FIGURES_CSV, encoding="utf-8", newline="") as f:
                _FIGURES = [r for r in csv.DictReader(
                    line for line in f if line.strip() and not line.startswith("#"))]
            for r in _FIGURES:
                for key in ("lab", "panel", "label", "value", "unit", "kind", "gpu", "date", "source"):
                    if r.get(key) is None:
                        error(lineno, "%s: a row lacks the column %r" % (FIGURES_CSV, key))
                        r[key] = ""
    return _FIGURES


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: md_filter.py FILE.md")
    f = Filter(argv[1])
    text = f.run()
    sys.stdout.write(text)
    for e in f.errors:
        sys.stderr.write(e + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
