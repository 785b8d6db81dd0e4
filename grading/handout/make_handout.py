#!/usr/bin/env python3
"""Writes the student edition of the workbook: `make handout OUT=dir`.

    make_handout.py --out DIR --build-dir BUILD [--architectures LIST] [--no-git]

The workbook has solutions/ in it; a course cannot hand that to students. This writes, into DIR
(which must not exist, or be empty, and must be outside this tree), a git repository with one
commit, "Starter code", ready to push as a GitHub Classroom template:

  labs/        the skeletons and their walkthroughs
  common/, grading/, tests/ (the checkers, their headers and case helpers; not tests/buggy/,
               whose variants are solutions with one bug each)
  docs/        the book's sources; bench/'s report scripts, which draw its benchmarks page
  reference/   the reference solutions as compiled objects only (below)
  labs.json, Makefile, CMakeLists.txt, .gitignore, and README.md from grading/handout/student_readme.md
               (not named README.md here: the book reads every README.md under grading/)

Nothing of solutions/, tests/buggy/ or the rest of bench/ (make bench links every solution).

The reference solutions are shipped compiled, so that a student's `make grade` times the
student's kernel against the same reference code as the instructor's grade does. For each lab
part, this builds, in a build folder of its own (BUILD, never the instructor's), the solution's
object exactly as the workbook's build compiles it, for every architecture a student may have
(LIST, CMake's form, real architectures only; by default real code for every architecture nvcc
builds for from sm_75, with CUDA 13.0 sm_75 to sm_121; the 90a-only part keeps its sm_90a), and
ships:

  reference/<id>.o         the solution's object, which the reference runner links as it is,
                           and which the handout's build renames for the judge as the workbook's
                           does (reference_object.py: the same object comes out, and shipping it
                           once halves the handout; lab 07's coarsened part alone is 30 MB)
  reference/<id>.kernels   the kernels the solution defines (student_symbols.py)

The handout's CMake finds reference/ where solutions/ is absent (WORKBOOK_REFERENCE_OBJECTS) and
links these instead of compiling solutions/. They hold machine code (SASS) only, which cuobjdump
and nvdisasm can read: no PTX (a virtual architecture in LIST stops the build), and no source
text or path. common/check.hpp's CUDA_CHECK keeps its call's text and __FILE__ for its message;
the reference objects are compiled with grading/buildtools/reference_quiet.h included first,
which defines CUDA_CHECK and CUDA_CHECK_LAUNCH again without either, and with the tree's path
mapped away (-ffile-prefix-map). grading/handout/test_handout.py checks that no string of an
object is found in solutions/ (but those the student edition holds anyway).

A `\\snippet solutions/...` in a shipped header is pointed at the skeleton's region of the same
name (the skeleton is what the student has); one whose region the skeleton lacks stops the build.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "grading", "handout")
# Where the toolkit cannot be asked (default_architectures): real code for the common GPUs of
# CUDA 13 from sm_75 (a Colab T4). No PTX: it would be the reference's source in all but name.
FALLBACK_ARCHITECTURES = "75-real;80-real;86-real;89-real;90-real;100-real;120-real"


def default_architectures():
    """Real code for every architecture this toolkit's nvcc builds for from sm_75 up (nvcc
    --list-gpu-code: with CUDA 13.0, sm_75 to sm_121, Jetson's and Thor's included). No PTX: it
    spells out the reference kernels' indexing and pipeline nearly as the source does. A GPU newer
    than the toolkit's newest is then not one the handout supports: make the handout again with a
    newer toolkit."""
    nvcc = os.environ.get("CUDACXX") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    try:
        listed = subprocess.run([nvcc, "--list-gpu-code"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return FALLBACK_ARCHITECTURES
    numbers = sorted({int(n) for n in re.findall(r"\bsm_(\d+)\b", listed) if int(n) >= 75})
    if not numbers:
        return FALLBACK_ARCHITECTURES
    return ";".join("%d-real" % n for n in numbers)


def only_machine_code(architectures):
    """Stops when LIST would ship PTX: CMake's "75" means sm_75 and compute_75, "75-virtual" PTX."""
    kept = [a.strip() for a in architectures.split(";") if a.strip()]
    ptx = [a for a in kept if not a.endswith("-real")]
    if ptx or not kept:
        fail("--architectures %r: the reference objects are shipped as machine code only, so every "
             "architecture must be real code, e.g. 75-real;90-real (%s would ship PTX)"
             % (architectures, ", ".join(ptx) or "an empty list"))

