"""Building the checkers: configuring a build folder (the workbook's own, or a submission's that
compiles only the student's files), building one target or every lab's checkers in one parallel
build, and the part of a compiler's output that a student needs to see.

A lab's checker is the target check_<lab> (the tree being graded), check_<lab>_solution (the
reference solution: the trusted list of tests and points) or check_<lab>__<variant> (a buggy
variant under tests/buggy/).
"""
import contextlib
import json
import os
import re
import subprocess
import sys
import time

from results import Lab

# The workbook's source tree: the build folders are configured from it.
SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_quiet(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace", **kw)


def configure(build_dir, extra_args=()):
    # The workbook's build folder writes prebuilt.cmake, which submissions' builds link from;
    # one that an older workbook configured lacks it, and is configured again.
    if (os.path.exists(os.path.join(build_dir, "CMakeCache.txt")) and not extra_args
            and os.path.exists(os.path.join(build_dir, "prebuilt.cmake"))):
        return
    r = run_quiet(["cmake", "-S", SOURCE_DIR, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                   *extra_args])
    if r.returncode != 0:
        if extra_args:  # a submission's folder: the next run must configure it again, not trust it
            with contextlib.suppress(OSError):
                os.remove(os.path.join(build_dir, "CMakeCache.txt"))
        sys.exit("cmake could not configure %s:\n%s" % (build_dir, r.stdout))


def build(build_dir, target):
    """Builds one target; returns (ok, compiler output)."""
    r = run_quiet(["cmake", "--build", build_dir, "--target", target, "--parallel"])
    return r.returncode == 0, r.stdout


def build_checkers_command(build_dir, labs, suffix="", jobs=None):
    """The command that builds these labs' checkers (check_<lab><suffix>) in one build, side by
    side on `jobs` CPUs (default: those this process may use), going on past a lab that does not
    compile. The Makefile generator builds the targets named on one command line one after
    another, so every lab's checkers are built through the one target that depends on them all,
    check_all or check_all_solution."""
    with open(os.path.join(build_dir, "workbook.json")) as f:
        every_lab = sorted(entry["id"] for entry in json.load(f)["labs"])
    if suffix in ("", "_solution") and sorted(lab.id for lab in labs) == every_lab:
        targets = ["check_all" + suffix]
    else:
        targets = [checker_target(lab, suffix) for lab in labs]
    jobs = jobs or len(os.sched_getaffinity(0))
    keep_going = ["-k", "0"] if "Ninja" in cmake_cache_value(build_dir, "CMAKE_GENERATOR") else ["-k"]
    return ["cmake", "--build", build_dir, "--parallel", str(jobs), "--target", *targets, "--", *keep_going]


def build_references(trusted_build_dir):
    """Builds every lab's reference checker in the workbook's own build folder: a submission's
    folder links their objects (prebuilt.cmake), and CMake cannot configure it before they exist
    (on a fresh machine, `make grade SUBMISSION=...` comes before any other build)."""
    with open(os.path.join(trusted_build_dir, "workbook.json")) as f:
        every_lab = [Lab(entry["id"], entry["source"], entry.get("dir")) for entry in json.load(f)["labs"]]
    started = time.monotonic()
    print("building the reference checkers first...", end=" ", flush=True)
    r = run_quiet(build_checkers_command(trusted_build_dir, every_lab, "_solution"))
    if r.returncode != 0:
        sys.exit("\nthe reference checkers do not build:\n" + compiler_errors(r.stdout))
    print("done (%.0f s)" % (time.monotonic() - started), flush=True)


def checker_target(lab, suffix):
    """A lab's checker: check_NN_name, then _solution (the reference) or __variant (a buggy
    variant) when one of those is built."""
    return "check_%s%s" % (lab.id, suffix)


def build_up_front(build_dir, trusted_build_dir, labs, suffix):
    """Builds the reference checkers and then the graded ones, each set in one parallel build.
    Returns whether everything built: if not, grade_lab builds each lab again, and a lab that
    does not compile gets its own errors."""
    started = time.monotonic()
    first = not all(os.path.exists(os.path.join(d, "bin", checker_target(lab, s)))
                    for lab in labs for d, s in ((trusted_build_dir, "_solution"), (build_dir, suffix)))
    print("building the checkers%s..." % (" (the first time: a few minutes)" if first else ""), end=" ", flush=True)
    ok = run_quiet(build_checkers_command(trusted_build_dir, labs, "_solution")).returncode == 0
    if (build_dir, suffix) != (trusted_build_dir, "_solution"):
        ok = run_quiet(build_checkers_command(build_dir, labs, suffix)).returncode == 0 and ok
    print("%s (%.0f s)" % ("done" if ok else "not all of them build: each lab is built again below",
                           time.monotonic() - started), flush=True)
    return ok


def compiler_errors(output, limit=40):
    """The part of a build log a student needs: the error lines and what follows each."""
    lines = output.splitlines()
    keep = [i for i, line in enumerate(lines) if re.search(r"\berror\b|undefined reference", line)]
    if not keep:
        return "\n".join(lines[-limit:])
    shown = []
    for i in keep:
        for j in range(i, min(i + 3, len(lines))):
            if j not in shown:
                shown.append(j)
    return "\n".join(lines[j] for j in shown[:limit])


def submission_options(trusted_build_dir, submission):
    """CMake's options for a submission's build folder: the student's labs, grading only, the
    trusted build's GPU architectures, and its libraries, checker objects and references
    (WORKBOOK_PREBUILT), so that only the student's own files are compiled."""
    return ["-DCMAKE_BUILD_TYPE=Release", "-DWORKBOOK_LABS_DIR=" + submission, "-DWORKBOOK_GRADE_ONLY=ON",
            "-DCMAKE_CUDA_ARCHITECTURES=" + cmake_cache_value(trusted_build_dir, "CMAKE_CUDA_ARCHITECTURES"),
            "-DWORKBOOK_PREBUILT=" + trusted_build_dir]


def labs_dir_of(build_dir):
    """The copy of labs/ a build folder builds its check_NN targets from."""
    return cmake_cache_value(build_dir, "WORKBOOK_LABS_DIR") or os.path.join(SOURCE_DIR, "labs")


def cmake_cache_value(build_dir, key):
    """A value from a build folder's CMake cache, or "" when it has none."""
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return ""
