#!/usr/bin/env python3
"""What the walkthroughs tell a student is true of what the student has and runs (issue 64).

    test_walkthroughs.py            exit 0 when every check passes, 1 naming each problem

It reads every walkthrough (labs/*/README.md, the further pages labs/*/*.md, and the student
edition's README, grading/handout/student_readme.md) and fails on:

  (a) a path (labs/..., tests/..., bench/..., build/..., docs/..., grading/..., common/...,
      solutions/..., reference/..., or a relative link) that the student edition does not hold,
      and a `make TARGET` (or `LAB=`, `SOLUTIONS=`) that the student edition's Makefile does not
      offer. The edition's files come from make_handout.py's own rules (shipped_files(), imported
      here, plus what it writes: README.md and reference/), without building it; its build
      outputs from the CMake targets it builds; its make targets from the Makefile it ships.
  (b) a number that names a checker constant and differs from it: CONSTANT_PHRASES below maps a
      phrase (a regular expression) to a constant parsed from the C++ source that defines it.
  (c) a figure that is not the committed run's: docs/figures/check_figures.py checks the figures
      that docs/figures/claims.json lists against docs/bench/; this runs it, and also fails on a
      figure in a table column headed as the committed bench run's that no claim covers, so a
      figure cannot be added to such a column without being checked.

No GPU and no build: it reads sources only. Registered as the ctest test unit.walkthroughs.
"""
import fnmatch
import glob
import io
import contextlib
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "grading", "handout"))
sys.path.insert(0, os.path.join(ROOT, "docs", "figures"))
import make_handout  # noqa: E402  (its rules: FOLDERS, FILES, EXCLUDED, shipped_files)
import check_figures  # noqa: E402

STUDENT_README = "grading/handout/student_readme.md"

# Temporary exclusions, for a walkthrough that is being rewritten: its path prefix and the checks
# ("paths", "make", "constants", "unclaimed figures") skipped for it until the rewrite lands, e.g.
#     "labs/05_tiled_matmul/": ["make"],
# Empty today: lab 05's walkthrough, rewritten while this test was written (issue 64), passes every
# check. An entry is printed on every run, so none can be forgotten.
TEMPORARY_EXCLUSIONS = {}


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def walkthroughs():
    pages = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "labs", "*", "*.md")))
    return pages + [STUDENT_README]


def excluded(page, check):
    return any(page.startswith(prefix) and check in checks for prefix, checks in TEMPORARY_EXCLUSIONS.items())


def labs():
    with open(os.path.join(ROOT, "labs.json")) as f:
        return json.load(f)["labs"]


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


# -- (a) what the student edition holds ------------------------------------------------------------

def student_edition():
    """The student edition's files (relative paths), from make_handout.py's own rules: the files it
    copies, the README.md it writes from student_readme.md, and reference/ (the compiled reference
    solutions: README.md, and per lab part <id>.o and <id>.kernels)."""
    files = set(make_handout.shipped_files()) | {"README.md", "reference/README.md"}
    for lab in labs():
        files |= {"reference/%s.o" % lab["id"], "reference/%s.kernels" % lab["id"]}
    return files


def build_outputs():
    """What a build of the student edition writes that a walkthrough may name, each with the shipped
    source that makes it (checked to be shipped and to name it, so that this table cannot go stale
    without failing): the checkers and the reference checkers (CMakeLists.txt's targets check_<id>
    and check_<id>_solution, which the edition builds from reference/), and the output folders."""
    outputs = {}
    cmake = read("CMakeLists.txt")
    assert "check_NN_name_solution" in cmake, "CMakeLists.txt no longer names check_NN_name_solution"
    for lab in labs():
        outputs["build/bin/check_%s" % lab["id"]] = "CMakeLists.txt"
        outputs["build/bin/check_%s_solution" % lab["id"]] = "CMakeLists.txt"
    for folder, source, says in (("build/grade/", "grading/driver/grade.py", "<build>/grade/"),
                                 ("build/docs/html", "docs/build_docs.py", "BUILD/docs/html"),
                                 ("build/lab06/", "tests/check_06_thread_sweep.cpp", 'output_folder("lab06")')):
        assert says in read(source), "%s no longer says it writes %s (%r)" % (source, folder, says)
        outputs[folder] = source
    return outputs


PATH = re.compile(r"(?<![\w./-])((?:\.\./)*(?:labs|tests|bench|build|docs|grading|common|solutions|reference)"
                  r"/[\w.*<>{}/-]*)")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def as_glob(path):
    """A path written with placeholders (labs/NN_name/, check_NN_name.cpp, <id>.o) as a glob."""
    path = path.replace("NN_name", "*").replace("<id>", "*")
    return re.sub(r"\bNN\b", "[0-9][0-9]", path)


