#!/usr/bin/env python3
"""The same grade on both sides (issue 40, item 4): a student's copy of the handout, graded where
the student has it (`make grade` in a clone of `make handout`'s repository, against the compiled
reference), earns exactly what the same files earn in the instructor's workbook (`make grade
SUBMISSION=<the clone's labs/>`, against the reference's source), test by test.

The student's files are the skeletons, with lab 01's and lab 03's solutions in place and lab 02's
buggy variant xy_swapped_in_write: labs that earn full marks, one that fails some tests, and labs
not started. Both grades use the same seed. The handout's reference objects are built for this
machine's GPU only (make handout's own test covers every architecture).

Needs a GPU: exits 77, saying "skipped", without one, like the other gpu.* tests.

Usage: test_same_grade.py --build-dir BUILD [--keep]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIP = 77
SEED = "20261126"
# (lab folder, file, where the student's version comes from)
STUDENT_FILES = [
    ("01_vector_add", "vector_add.cu", "solution"),
    ("03_shared_transpose", "transpose.cu", "solution"),
    ("02_naive_transpose", "transpose.cu", "tests/buggy/02_naive_transpose/xy_swapped_in_write.patch"),
]


sys.path.insert(0, os.path.join(ROOT, "grading", "driver"))
import device  # noqa: E402  (the grader's own view of the GPU)


def gpu_missing(build_dir):
    """Why no grade can run here ("" when a GPU is usable)."""
    if not device.nvidia_smi_gpus():
        return "no GPU (nvidia-smi lists none)"
    facts = device.probe_device(build_dir, no_build=False)
    return "" if facts.get("ok") else facts.get("message", "no usable GPU")


def run(command, log):
    """Runs a command, its output appended to `log`; returns its exit status."""
    with open(log, "a") as out:
        out.write("$ %s\n" % " ".join(command))
        out.flush()
        return subprocess.run(command, stdout=out, stderr=subprocess.STDOUT).returncode


def scores(results_json):
    """Each test's name and score, from a results.json (Gradescope's format)."""
    with open(results_json) as f:
        return {test["name"]: test.get("score", 0) for test in json.load(f)["tests"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", required=True, help="the instructor's build folder")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder, and say where")
    args = parser.parse_args()
    build_dir = os.path.abspath(args.build_dir)
    why = gpu_missing(build_dir)
    if why:
        print("skipped: %s" % why)
        return SKIP

    tmp = tempfile.mkdtemp(prefix="workbook-same-grade-")
    log = os.path.join(tmp, "log.txt")
    try:
        handout, clone = os.path.join(tmp, "handout"), os.path.join(tmp, "clone")
        if run(["make", "-C", ROOT, "handout", "OUT=" + handout, "BUILD=" + build_dir,
                "HANDOUT_ARCHITECTURES=" + device.cmake_architectures()], log) != 0:
            print("FAILED: make handout (log: %s)" % log)
            return 1
        run(["git", "clone", "-q", handout, clone], log)
        # The student's work, in the clone.
        for lab, name, source in STUDENT_FILES:
            target = os.path.join(clone, "labs", lab, name)
            if source == "solution":
                shutil.copy(os.path.join(ROOT, "solutions", lab, name), target)
            else:
                run([sys.executable, os.path.join(ROOT, "grading", "buildtools", "apply_variant.py"),
                     "--patch", os.path.join(ROOT, source), "--solution", os.path.join(ROOT, "solutions", lab, name),
                     "--out", target], log)
        # Graded where the student has it, and in the instructor's workbook.
        run(["make", "-C", clone, "grade", "SEED=" + SEED], log)
        instructor_out = os.path.join(tmp, "instructor")
        run([sys.executable, os.path.join(ROOT, "grading", "driver", "grade.py"), "--build-dir", build_dir,
             "--submission", os.path.join(clone, "labs"), "--seed", SEED, "--out", instructor_out], log)
        paths = {"the student's copy": os.path.join(clone, "build", "grade", "results.json"),
                 "the instructor's workbook": os.path.join(instructor_out, "results.json")}
        for side, path in paths.items():
            if not os.path.exists(path):
                print("FAILED: the grade of %s wrote no results.json (log: %s)" % (side, log))
                args.keep = True
                return 1
        student, instructor = (scores(path) for path in paths.values())
        differ = sorted(name for name in set(student) | set(instructor) if student.get(name) != instructor.get(name))
        total = sum(student.values())
        if differ:
            for name in differ:
                print("  %s: %s in the student's copy, %s in the instructor's workbook"
                      % (name, student.get(name, "absent"), instructor.get(name, "absent")))
            print("FAILED: %d of %d tests scored differently (log: %s)" % (len(differ), len(student), log))
            args.keep = True
            return 1
        earned = sorted({name.split(":")[0] for name, score in student.items() if score > 0})
        # Full marks in labs 01 and 03, and lab 02 neither nothing nor everything: otherwise the
        # two sides could agree for want of anything to grade.
        for lab in ("lab 01", "lab 02", "lab 03"):
            if not any(name.startswith(lab) for name in earned):
                print("FAILED: %s earned nothing on either side (log: %s)" % (lab, log))
                args.keep = True
                return 1
        print("passed: the same %d tests, the same score on both sides (%g points, earned in %s)"
              % (len(student), total, ", ".join(earned)))
        return 0
    finally:
        if args.keep:
            print("kept: %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
