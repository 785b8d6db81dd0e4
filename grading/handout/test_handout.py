#!/usr/bin/env python3
"""The student edition holds no solution: ctest unit.handout (and docs.handout, its book). No GPU.

    test_handout.py --build-dir BUILD [--book] [--keep]

unit.handout makes a handout (grading/handout/make_handout.py) into a temporary folder, with its
reference objects compiled for sm_75 only (the full list of architectures takes minutes; what is
checked here does not depend on it), then checks:

1. No file of the handout is named after a file of solutions/, but the skeletons themselves
   (labs/DIR/FILE for solutions/DIR/FILE), and no solutions/, tests/buggy/ or bench build.
2. No text file of the handout holds a line found only in solutions/. A solution-only line is a
   line of a solutions/ file, compared as `normalized` writes it (whitespace dropped, a leading
   comment or Markdown marker dropped), that is in no skeleton of labs/ (any lab's: a line that
   a skeleton gives the student is no secret, wherever else it appears) and is not trivial:
   code lines of 12 or more characters once normalized, so that `c[i]=a[i]+b[i];` counts while
   `}`, `return;` or `#include"workbook.hpp"`-length boilerplate does not; comment lines of 20 or
   more, since a short comment (`// step 2`) says nothing a student could use. A handout line
   leaks when its normalized form is, or contains, a solution-only line.
   That the scan can fail is checked on every run: a solution-only line planted in a copy of a
   handout file must be found. And no line of solutions/ (20 characters or more, as written) is
   in the bytes of a shipped object of reference/.
3. The handout configures (WORKBOOK_REFERENCE_OBJECTS found by itself), defines no test that
   needs solutions/ (solution_scores_full_marks, buggy variants), builds lab 01's checkers and
   lab 05's reference checker (which links another lab's reference too) from the shipped
   objects, for sm_75, and its gpu.01_vector_add.skeleton_fails test skips (no GPU here) after
   listing the tests from the reference checker it built; its unit.sandbox passes (the runner
   does not see reference/).

docs.handout (--book) builds the handout's book with the handout's own docs/build_docs.py (no
solutions/ there, warnings are errors), scans every file of the HTML site as in 2, tags
stripped, and runs the handout's docs/tests/browser_test.py on it. It exits 77 (skipped) when a
tool of the book or Chromium is missing, as docs.build and docs.browser do. (The workbook's own
book, which quotes solutions/ in two headers' \snippet, fails this scan: 24 lines of
namespaceworkbook.html on 2026-11-26; the handout points those at the skeletons.)
"""
import argparse
import html
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXIT_SKIPPED = 77
ARCHITECTURE = "75-real"
MIN_CODE, MIN_COMMENT = 12, 20
# An object's strings (solution_strings_in_objects): runs of this many printable characters or
# more, as `strings -n 8` prints them; identifiers in its symbols of this many characters or more.
MIN_OBJECT_STRING, MIN_IDENTIFIER = 8, 6
COMMENT = re.compile(r"^\s*(//|/\*|\*|#(?!\s*(include|define|if|pragma|endif|else)))")
LEADING_MARK = re.compile(r"^(//[/!<]?|/\*+!?|\*+/?|#+|>|-|\+)\s*")
SKELETON_SUFFIXES = (".cu", ".cuh", ".hpp", ".h", ".cpp")
# Test names that only a tree with solutions/ may define.
NEEDS_SOLUTIONS = re.compile(r"solution_scores_full_marks|\.buggy\.|build_refused|bench|faulty_tree")


def normalized(line):
    """The line as compared: leading comment or Markdown marker dropped, whitespace dropped."""
    text = line.strip()
    while True:
        stripped = LEADING_MARK.sub("", text, count=1)
        if stripped == text:
            break
        text = stripped
    return re.sub(r"\s+", "", text)