# What the handout holds: these folders (all of each, but EXCLUDED) and these files.
FOLDERS = ["labs", "common", "grading", "tests", "docs"]
FILES = ["labs.json", "Makefile", "CMakeLists.txt", ".gitignore",
         # bench/report.py draws the book's benchmarks page from the committed CSVs (docs/bench/).
         "bench/report.py", "bench/report_markdown.py", "bench/report_plots.py",
         "bench/report_results.py", "bench/sources.json",
         # cuBLAS's TF32 rounding, an experiment lab 05's walkthrough links to (no solution code).
         "bench/dev/tf32_rounding.cu"]
EXCLUDED = [re.compile(p) for p in (
    r"^tests/buggy/",              # each variant is a solution with one bug
    # The grader's tests that copy, patch or compile solutions/ (their ctest tests are not defined
    # without it); test_faulty_tree.py quotes solution lines, the faults it plants.
    r"^grading/tests/(test_faulty_tree|test_grade_class|test_slurm|slurm_cluster|"
    r"test_leak_beside_others|test_architectures|test_add_a_lab)\.py$",
    r"^grading/tests/device_churn\.cu$",
    r"(^|/)__pycache__/", r"\.pyc$",
    r"^README\.md$",               # the students' README is grading/handout/student_readme.md
    # For instructors: its steps write solutions/ and tests/buggy/, which the student edition has
    # not (student_mainpage and student_doxyfile leave out its link and its place in the book).
    r"^docs/adding_a_lab\.md$",
)]
# The reference objects' own flags (build_references): CUDA_CHECK without its call's text and
# __FILE__ (reference_quiet.h, included first), and the tree's path mapped to nothing in what the
# host compiler writes (file names of debug sections, __FILE__ elsewhere).
# (CMake hands CUDA_FLAGS to the shell as written: a path with a space is quoted.)
QUIET_FLAGS = "%s %s" % (shlex.quote("--pre-include=" + os.path.join(ROOT, "grading", "buildtools", "reference_quiet.h")),
                         shlex.quote("-Xcompiler=-ffile-prefix-map=%s/=" % ROOT))
SNIPPET = re.compile(r"\\snippet\s+solutions/([\w./-]+)\s+(\S.*?)\s*$")


def fail(message):
    sys.exit("make handout: " + message)


def run(command, log=None, **kwargs):
    """Runs a command; its output goes to `log` (a file) or is shown on failure."""
    r = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       errors="replace", **kwargs)
    if log:
        with open(log, "a") as f:
            f.write("$ %s\n%s\n" % (" ".join(command), r.stdout))
    if r.returncode != 0:
        tail = "\n".join(r.stdout.splitlines()[-40:])
        fail("%s failed (exit status %d)%s:\n%s" % (" ".join(command[:3]), r.returncode,
                                                     ", log: " + log if log else "", tail))
    return r.stdout


def check_out_dir(out):
    """OUT must be empty or absent, and outside this tree (a handout inside the workbook would be
    copied into the next handout, and its git repository would sit inside the workbook's)."""
    real_out, real_root = os.path.realpath(out), os.path.realpath(ROOT)
    if os.path.commonpath([real_out, real_root]) == real_root:
        fail("OUT=%s is inside the workbook's tree (%s): choose a folder outside it, e.g. "
             "make handout OUT=../workbook-handout" % (out, ROOT))
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        fail("OUT=%s exists and is not empty: choose a new folder, or remove that one first" % out)