def holds(files, path):
    """Whether the edition holds `path`: a file, or a folder (written with or without its /)."""
    pattern = as_glob(path.rstrip("/"))
    if any(fnmatch.fnmatchcase(f, pattern) for f in files):
        return True
    return any(fnmatch.fnmatchcase(f, pattern + "/*") for f in files)


def check_paths(page, text, files, outputs):
    problems = []
    here = os.path.dirname(page) if page != STUDENT_README else ""  # the README lands at the root
    links = [(m.start(1), m.end(1)) for m in LINK.finditer(text)]
    for m in LINK.finditer(text):
        target = m.group(1).split("#")[0]
        if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith(("@", "\\")):
            continue
        path = os.path.normpath(os.path.join(here, target))
        if not holds(files, path):
            problems.append("%s:%d: links to %s, which the student edition does not hold"
                            % (page, line_of(text, m.start()), path))
    for m in PATH.finditer(text):
        written = m.group(1).rstrip(".,:;)`'\"")
        path = os.path.normpath(os.path.join(here, written)) if written.startswith("../") else written
        if any(start <= m.start(1) < end for start, end in links):
            continue  # a link's target, checked above
        if path.startswith("build/"):
            if not any(path == out or path.startswith(out.rstrip("/") + "/") or (out.endswith("/") and path == out[:-1])
                       for out in outputs):
                problems.append("%s:%d: names %s, which no build of the student edition makes"
                                % (page, line_of(text, m.start()), written))
            continue
        if not holds(files, path):
            problems.append("%s:%d: names %s, which the student edition does not hold"
                            % (page, line_of(text, m.start()), written))
    return problems


def student_make_targets():
    """The student edition's make targets: the Makefile's rules, less those whose recipe stops
    without a file the edition lacks (`test -f FILE || ... exit`), and `handout`, which
    make_handout.py refuses where solutions/ is absent."""
    makefile = read("Makefile")
    rules = {}
    current = None
    for line in makefile.splitlines():
        m = re.match(r"^([A-Za-z][\w-]*)\s*:(?!=)", line)
        if m:
            current = m.group(1)
            rules[current] = []
        elif line.startswith("\t") and current:
            rules[current].append(line)
        elif line.strip() and not line.startswith("#"):
            current = None if not line.startswith(("\t", " ")) else current
    files = student_edition()
    targets = set()
    for target, recipe in rules.items():
        needs = [f for line in recipe for f in re.findall(r"test -f (\S+) \|\|", line)]
        if any(f not in files for f in needs):
            continue
        targets.add(target)
    source = read("grading/handout/make_handout.py")
    assert 'os.path.isdir(os.path.join(ROOT, "solutions"))' in source, \
        "make_handout.py no longer refuses a tree without solutions/: look again at `make handout`"
    targets.discard("handout")
    return targets


MAKE = re.compile(r"\bmake\s+((?:[A-Z_]+=[^\s`]+|[A-Za-z][\w-]*)(?:\s+(?:[A-Z_]+=[^\s`]+|[A-Za-z][\w-]*))*)")


def code_parts(text):
    """(offset, text) of the page's code: `spans`, fenced blocks and lines indented 4 spaces."""
    parts = []
    fenced = False
    offset = 0
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced or line.startswith("    "):
            parts.append((offset, line))
        else:
            parts += [(offset + m.start(1), m.group(1)) for m in re.finditer(r"`([^`]+)`", line)]
        offset += len(line)
    return parts


def check_make(page, text, targets):
    problems = []
    ids = {lab["id"] for lab in labs()} | {lab["id"][:2] for lab in labs()} | {"NN"}
    for offset, code in code_parts(text):
        for m in MAKE.finditer(code):
            if code[:m.start()].strip() not in ("", "$"):
                continue  # "make" inside a sentence of a comment
            where = "%s:%d" % (page, line_of(text, offset + m.start()))
            words = m.group(1).split()
            target = next((w for w in words if "=" not in w), None)
            if target is not None and target not in targets:
                problems.append("%s: `make %s`: the student edition's Makefile has no such target" % (where, target))
            for word in (w for w in words if "=" in w):
                name, value = word.split("=", 1)
                if name == "LAB" and value not in ids:
                    problems.append("%s: `make ... LAB=%s`: no lab is called %s (labs.json)" % (where, value, value))
                if name == "SOLUTIONS":
                    problems.append("%s: `make ... %s`: the student edition has no solutions/" % (where, word))
    return problems


# -- (b) numbers that name a checker constant --------------------------------------------------------