def text_of(path):
    """A file's text, or None for a binary file (a NUL byte in its first 8 KiB)."""
    with open(path, "rb") as f:
        data = f.read()
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def files_under(folder, skip=(".git",)):
    for d, dirs, names in os.walk(folder):
        dirs[:] = [x for x in dirs if x not in skip]
        for name in names:
            yield os.path.join(d, name)


def solution_only_lines(root):
    """{normalized line: "solutions/FILE:LINE"} for every non-trivial line of solutions/ that no
    skeleton of labs/ holds or contains, and that is no whole line of the workbook's own library
    and checkers (common/, tests/ but buggy/, grading/ but its tests: a loop header or
    CUDA_CHECK(cudaDeviceSynchronize()) that the judge's float64 reference shares with a solution
    is the workbook's code, which the handout must ship)."""
    skeletons = []
    for path in files_under(os.path.join(root, "labs")):
        if path.endswith(SKELETON_SUFFIXES):
            skeletons += [normalized(line) for line in text_of(path).splitlines()]
    in_skeletons = "\n".join(skeletons)
    shared = set()
    for folder in ("common", "tests", "grading"):
        for path in files_under(os.path.join(root, folder), skip=(".git", "buggy", "tests", "__pycache__")):
            text = text_of(path) if path.endswith(SKELETON_SUFFIXES + (".py",)) else None
            if text is not None:
                shared.update(normalized(line) for line in text.splitlines())
    found = {}
    for path in sorted(files_under(os.path.join(root, "solutions"))):
        text = text_of(path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            key = normalized(line)
            least = MIN_COMMENT if COMMENT.match(line) else MIN_CODE
            if len(key) < least or not re.search(r"[A-Za-z0-9]", key) or key in shared or key in in_skeletons:
                continue
            found.setdefault(key, "%s:%d" % (os.path.relpath(path, root), number))
    return found


def html_lines(text):
    """The visible lines of an HTML page: Doxygen's code lines (<div class="line">) and text
    blocks each on a line, line numbers and tags dropped, entities decoded."""
    text = re.sub(r'<span class="lineno">.*?</span>', "", text, flags=re.S)
    text = re.sub(r"(?i)<(br|/p|/div|/li|/pre|/h\d|/td|/tr|div[^>]*)\s*/?>", "\n", text)
    text = re.sub(r"<[^>]+>", "", text)
    return html.unescape(text).splitlines()


def leaks(folder, secrets, as_html=False):
    """[(file:line, the solution line it holds)] for every line of a text file under `folder`
    that is, or contains, a solution-only line."""
    pattern = re.compile("|".join(re.escape(k) for k in sorted(secrets, key=len, reverse=True)))
    found = []
    for path in sorted(files_under(folder)):
        text = text_of(path)
        if text is None:
            continue
        lines = html_lines(text) if as_html and path.endswith((".html", ".htm")) else text.splitlines()
        for number, line in enumerate(lines, 1):
            m = pattern.search(normalized(line))
            if m:
                found.append(("%s:%d" % (os.path.relpath(path, folder), number), secrets[m.group(0)]))
    return found


PRINTABLE = re.compile(rb"[\x20-\x7e]{%d,}" % MIN_OBJECT_STRING)
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{%d,}" % (MIN_IDENTIFIER - 1))


def squeezed(text):
    """Text with every run of whitespace made one space: a stringified CUDA_CHECK argument, or a
    string that the compiler joined, is written so."""
    return re.sub(r"\s+", " ", text)


def texts_of(paths):
    """The text files among `paths`, squeezed and joined: what a string is looked up in."""
    texts = []
    for path in paths:
        text = text_of(path)
        if text is not None:
            texts.append(squeezed(text))
    return "\n".join(texts)


def demangled(names):
    """{mangled name: its C++ name} (c++filt), for the names an object's strings hold."""
    names = sorted(names)
    if not names:
        return {}
    r = subprocess.run(["c++filt"], input="\n".join(names), stdout=subprocess.PIPE, text=True)
    return dict(zip(names, r.stdout.splitlines()))


FATBIN_MAGIC = struct.pack("<I", 0xBA55ED50)  # a fat binary's header, as nvcc embeds it
FATBIN_PTX = 1  # an entry's kind: 1 PTX, 2 machine code (an ELF cubin)


def ptx_entries(data):
    """The architectures (e.g. 121 for compute_121) of the PTX that an object's fat binaries hold
    (what `cuobjdump -lptx` lists; read here from the fat binary's own headers, since the PTX is
    compressed and cuobjdump may be missing): each fat binary is a header (magic, version, header
    size, size) and entries (kind, version, header size, padded size, ..., architecture at 28)."""
    found = []
    at = data.find(FATBIN_MAGIC)
    while at >= 0 and at + 16 <= len(data):
        _, _, header, size = struct.unpack_from("<IHHQ", data, at)
        entry, end = at + header, min(at + header + size, len(data))
        while entry + 32 <= end:
            kind, _, entry_header, padded = struct.unpack_from("<HHIQ", data, entry)
            if kind == FATBIN_PTX:
                found.append(struct.unpack_from("<I", data, entry + 28)[0])
            if entry_header == 0:
                break
            entry += entry_header + padded
        at = data.find(FATBIN_MAGIC, max(end, at + 4))
    return found


def solution_strings_in_objects(objects, shipped_texts, root):
    """["OBJECT holds ..."] for every string of a compiled reference that tells something of the
    solution's source the student edition does not already hold. An object's strings are its runs
    of 8 or more printable characters (`strings -n 8`); one leaks when it
      - names the workbook's absolute path, or a path under solutions/ (__FILE__, debug info), or
        is PTX's header (`.version`, `.target`: uncompressed PTX), or
      - is found in the text of a file of solutions/ (whitespace squeezed: CUDA_CHECK's
        stringified argument, a message, a comment) and in no text file the handout ships, or
      - once demangled (a mangled symbol: _Z...), holds an identifier of 6 or more characters
        that is in solutions/ and in no shipped text file (a helper's or constant's name).
    And an object leaks when its fat binary holds PTX at all (ptx_entries), compressed or not.
    `shipped_texts` is what the handout ships besides reference/, squeezed and joined (texts_of)."""
    solutions = texts_of(files_under(os.path.join(root, "solutions")))
    solution_identifiers = set(IDENTIFIER.findall(solutions))
    shipped_identifiers = set(IDENTIFIER.findall(shipped_texts))
    found = []
    for path in objects:
        with open(path, "rb") as f:
            data = f.read()
        strings = {m.group(0).decode("ascii") for m in PRINTABLE.finditer(data)}
        name = os.path.basename(path)
        said = set()

        def leak(what):
            if what not in said:
                said.add(what)
                found.append("reference/%s holds %s" % (name, what))
        for s in sorted(strings):
            if os.path.realpath(root) in s or "solutions/" in s:
                leak("a path of the workbook's tree: %r" % s)
            elif re.match(r"\s*\.(version|target)\s+(\d|sm_|compute_)", s):
                leak("PTX (%r): the kernels in a readable form" % s)
            elif len(squeezed(s).strip()) >= MIN_OBJECT_STRING and squeezed(s).strip() in solutions \
                    and squeezed(s).strip() not in shipped_texts:
                leak("the solution's text %r" % s)
        for mangled, readable in demangled(s for s in strings if s.startswith("_Z")).items():
            for word in IDENTIFIER.findall(readable):
                if word in solution_identifiers and word not in shipped_identifiers:
                    leak("the solution's identifier %r (in the symbol %s)" % (word, readable))
        for architecture in ptx_entries(data):
            leak("PTX for compute_%d (cuobjdump -ptx prints it): the kernels in a readable form" % architecture)
    return found


def source_in_objects(handout, root):
    """solution_strings_in_objects over the shipped objects of reference/, against every other
    text file of the handout."""
    shipped = texts_of(p for p in files_under(handout) if not os.path.relpath(p, handout).startswith("reference/"))
    objects = sorted(p for p in files_under(os.path.join(handout, "reference")) if p.endswith(".o"))
    if not objects:
        return ["reference/ holds no object: the scan of the objects proves nothing"]
    return solution_strings_in_objects(objects, shipped, root)


def check_object_scan_can_fail(handout, root):
    """The object scan must find a solution string planted in a copy of a shipped object."""
    objects = sorted(p for p in files_under(os.path.join(handout, "reference")) if p.endswith(".o"))
    shipped = texts_of(p for p in files_under(handout) if not os.path.relpath(p, handout).startswith("reference/"))
    secret = None  # the first CUDA_CHECK argument of solutions/ that no shipped file holds
    for path in sorted(files_under(os.path.join(root, "solutions"))):
        for m in re.finditer(r"CUDA_CHECK\((.{%d,})\);" % MIN_OBJECT_STRING, text_of(path) or ""):
            if secret is None and squeezed(m.group(1)) not in shipped:
                secret = squeezed(m.group(1))
    if not secret or not objects:
        return ["no solution-only CUDA_CHECK in solutions/, or no object to plant one in: the object "
                "scan is not tried"]
    with tempfile.TemporaryDirectory(prefix="h1-plant-") as planted:
        copy = os.path.join(planted, os.path.basename(objects[0]))
        with open(objects[0], "rb") as f, open(copy, "wb") as g:
            g.write(f.read() + b"\0" + secret.encode() + b"\0")
        if not solution_strings_in_objects([copy], shipped, root):
            return ["the object scan missed the solution text %r planted on purpose: it cannot fail" % secret]
    return []


def check_scan_can_fail(folder, secrets, as_html):
    """Plants one solution-only line in a copy of a handout file: the scan must find it."""
    line, where = next(iter(secrets.items()))
    with tempfile.TemporaryDirectory(prefix="h1-plant-") as planted:
        name = "planted.html" if as_html else "planted.cu"
        with open(os.path.join(planted, name), "w") as f:
            body = "<div class=\"line\">  <span class=\"keyword\">%s</span></div>" % html.escape(line) \
                if as_html else "    " + line + "\n"
            f.write(body)
        if not leaks(planted, secrets, as_html):
            return ["the scan missed a solution line planted on purpose (%s): it cannot fail" % where]
    return []


def misnamed_files(handout, root):
    """Files of the handout named after a file of solutions/, but the skeletons themselves."""
    names, skeletons = set(), set()
    for path in files_under(os.path.join(root, "solutions")):
        rel = os.path.relpath(path, os.path.join(root, "solutions"))
        names.add(os.path.basename(rel))
        skeletons.add("labs/" + rel)
    problems = []
    for path in files_under(handout):
        rel = os.path.relpath(path, handout)
        if rel.split("/")[0] == "solutions" or rel.startswith("tests/buggy/") or rel == "bench/CMakeLists.txt":
            problems.append("%s is in the handout" % rel)
        elif os.path.basename(rel) in names and rel not in skeletons:
            problems.append("%s is named after a solution file" % rel)
    return problems


def lab_rows(text):
    """{lab: idea} of a README's table of labs (the instructors' has a status column more)."""
    rows = re.findall(r"^\| \[(\d\d [^\]]+)\]\([^)]*\) \| (.*?) \|(?: [^|]* \|)?$", text, re.M)
    return dict(rows)


def student_edition_text(handout, root):
    """What the student edition says of itself: its book's front page names no solutions/, its
    Makefile's header offers no command it cannot run (SOLUTIONS=1, bench, handout), and its
    README's table of labs says what the instructors' README says of each lab."""
    problems = []
    with open(os.path.join(handout, "docs", "mainpage.md"), encoding="utf-8") as f:
        if "solutions/" in f.read():
            problems.append("the handout's docs/mainpage.md names solutions/, which it lacks")
    with open(os.path.join(handout, "Makefile"), encoding="utf-8") as f:
        header = [line for line in f.read().split("\n\n")[0].splitlines()]
    offered = [line for line in header if re.search(r"SOLUTIONS=1|make (bench|handout)\b", line)]
    if offered:
        problems.append("the handout's Makefile offers what it cannot run: %s" % offered)
    with open(os.path.join(handout, "README.md"), encoding="utf-8") as f:
        students = lab_rows(f.read())
    with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
        instructors = lab_rows(f.read())
    if not students or students != instructors:
        problems.append("the handout's README lists the labs otherwise than README.md: %s"
                        % sorted(set(students.items()) ^ set(instructors.items())))
    return problems


def run(command, **kwargs):
    r = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       errors="replace", **kwargs)
    return r.returncode, r.stdout