def shipped_files():
    """The files of this tree that the handout holds (relative paths), from git's list of the
    tree (tracked and untracked files, not ignored ones) when there is one, else from the folders."""
    r = subprocess.run(["git", "-C", ROOT, "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if r.returncode == 0:
        listed = [p for p in r.stdout.decode().split("\0") if p]
    else:
        listed = []
        for folder in FOLDERS:
            for d, _, names in os.walk(os.path.join(ROOT, folder)):
                listed += [os.path.relpath(os.path.join(d, n), ROOT) for n in names]
        listed += FILES
    chosen = []
    for path in sorted(set(listed)):
        if not os.path.isfile(os.path.join(ROOT, path)):
            continue  # removed from the working tree but not yet from git's index
        if not (path in FILES or path.split("/")[0] in FOLDERS):
            continue
        if any(p.search(path) for p in EXCLUDED):
            continue
        chosen.append(path)
    for path in FILES:
        if path not in chosen:
            fail("%s is missing from the workbook's tree" % path)
    return chosen


def has_region(path, region):
    with open(path, encoding="utf-8", errors="replace") as f:
        return any(re.search(r"//!\s*\[%s\]" % re.escape(region), line) for line in f)


def point_snippets_at_skeletons(text, where):
    """`\\snippet solutions/DIR/FILE REGION` -> `\\snippet labs/DIR/FILE REGION`."""
    def replace(m):
        skeleton = os.path.join(ROOT, "labs", m.group(1))
        if not os.path.exists(skeleton) or not has_region(skeleton, m.group(2)):
            fail("%s quotes solutions/%s (region %r), which the skeleton labs/%s lacks: the student "
                 "edition cannot show it. Quote the skeleton's region, or add it to the skeleton."
                 % (where, m.group(1), m.group(2), m.group(1)))
        return "\\snippet labs/%s %s" % (m.group(1), m.group(2))
    return "\n".join(SNIPPET.sub(replace, line) for line in text.split("\n"))


def student_mainpage(text):
    """docs/mainpage.md: each lab's parts as the student edition has them (no solutions/), and no
    link to the instructors' page it leaves out (docs/adding_a_lab.md)."""
    parts = re.compile(r"Each lab has three parts.*?built against your file\.", re.S)
    if not parts.search(text):
        fail("docs/mainpage.md no longer says \"Each lab has three parts ... built against your file.\": "
             "make_handout.py's student_mainpage cannot say the student edition's two")
    text = parts.sub(
        "Each lab has two parts, always in the same places: `labs/NN_name/` holds the skeleton you edit\n"
        "(a `.cu` file with TODOs) and its walkthrough, the page of this book; and\n"
        "`tests/check_NN_name.cpp` the checker, a doctest program built against your file. The reference\n"
        "solution that the checker times yours against is shipped compiled, in `reference/`.", text, count=1)
    adding = re.compile(r"^- \\subpage adding_a_lab .*?(?=^- )", re.S | re.M)
    if not adding.search(text):
        fail("docs/mainpage.md no longer links \\subpage adding_a_lab in a list item: make_handout.py's "
             "student_mainpage cannot leave it out")
    return adding.sub("", text, count=1)


def student_doxyfile(text):
    """docs/Doxyfile without the instructors' page that the student edition leaves out."""
    kept = [line for line in text.split("\n") if "docs/adding_a_lab.md" not in line]
    if len(kept) == len(text.split("\n")):
        fail("docs/Doxyfile no longer lists docs/adding_a_lab.md: make_handout.py's student_doxyfile has "
             "nothing to leave out; check what it should")
    return "\n".join(kept)


def student_makefile(text):
    """The Makefile's header without the commands a student edition cannot run (no solutions/,
    no bench, no handout of its own)."""
    kept = [line for line in text.split("\n")
            if not re.match(r"#\s+make (grade SOLUTIONS=1|bench|handout)\b", line)]
    if len(kept) == len(text.split("\n")):
        fail("the Makefile's header no longer lists make grade SOLUTIONS=1, make bench or make handout: "
             "make_handout.py's student_makefile has nothing to leave out; check what it should")
    return "\n".join(kept)


# The files the student edition holds in a form of its own: what they say of solutions/ is not so
# there.
STUDENT_EDITION = {"docs/mainpage.md": student_mainpage, "Makefile": student_makefile,
                   "docs/Doxyfile": student_doxyfile}


def copy_tree(out):
    for path in shipped_files():
        source, target = os.path.join(ROOT, path), os.path.join(out, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(source, target)
        if path in STUDENT_EDITION:
            with open(source, encoding="utf-8") as f:
                text = STUDENT_EDITION[path](f.read())
            with open(target, "w", encoding="utf-8") as f:
                f.write(text)
        if path.endswith((".hpp", ".cpp", ".cu")):  # Doxygen comments; not the prose of .md pages
            with open(source, encoding="utf-8", errors="surrogateescape") as f:
                text = f.read()
            if "\\snippet solutions/" in text:
                with open(target, "w", encoding="utf-8", errors="surrogateescape") as f:
                    f.write(point_snippets_at_skeletons(text, path))


def build_references(build_dir, architectures, log):
    """Compiles every lab part's solution in BUILD (the workbook's CMake, grading build only) and
    returns handout_references.json's list: per part, its objects and renamed objects."""
    os.makedirs(build_dir, exist_ok=True)
    run(["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release", "-DWORKBOOK_GRADE_ONLY=ON",
         "-DCMAKE_CUDA_ARCHITECTURES=" + architectures, "-DWORKBOOK_LINEINFO=OFF",
         "-DCMAKE_CUDA_FLAGS=" + QUIET_FLAGS], log)
    jobs = str(len(os.sched_getaffinity(0)))
    run(["cmake", "--build", build_dir, "--target", "handout_references", "--parallel", jobs], log)
    with open(os.path.join(build_dir, "handout_references.json")) as f:
        return json.load(f)["labs"]


def anonymous_names_hidden(path, log):
    """Renames, in a shipped object, the functions and variables of anonymous namespaces (a
    solution's helpers, e.g. occupancy_of) to neutral names, reference_local_<n>, local to the
    object. nvcc makes them global symbols named after the helper; nothing outside the object
    calls them (they are the file's own), so the name can go."""
    listed = run(["nm", "--format=posix", "--defined-only", path])
    names = sorted({line.split()[0] for line in listed.splitlines()
                    if line.split() and "_GLOBAL__N_" in line.split()[0]})
    if not names:
        return
    arguments = []
    for number, name in enumerate(names):
        arguments += ["--redefine-sym", "%s=reference_local_%d" % (name, number),
                      "--localize-symbol", "reference_local_%d" % number]
    run(["objcopy", *arguments, path], log)


def ship_references(parts, build_dir, out, architectures, log):
    reference = os.path.join(out, "reference")
    os.makedirs(reference)
    for part in parts:
        objects = part["objects"].split(";")
        if len(objects) != 1:
            fail("%s's solution compiles to %d objects; the handout ships one" % (part["id"], len(objects)))
        shutil.copyfile(objects[0], os.path.join(reference, part["id"] + ".o"))
        anonymous_names_hidden(os.path.join(reference, part["id"] + ".o"), log)
        # The kernels the reference defines, which its judge holds every launch to (the workbook's
        # build writes this list when it links the reference's runner). Without --workbook: which
        # files a student's file may include is no question for the solution, which the
        # workbook's own build checks, and this one read grading/buildtools/reference_quiet.h.
        run([sys.executable, os.path.join(ROOT, "grading", "buildtools", "student_symbols.py"),
             "--source", part["source"], "--lab", part["id"],
             "--out", os.path.join(reference, part["id"] + ".kernels"),
             "--reference", *part["renamed"], "--", objects[0]], log)
    with open(os.path.join(HERE, "reference_readme.md"), encoding="utf-8") as f:
        text = f.read()
    nvcc = "nvcc"
    with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith("CMAKE_CUDA_COMPILER:"):
                nvcc = line.split("=", 1)[1].strip()
    said = [line for line in run([nvcc, "--version"]).splitlines() if "release" in line]
    text = text.replace("{architectures}", architectures.replace(";", ", "))
    text = text.replace("{nvcc}", said[0].strip() if said else nvcc)
    with open(os.path.join(reference, "README.md"), "w", encoding="utf-8") as f:
        f.write(text)


def source_commit():
    r = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    return r.stdout.strip() if r.returncode == 0 else "unknown"


def make_repository(out):
    """git init and one commit, "Starter code". An identity is given where git has none."""
    run(["git", "init", "-q", out])
    run(["git", "-C", out, "symbolic-ref", "HEAD", "refs/heads/main"])
    run(["git", "-C", out, "add", "-A"])
    identity = []
    for key, value in (("user.name", "CUDA workbook"), ("user.email", "workbook@localhost")):
        if subprocess.run(["git", "-C", out, "config", key], stdout=subprocess.DEVNULL).returncode != 0:
            identity += ["-c", "%s=%s" % (key, value)]
    run(["git", "-C", out, *identity, "commit", "-q", "-m", "Starter code"])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="the folder to write (absent or empty, outside this tree)")
    p.add_argument("--build-dir", required=True, help="the build folder of the reference objects")
    p.add_argument("--architectures", default=None,
                   help="CMake's CUDA_ARCHITECTURES for the reference objects, real code only "
                        "(default: every one nvcc builds for from sm_75); one, e.g. 75-real, "
                        "for a quick test")
    p.add_argument("--no-git", action="store_true", help="write the files only (no repository)")
    args = p.parse_args(argv)
    out, build_dir = os.path.abspath(args.out), os.path.abspath(args.build_dir)
    args.architectures = args.architectures or default_architectures()
    only_machine_code(args.architectures)
    started = time.monotonic()

    if not os.path.isdir(os.path.join(ROOT, "solutions")):
        fail("this tree has no solutions/ (it is a student edition already?): make the handout "
             "from the instructor's workbook")
    check_out_dir(out)
    log = os.path.join(build_dir, "handout.log")
    os.makedirs(build_dir, exist_ok=True)
    open(log, "w").close()
    print("make handout: compiling the reference solutions for %s in %s (log: %s)"
          % (args.architectures, build_dir, log), flush=True)
    parts = build_references(build_dir, args.architectures, log)

    os.makedirs(out, exist_ok=True)
    copy_tree(out)
    with open(os.path.join(HERE, "student_readme.md"), encoding="utf-8") as f:
        readme = f.read().replace("{commit}", source_commit())
    with open(os.path.join(out, "README.md"), "w", encoding="utf-8") as f:
        f.write(readme)
    ship_references(parts, build_dir, out, args.architectures, log)
    if not args.no_git:
        make_repository(out)
    print("make handout: the student edition is in %s (%s, %.0f s)"
          % (out, "no repository" if args.no_git else "a git repository, one commit \"Starter code\"",
             time.monotonic() - started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
