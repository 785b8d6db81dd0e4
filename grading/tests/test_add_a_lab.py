#!/usr/bin/env python3
"""docs/adding_a_lab.md, followed to the letter: ctest unit.add_a_lab. No GPU needed.

    python3 grading/tests/test_add_a_lab.py --build-dir build [--fresh]

The page adds a lab with marked code blocks, each an HTML comment on its own line before a fenced
block:

    <!-- add-a-lab: labs.json -->        the block is one entry, added to labs.json's "labs"
    <!-- add-a-lab: file PATH -->        the block is the whole of a new file PATH
    <!-- add-a-lab: row README.md -->    the block is a row added after the last row of README.md's
                                         table of labs
    <!-- add-a-lab: run -->              the block's lines are run by bash, from the repository root
    <!-- add-a-lab: ctest -->            the block lists the lab's ctest tests, and nothing else

In a copy of the repository's files (git's tracked files as they are on disk, and new ones it
does not ignore; never the checkout itself) under <build>/add_a_lab/, with a build folder configured as `make configure`
makes one but for one GPU architecture (sm_75: the build's own list takes minutes longer), this
test applies the blocks in the page's order, so every command the page marks runs as written,
and then checks what the page promises:

1. the lab's tests, listed through the grader from the solution checker the page built, are the
   checker block's TEST_CASEs, and every test a variant's header names is one of them;
2. `grade.py --lab NN` on a machine with no GPU (CUDA_VISIBLE_DEVICES set empty, so the answer
   is the same on a machine that has one) exits 77 and reports every test of the lab as skipped,
   none as passed, in its junit.xml and results.json;
3. `docs/checker_tables.py --check` passes on the walkthrough the page had filled;
4. the skeleton is "as handed out" by labs/skeletons.sha256, which names every lab file;
5. the walkthrough passes docs/md_filter.py (its snippet markers and links lead somewhere) and
   each snippet region is a `//! [name]` pair in its file;
6. ctest lists exactly the tests of the ctest block for the lab.

The copy stays between runs, with its build folder, which a second run reuses (--fresh starts
over). Each phase's time is printed; from a fresh copy most of the time is the build of the
common library and the judge for the new lab's checkers.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(ROOT, "docs", "adding_a_lab.md")
MARK = re.compile(r"^<!--\s*add-a-lab:\s*(labs\.json|file|row|run|ctest)\b\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(```|~~~)")
ARCHITECTURE = "75-real"
EXIT_NO_DEVICE = 77


def fail(message):
    print("FAILED: " + message)
    sys.exit(1)


def steps_of(page):
    """The page's marked blocks, in order: (kind, argument, text, line of the marker)."""
    lines = open(page, encoding="utf-8").read().split("\n")
    steps, i = [], 0
    while i < len(lines):
        m = MARK.match(lines[i])
        i += 1
        if not m:
            continue
        marker_line = i
        while i < len(lines) and not lines[i].strip():
            i += 1
        if i >= len(lines) or not FENCE.match(lines[i]):
            fail("%s:%d: a marker with no fenced block after it" % (page, marker_line))
        fence, body = FENCE.match(lines[i]).group(1), []
        i += 1
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        if i >= len(lines):
            fail("%s:%d: a fenced block that never ends" % (page, marker_line))
        i += 1
        steps.append((m.group(1), m.group(2), "\n".join(body) + "\n", marker_line))
    if not steps:
        fail("%s has no <!-- add-a-lab: ... --> blocks" % page)
    return steps


def tracked_files(root):
    """The repository's files as a clone of this working tree would have them: git's tracked files
    and the new ones it does not ignore (a file not yet added is part of the tree being tested),
    else every file but the build folders."""
    r = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if r.returncode == 0 and r.stdout:
        return [p for p in r.stdout.decode().split("\0") if p]
    found = []
    for folder, dirs, files in os.walk(root):
        top = os.path.samefile(folder, root)
        dirs[:] = [d for d in dirs if d not in (".git", "__pycache__") and not (top and d.startswith("build"))]
        found += [os.path.relpath(os.path.join(folder, f), root) for f in files]
    return found


def copy_tree(root, copy, build_dir):
    """The tracked files, their times kept, in a copy emptied first of everything but its build
    folder: a second run compiles only what the page adds (its files are written afresh)."""
    if os.path.isdir(copy):
        for entry in os.listdir(copy):
            if entry != "build":
                path = os.path.join(copy, entry)
                shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.remove(path)
    # The programs, relinked by the page's commands: none of them may be left from a run before.
    shutil.rmtree(os.path.join(copy, "build", "bin"), ignore_errors=True)
    for path in tracked_files(root):
        source = os.path.join(root, path)
        if not os.path.isfile(source):
            continue  # deleted in the working tree, or a submodule
        if os.path.commonpath([os.path.abspath(source), build_dir]) == build_dir:
            continue  # a build folder that .gitignore does not name (the copy itself is in it)
        os.makedirs(os.path.dirname(os.path.join(copy, path)), exist_ok=True)
        shutil.copy2(source, os.path.join(copy, path))