def make(handout, work, git=True):
    command = [sys.executable, os.path.join(ROOT, "grading", "handout", "make_handout.py"), "--out", handout,
               "--build-dir", os.path.join(work, "references"), "--architectures", ARCHITECTURE]
    status, output = run(command + ([] if git else ["--no-git"]))
    print(output.rstrip())
    if status != 0:
        sys.exit("FAILED: make_handout.py exit status %d" % status)


def check_build(handout, work):
    """Configures and builds part of the handout, outside it, for sm_75."""
    problems = []
    build = os.path.join(work, "build")
    shutil.rmtree(build, ignore_errors=True)
    status, output = run(["cmake", "-S", handout, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                          "-DCMAKE_CUDA_ARCHITECTURES=" + ARCHITECTURE])
    if status != 0:
        return ["the handout does not configure:\n" + output[-3000:]]
    if "Reference solutions: the compiled objects in %s/reference" % handout not in output:
        problems.append("the handout's CMake did not say it uses reference/:\n" + output[-2000:])
    status, listing = run(["ctest", "-N"], cwd=build)
    names = re.findall(r"Test\s+#\d+:\s+(\S+)", listing)
    print("the handout defines %d tests" % len(names))
    wrong = [n for n in names if NEEDS_SOLUTIONS.search(n)]
    if wrong:
        problems.append("the handout defines tests that need solutions/: " + ", ".join(wrong))
    for needed in ("gpu.01_vector_add.skeleton_fails", "docs.build", "docs.browser", "unit.grader"):
        if needed not in names:
            problems.append("the handout lacks the test %s" % needed)
    targets = ["check_01_vector_add", "check_01_vector_add_solution", "check_05_tiled_matmul_solution",
               "unit_sandbox"]
    started = time.monotonic()
    jobs = str(len(os.sched_getaffinity(0)))
    status, output = run(["cmake", "--build", build, "--parallel", jobs, "--target", *targets])
    print("built %s in the handout in %.0f s" % (", ".join(targets), time.monotonic() - started))
    if status != 0:
        return problems + ["the handout does not build %s:\n%s" % (targets, output[-4000:])]
    status, output = run(["ctest", "-R", "^gpu.01_vector_add.skeleton_fails$", "--output-on-failure"], cwd=build)
    print(output.strip().splitlines()[-1] if output.strip() else "")
    if "Skipped" not in output and "Not Run" not in output:
        problems.append("gpu.01_vector_add.skeleton_fails did not skip without a GPU:\n" + output[-3000:])
    # The runner's sandbox hides the compiled reference as it hides solutions/ in the workbook.
    status, output = run(["ctest", "-R", "^unit.sandbox$", "--output-on-failure"], cwd=build)
    if status != 0:
        problems.append("unit.sandbox fails in the handout:\n" + output[-3000:])
    return problems


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", required=True, help="the workbook's build folder (work goes under it)")
    p.add_argument("--book", action="store_true", help="build the handout's book and scan its HTML")
    p.add_argument("--keep", action="store_true", help="keep the handout (printed) for a look")
    p.add_argument("--scan-objects", nargs="+", metavar="OBJECT",
                   help="only scan these compiled objects for strings of solutions/, against the "
                        "files make handout would ship (no handout is made)")
    args = p.parse_args(argv)
    started = time.monotonic()
    if args.scan_objects:
        sys.path.insert(0, os.path.join(ROOT, "grading", "handout"))
        import make_handout  # noqa: E402  (its list of the files a handout holds)
        shipped = texts_of(os.path.join(ROOT, path) for path in make_handout.shipped_files())
        found = solution_strings_in_objects(args.scan_objects, shipped, ROOT)
        print("\n".join(found) if found else "no string of solutions/ in %d object(s)" % len(args.scan_objects))
        return 1 if found else 0

    if args.book:
        sys.path.insert(0, os.path.join(ROOT, "docs"))
        import build_docs  # noqa: E402  (the book's own list of tools)
        _, missing = build_docs.find_tools()
        if missing:
            print("skipped: " + build_docs.missing_message(missing))
            return EXIT_SKIPPED

    secrets = solution_only_lines(ROOT)
    print("%d solution-only lines in solutions/" % len(secrets))
    if not secrets:
        sys.exit("FAILED: no solution-only line found in solutions/: the scan would prove nothing")

    work = os.path.join(os.path.abspath(args.build_dir), "handout_test")
    os.makedirs(work, exist_ok=True)
    temp = tempfile.mkdtemp(prefix="workbook-handout-")
    handout = os.path.join(temp, "handout")
    problems = []
    browser_skipped = False
    try:
        make(handout, work, git=not args.book)
        if args.book:
            site_build = os.path.join(temp, "build")
            status, output = run([sys.executable, os.path.join(handout, "docs", "build_docs.py"),
                                  "--build-dir", site_build], cwd=handout)
            print(output.strip().splitlines()[-1] if output.strip() else "")
            if status != 0:
                problems.append("the handout's book does not build (exit status %d):\n%s" % (status, output[-4000:]))
            else:
                site = os.path.join(site_build, "docs", "html")
                problems += ["the book's %s holds %s" % leak for leak in leaks(site, secrets, as_html=True)]
                problems += check_scan_can_fail(site, secrets, as_html=True)
                # Every page, image and link of it in Chromium: the handout's own docs.browser.
                status, output = run([sys.executable, os.path.join(handout, "docs", "tests", "browser_test.py"),
                                      "--build-dir", site_build, "--quiet"], cwd=handout)
                print("browser test of the handout's book: " + (output.strip().splitlines() or ["(no output)"])[-1])
                if status == EXIT_SKIPPED:
                    browser_skipped = True
                elif status != 0:
                    problems.append("the browser test fails on the handout's book:\n" + output[-4000:])
        else:
            problems += misnamed_files(handout, ROOT)
            problems += student_edition_text(handout, ROOT)
            problems += ["%s holds %s" % leak for leak in leaks(handout, secrets)]
            problems += check_scan_can_fail(handout, secrets, as_html=False)
            problems += source_in_objects(handout, ROOT)
            problems += check_object_scan_can_fail(handout, ROOT)
            status, output = run(["git", "-C", handout, "log", "--format=%s"])
            if output.strip() != "Starter code":
                problems.append("the handout's history is not one commit \"Starter code\": %r" % output)
            problems += check_build(handout, work)
    finally:
        if args.keep:
            print("kept: " + handout)
        else:
            shutil.rmtree(temp, ignore_errors=True)

    took = time.monotonic() - started
    if problems:
        print("FAILED (%.0f s):\n  %s" % (took, "\n  ".join(p.replace("\n", "\n    ") for p in problems)))
        return 1
    print("ok (%.0f s): the handout holds no solution file and no solution-only line%s"
          % (took, " in its book" if args.book else ", and builds without solutions/"))
    if browser_skipped:
        print("skipped: the browser test of the handout's book (Chromium is not installed)")
        return EXIT_SKIPPED
    return 0


if __name__ == "__main__":
    sys.exit(main())