def constant(source, name):
    """The value of `constexpr ... name = value;` in `source` (a number, or a product of numbers
    and shifts such as 8.0 * (1ull << 30)); an array's braces give a tuple."""
    m = re.search(r"constexpr\s+[\w:]+\s+%s(?:\[\d*\])?\s*=\s*([^;]+);" % re.escape(name), read(source))
    assert m, "%s defines no constexpr %s" % (source, name)
    value = m.group(1).strip()
    if value.startswith("{"):
        return tuple(float(v) for v in value.strip("{}").split(","))
    value = re.sub(r"(\d)(?:ull|ul|u|l|f)\b", r"\1", value, flags=re.I)
    if not re.fullmatch(r"[\d.\s*+()<-]+", value):
        raise AssertionError("%s: %s = %s is not a plain number" % (source, name, value))
    return float(eval(value, {"__builtins__": {}}))  # numbers and operators only (checked above)


WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}


def number(text):
    return float(WORDS.get(text.lower(), text))


# Each row: which walkthroughs (a glob), the phrase (its groups are the numbers), the constant
# (source, name) and how a number in the text follows from it. Every row must match at least once
# in the walkthroughs it covers, so that a phrase reworded away from its pattern fails here.
CONSTANT_PHRASES = [
    ("labs/*", r"(\d+(?:\.\d+)?)\s*[x×] the reference(?:'s| solution's)? time",
     ("common/judge.hpp", "kSpeedFloor"), lambda floor: round(1 / floor, 4)),
    ("labs/*", r"\bruns?(?: your function| your kernel| each \w+)? (one|two|three|four|five|\d+) times\b",
     ("common/judge.hpp", "kJudgeRuns"), lambda runs: runs),
    ("labs/*", r"\bfastest of (one|two|three|four|five|\d+) batches",
     ("grading/judge/clock.hpp", "kTimedBatches"), lambda batches: batches),
    ("labs/*", r"\b(one|two|three|four|five|\d+) batches are timed",
     ("grading/judge/clock.hpp", "kTimedBatches"), lambda batches: batches),
    ("labs/*", r"makes a batch last about (\d+(?:\.\d+)?) ms",
     ("grading/judge/clock.hpp", "kBatchMs"), lambda ms: ms),
    ("labs/*", r"makes a batch last about [\d.]+ ms, at most (\d+)\b",
     ("grading/judge/clock.hpp", "kMaxBatch"), lambda most: most),
    ("labs/*", r"copies within (\d+(?:\.\d+)?) GiB",
     ("grading/judge/clock.hpp", "kBatchMemoryMost"), lambda most: most / 2 ** 30),
    ("labs/07_convolution/*", r"\bgoal\b[^.|]*?(\d+(?:\.\d+)?)% of (?:the )?copy",
     ("tests/check_07_coarsened.cpp", "kGoalPercentOfCopy"), lambda goal: goal),
    ("labs/03_shared_transpose/*", r"at most (\d+(?:\.\d+)?) conflicts per",
     ("tests/check_03_shared_transpose.cpp", "kMaxConflictsPerRequest"), lambda most: most),
    ("labs/03_shared_transpose/*", r"at most (\d+(?:\.\d+)?)x the time of the reference",
     ("tests/check_03_shared_transpose.cpp", "kMaxTimeOfUnpadded"), lambda most: most),
    ("labs/03_shared_transpose/*", r"racecheck` runs your \w+ kernel (?:once )?on an? (\d+) x (\d+)",
     ("tests/check_03_shared_transpose.cpp", "kRaceSize"), lambda size: size),
    ("labs/07_convolution/*", r"racecheck` runs your \w+ kernel (?:once )?on an? (\d+) x (\d+)",
     ("tests/check_07_convolution.cpp", "kRaceSize"), lambda size: size),
    ("labs/07_convolution/*", r"racecheck` runs your \w+ kernel (?:once )?on an? \d+ x \d+ image with k = (\d+)",
     ("tests/check_07_convolution.cpp", "kRaceK"), lambda k: k),
    ("labs/06_thread_sweep/*", r"more than (\d+(?:\.\d+)?)x (?:away )?from",
     ("tests/check_06_thread_sweep.cpp", "kSweepAgreement"), lambda most: most),
    ("labs/*", r"over (\d+(?:\.\d+)?) times the kept one, or under 1/(\d+(?:\.\d+)?) of it",
     ("common/judge.hpp", "kReferenceDrift"), lambda drift: (drift, drift)),
]


def check_constants(pages, texts):
    problems = []
    for covers, phrase, (source, name), expected_of in CONSTANT_PHRASES:
        expected = expected_of(constant(source, name))
        expected = expected if isinstance(expected, tuple) else (expected,)
        matched = False
        for page in pages:
            if not fnmatch.fnmatchcase(page, covers) or excluded(page, "constants"):
                continue
            flat = re.sub(r"\s", " ", texts[page])  # a phrase may wrap; offsets stay the same
            for m in re.finditer(phrase, flat, re.I):
                matched = True
                said = tuple(number(g) for g in m.groups())
                if said != tuple(float(e) for e in expected[:len(said)]):
                    problems.append("%s:%d: %r says %s, but %s in %s gives %s"
                                    % (page, line_of(texts[page], m.start()), m.group(0),
                                       " x ".join(g for g in m.groups()), name, source,
                                       " x ".join("%g" % e for e in expected[:len(said)])))
        if not matched:
            problems.append("no walkthrough (%s) says %s any more in the words /%s/: reword the table "
                            "CONSTANT_PHRASES in %s" % (covers, name, phrase, os.path.relpath(__file__, ROOT)))
    return problems