class Phases:
    def __init__(self):
        self.started = self.last = time.monotonic()

    def done(self, what):
        now = time.monotonic()
        print("[%5.1f s] %s (%.1f s)" % (now - self.started, what, now - self.last), flush=True)
        self.last = now


def run(command, cwd, env=None, check=True, **kwargs):
    r = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, errors="replace", **kwargs)
    if check and r.returncode != 0:
        shown = command if isinstance(command, str) else " ".join(command)
        fail("`%s` exited %d:\n%s" % (shown, r.returncode, "\n".join(r.stdout.splitlines()[-60:])))
    return r


def apply_step(kind, argument, text, line, copy, env):
    where = "%s:%d" % (os.path.relpath(PAGE, ROOT), line)
    if kind == "labs.json":
        path = os.path.join(copy, "labs.json")
        with open(path, encoding="utf-8") as f:
            labs = json.load(f)
        entry = json.loads(text)
        if any(lab["id"] == entry["id"] for lab in labs["labs"]):
            fail("%s: labs.json already has a lab %s: give the page's example another id" % (where, entry["id"]))
        labs["labs"].append(entry)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(labs, f, indent=2)
            f.write("\n")
        return entry["id"]
    if kind == "file":
        path = os.path.join(copy, argument)
        if not argument or os.path.exists(path):
            fail("%s: the file %r is not a new file of the repository" % (where, argument))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    elif kind == "row":
        path = os.path.join(copy, argument)
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        rows = [i for i, l in enumerate(lines) if re.match(r"^\|\s*\[?\s*[0-9]{2}\b", l)]
        if not rows:
            fail("%s: %s has no table of labs to add a row to" % (where, argument))
        lines.insert(rows[-1] + 1, text.rstrip("\n"))
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
    elif kind == "run":
        for command in [l for l in text.split("\n") if l.strip()]:
            print("  $ " + command, flush=True)
            run(["bash", "-euo", "pipefail", "-c", command], copy, env)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", required=True, help="the workbook's build folder: the copy goes under it")
    parser.add_argument("--fresh", action="store_true", help="remove the copy's build folder left by a run before")
    args = parser.parse_args()
    phases = Phases()
    steps = steps_of(PAGE)

    work = os.path.join(os.path.abspath(args.build_dir), "add_a_lab")
    copy = os.path.join(work, "workbook")
    build = os.path.join(copy, "build")
    if args.fresh:
        shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(os.path.join(work, "grade"), ignore_errors=True)
    copy_tree(ROOT, copy, os.path.abspath(args.build_dir))
    phases.done("copied the repository's tracked files to %s" % copy)

    env = dict(os.environ)
    env["CMAKE_BUILD_PARALLEL_LEVEL"] = str(len(os.sched_getaffinity(0)))
    # The instructor's build folder, made before the lab is added (make configure's command,
    # for one architecture).
    run(["cmake", "-S", ".", "-B", "build", "-DCMAKE_BUILD_TYPE=Release",
         "-DCMAKE_CUDA_ARCHITECTURES=" + ARCHITECTURE], copy, env)
    phases.done("configured build/ for sm_75")

    lab, checker_block, ctest_names, variants = None, "", None, []
    for kind, argument, text, line in steps:
        lab = apply_step(kind, argument, text, line, copy, env) or lab
        if kind == "file" and re.match(r"^tests/check_.*\.cpp$", argument):
            checker_block = text
        if kind == "file" and argument.startswith("tests/buggy/"):
            variants.append(os.path.join(copy, argument))
        if kind == "ctest":
            ctest_names = sorted(l.strip() for l in text.split("\n") if l.strip())
        phases.done("%s %s (the page's line %d)" % (kind, argument, line))
    if not lab:
        fail("the page adds no entry to labs.json")
    number = lab[:2]

    sys.path.insert(0, os.path.join(copy, "grading", "driver"))
    from checker_process import list_tests  # noqa: E402  (the copy's grader)
    import expect_rejected  # noqa: E402
    from skeletons import handed_out, skeleton_hashes  # noqa: E402

    # 1. The tests, listed through the grader from the solution checker the page built.
    solution_checker = os.path.join(build, "bin", "check_%s_solution" % lab)
    if not os.access(solution_checker, os.X_OK):
        fail("the page's commands did not build %s" % solution_checker)
    tests = list_tests(solution_checker, [])
    written = re.findall(r'^TEST_CASE\("([^"]*)"', checker_block, re.M)
    if [t.name for t in tests] != written:
        fail("the checker lists %s, its block has %s" % ([t.name for t in tests], written))
    if not all(t.points or t.bonus for t in tests):
        fail("a test without points: %s" % [t.name for t in tests if not (t.points or t.bonus)])
    for variant in variants:
        named = expect_rejected.expectations(variant)
        unknown = [t for t in named["fail"] + named["pass"] if t not in written]
        if unknown:
            fail("%s names tests the checker does not have: %s" % (os.path.relpath(variant, copy), unknown))
        if not os.access(os.path.join(build, "bin", "check_%s__%s" % (lab, os.path.basename(variant).split(".")[0])),
                         os.X_OK):
            fail("the variant %s was not built" % variant)
    print("  %s lists %d tests, %d points: %s" % (os.path.basename(solution_checker), len(tests),
                                                 sum(t.points for t in tests), [t.name for t in tests]))
    phases.done("listed the tests through the grader")

    # 2. Graded with no GPU: every test skipped, none passed, exit 77.
    no_gpu = dict(env, CUDA_VISIBLE_DEVICES="")
    out = os.path.join(work, "grade")
    r = run([sys.executable, "grading/driver/grade.py", "--build-dir", "build", "--lab", number, "--out", out],
            copy, no_gpu, check=False)
    print("  " + "\n  ".join(r.stdout.splitlines()[-8:]))
    if r.returncode != EXIT_NO_DEVICE:
        fail("grade.py --lab %s without a GPU exited %d, not %d:\n%s" % (number, r.returncode, EXIT_NO_DEVICE, r.stdout))
    cases = ET.parse(os.path.join(out, "junit.xml")).getroot().iter("testcase")
    cases = list(cases)
    why = {c.find("skipped").get("message", "") for c in cases if c.find("skipped") is not None}
    if not why or not all(re.search(r"device|GPU|driver", w, re.I) for w in why):
        fail("junit.xml's tests are not skipped for want of a GPU: %s" % why)
    statuses = {c.get("name"): ("skipped" if c.find("skipped") is not None else
                                "failed" if c.find("failure") is not None or c.find("error") is not None
                                else "passed") for c in cases}
    if sorted(statuses) != sorted(written) or set(statuses.values()) != {"skipped"}:
        fail("junit.xml without a GPU: %s; every one of %s must be skipped" % (statuses, written))
    with open(os.path.join(out, "results.json")) as f:
        results = json.load(f)
    if results.get("score", 0) != 0 or not all(t["output"].startswith("not run (skipped)") for t in results["tests"]):
        fail("results.json without a GPU must score 0 with every test not run: %s" % results)
    phases.done("grade.py --lab %s without a GPU: exit 77, %d tests skipped" % (number, len(statuses)))

    # 3. The walkthrough's table, as the page had it filled.
    run([sys.executable, "docs/checker_tables.py", "--build-dir", "build", "--check", "--lab", lab], copy, env)

    # 4. The skeleton's line.
    with open(os.path.join(copy, "labs.json")) as f:
        entry = [e for e in json.load(f)["labs"] if e["id"] == lab][0]
    name = "%s/%s" % (entry["dir"], entry["source"])
    if not handed_out(os.path.join(copy, "labs", name), name):
        fail("labs/skeletons.sha256 does not list labs/%s as handed out" % name)
    with open(os.path.join(copy, "labs.json")) as f:
        every = sorted("%s/%s" % (e["dir"], e["source"]) for e in json.load(f)["labs"])
    if sorted(skeleton_hashes()) != every:
        fail("labs/skeletons.sha256 lists %s, labs.json %s" % (sorted(skeleton_hashes()), every))

    # 5. The walkthrough through the book's filter: snippet markers and links lead somewhere.
    readme = os.path.join("labs", entry["dir"], "README.md")
    problems = subprocess.run([sys.executable, "docs/md_filter.py", readme], cwd=copy, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True).stderr
    if problems.strip():
        fail("docs/md_filter.py on %s:\n%s" % (readme, problems))
    with open(os.path.join(copy, readme), encoding="utf-8") as f:
        snippets = re.findall(r"^<!--\s*snippet:\s*(\S+)\s+(.+?)\s*-->\s*$", f.read(), re.M)
    if not snippets:
        fail("%s shows no snippet of the lab's file" % readme)
    for path, region in snippets:
        with open(os.path.join(copy, path), encoding="utf-8") as f:
            pairs = f.read().count("//! [%s]" % region)
        if pairs != 2:
            fail("%s: the region %r of %s has %d markers, not a pair" % (readme, region, path, pairs))
    phases.done("checker_tables.py --check, skeletons.sha256, md_filter.py and snippets")

    # 6. The ctest tests of the lab.
    r = run(["ctest", "--test-dir", "build", "-N", "-R", lab], copy, env)
    listed = sorted(re.findall(r"Test\s+#\d+:\s+(\S+)", r.stdout))
    if ctest_names is None or listed != ctest_names:
        fail("ctest lists %s for %s; the page's ctest block says %s" % (listed, lab, ctest_names))
    phases.done("ctest -N lists the page's %d tests" % len(listed))

    print("docs/adding_a_lab.md followed: lab %s added, built, listed and skipped without a GPU (%.0f s)"
          % (lab, time.monotonic() - phases.started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