# -- (c) figures of the committed run -----------------------------------------------------------------

FIGURE = re.compile(r"(\d+(?:\.\d+)?)(?: (GB/s|GFLOP/s|TFLOP/s|ms|Mpixel/s)\b|%)")
UNIT = re.compile(r"GB/s|GFLOP/s|TFLOP/s|Mpixel/s|\bms\b")
BARE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.%])")


def claimed_spans(claims):
    """For each claimed line (file, text): the figures' spans that some claim checks."""
    spans = {}
    for claim in claims:
        try:
            line = check_figures.claimed_line(claim)
        except ValueError:
            continue  # check_figures reports it
        stated, index = check_figures.stated_figures(claim, line)
        if -len(stated) <= index < len(stated):
            m = stated[index]
            spans.setdefault((claim["file"], line), []).append((m.start(1), m.end(1)))
    return spans


def table_rows(text):
    """Each Markdown table of the page as (header cells, [(row text, [(start, end) of each cell])])."""
    tables, header, rows = [], None, []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            bounds = [i for i, c in enumerate(line) if c == "|"]
            cells = list(zip(bounds, bounds[1:]))
            if header is None:
                header = [line[a + 1:b].strip() for a, b in cells]
            elif not re.fullmatch(r"[|\s:-]+", line):
                rows.append((line, cells))
            continue
        if header is not None:
            tables.append((header, rows))
        header, rows = None, []
    return tables


# A column that follows the committed run's column holds the run's figures too (a percentage, a
# second kernel, a ratio of the two, a rate in other units), unless its header says otherwise.
NOT_THE_RUN = re.compile(r"earlier|predicted|occupancy|paper|post|grading run", re.I)


def committed_columns(header):
    """The columns of a table that hold the committed bench run's figures."""
    first = next((i for i, h in enumerate(header) if "committed bench run" in h), None)
    if first is None:
        return []
    return [first] + [i for i in range(first + 1, len(header)) if not NOT_THE_RUN.search(header[i])]


def check_unclaimed(pages, texts, claims):
    """A figure in a column headed as the committed bench run's must be one that a claim checks."""
    problems = []
    spans = claimed_spans(claims)
    for page in pages:
        if excluded(page, "unclaimed figures"):
            continue
        for header, rows in table_rows(texts[page]):
            columns = committed_columns(header)
            for row, cells in rows:
                checked = spans.get((page, row), [])
                for i in columns:
                    if i >= len(cells):
                        continue
                    a, b = cells[i]
                    figures = list(FIGURE.finditer(row, a, b))
                    if not figures and UNIT.search(header[i]):  # a column of bare numbers in a unit
                        figures = list(BARE.finditer(row, a, b))
                    for m in figures:
                        if not any(s <= m.start(1) and m.end(1) <= e for s, e in checked):
                            problems.append("%s: the figure %s in the committed bench run's column (%s) of %r "
                                            "is not checked against the run: add it to docs/figures/claims.json"
                                            % (page, m.group(0), header[i], row.strip()))
    return problems


def check_figures_of_run():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = check_figures.main([])
    return [] if status == 0 else ["docs/figures/check_figures.py: " + line
                                   for line in out.getvalue().splitlines() if line.strip()]


# -- all of it -------------------------------------------------------------------------------------------

def problems():
    pages = walkthroughs()
    texts = {page: read(page) for page in pages}
    files, outputs, targets = student_edition(), build_outputs(), student_make_targets()
    found = []
    for page in pages:
        if not excluded(page, "paths"):
            found += check_paths(page, texts[page], files, outputs)
        if not excluded(page, "make"):
            found += check_make(page, texts[page], targets)
    found += check_constants(pages, texts)
    with open(check_figures.CLAIMS) as f:
        claims = json.load(f)["claims"]
    found += check_unclaimed(pages, texts, claims)
    found += check_figures_of_run()
    return found, len(pages)


def main():
    found, count = problems()
    for problem in found:
        print("WRONG: " + problem)
    if TEMPORARY_EXCLUSIONS:
        print("temporarily excluded: %s" % "; ".join("%s (%s)" % (p, ", ".join(c)) for p, c in TEMPORARY_EXCLUSIONS.items()))
    print("%d walkthroughs read: %s" % (count, "%d problem(s)" % len(found) if found else "every path, make target, "
                                        "checker constant and committed figure agrees"))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
