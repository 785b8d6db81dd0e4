#!/usr/bin/env python3
"""Plants every fault a student can hand in into a copy of solutions/ and grades it.

Each fault must cost only the tests it touches, with the message that says what happened; every
other test of the tree must still pass. Needs a GPU (exit 77 without one, like the checkers).
Prints how long the whole grade run over the faulty tree took.

Usage: test_faulty_tree.py --build-dir BUILD
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import support  # gpu_build_dir

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# (lab folder, file, text in the solution, replacement, {test name: message regex}).
# A test not named here must pass.
FAULTS = [
    ("01_vector_add", "vector_add.cu",
     "    if (i < n) c[i] = a[i] + b[i];\n",
     "    const volatile float* flag = a;\n"
     "    while (n == 1000 && flag[0] == flag[0]) {\n    }  // a kernel that loops forever\n"
     "    if (i < n) c[i] = a[i] + b[i];\n",
     {"kernel: n = 1000": "timed out",
      "compute-sanitizer memcheck: small sizes": "timed out"}),
    ("01_vector_add", "vector_add.cu",
     "    const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);\n",
     "    if (n == 1) std::exit(0);  // exit(0) in the middle of a run\n"
     "    const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);\n",
     {"round trip from host: n = 1": "exited with status 0"}),
    ("02_naive_transpose", "transpose.cu",
     "    const int col = blockIdx.x * TILE + threadIdx.x;\n",
     "    if (rows == 33) __trap();  // a kernel that traps\n"
     "    const int col = blockIdx.x * TILE + threadIdx.x;\n",
     {"33 x 31": "launch failure|sticky|trap|unspecified",
      "compute-sanitizer memcheck: small sizes": "."}),
    ("03_shared_transpose", "transpose.cu",
     "    launch_transpose_shared<0>(in, out, rows, cols);\n",
     "    if (rows == 33) *(volatile int*)nullptr = 0;  // a host-side segfault\n"
     "    launch_transpose_shared<0>(in, out, rows, cols);\n",
     {"step 1 (unpadded): 33 x 31": "SIGSEGV|crashed|died",
      "compute-sanitizer memcheck: small sizes": ".",      # both probes run the unpadded kernel
      "compute-sanitizer synccheck: small sizes": "."}),
    ("04_naive_matmul", "matmul.cu",
     "    const int blocks = (m * n + THREADS_1D - 1) / THREADS_1D;\n",
     "    static int calls = 0;\n"
     "    if (++calls > 1) return;  // output right only on the first run\n"
     "    const int blocks = (m * n + THREADS_1D - 1) / THREADS_1D;\n",
     {"optional, 1-D blocks: 17 x 33 x 65": "launched no kernel|never written|Nothing was written",
      "optional, 1-D blocks: 1024 x 777 x 1023": "launched no kernel|never written|Nothing was written"}),
    ("05_tiled_matmul", "matmul.cu",
     "constexpr int TILE = 16;\n",
     "constexpr int TILE = 16;\nthis line does not compile;\n",
     None),  # a compile error: every test of 05_tiled_matmul fails, none elsewhere
    ("05_tiled_matmul", "register_blocking.cu",
     "void launch_matmul_register_blocked(",
     "void not_the_function_the_checker_calls(",
     "missing"),  # a missing function: every test of 05_register_blocking fails saying so
    ("06_thread_sweep", "sweep.cu",
     "    const double bytes = 3.0 * n * sizeof(float);\n",
     "    throw std::runtime_error(\"an exception nobody catches\");\n"
     "    const double bytes = 3.0 * n * sizeof(float);\n",
     {"the sweep produces every point": "an exception nobody catches",
      "the sweep report: table and CSV beside the CPU": "an exception nobody catches",
      "the sweep plot: PNG and SVG drawn by matplotlib": "nothing to plot"}),
    ("06_thread_sweep", "sweep.cu",
     "    CUDA_CHECK(cudaOccupancyMaxPotentialBlockSize(",
     "    std::abort();  // a host-side abort\n    CUDA_CHECK(cudaOccupancyMaxPotentialBlockSize(",
     {"occupancy: what the runtime predicts": "SIGABRT|died|crashed",
      "the sweep report: table and CSV beside the CPU": "."}),
]


def plant(tree):
    for folder, name, old, new, _ in FAULTS:
        path = os.path.join(tree, folder, name)
        with open(path) as f:
            text = f.read()
        if text.count(old) != 1:
            sys.exit("cannot plant a fault in %s: the solution changed (%r)" % (path, old))
        with open(path, "w") as f:
            f.write(text.replace(old, new))


def expectations():
    """{lab id: {test: regex}} for faults in single tests, and {lab id: regex} for whole labs."""
    per_test, whole_lab = {}, {"05_tiled_matmul": "does not compile", "05_register_blocking": "is missing"}
    for folder, _, _, _, expect in FAULTS:
        if isinstance(expect, dict):
            per_test.setdefault(folder, {}).update(expect)
    return per_test, whole_lab


def main():
    # Without a GPU nothing would be graded: skip before building a whole tree for nothing.
    build_dir = support.gpu_build_dir()
    if build_dir is None:
        return support.SKIP
    with tempfile.TemporaryDirectory() as tmp:
        tree = os.path.join(tmp, "faulty")
        shutil.copytree(os.path.join(SOURCE_DIR, "solutions"), tree)
        plant(tree)
        out = os.path.join(build_dir, "grade", "faulty_tree")
        started = time.monotonic()
        r = subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "grading", "driver", "grade.py"),
                            "--build-dir", build_dir, "--submission", tree, "--out", out])
        seconds = time.monotonic() - started
        if r.returncode == 77:
            print("no GPU: skipped")
            return 77
        with open(os.path.join(out, "results.json")) as f:
            results = json.load(f)
    per_test, whole_lab = expectations()
    problems, faulted = [], 0
    for test in results["tests"]:
        lab_id = next((lab for lab in list(per_test) + list(whole_lab) + [""]
                       if test["name"].startswith("lab %s " % lab[:2])
                       and lab_title(lab) in test["name"]), "")
        name = test["name"].split(": ", 1)[1] if ": " in test["name"] else test["name"]
        expect = whole_lab.get(lab_id) or per_test.get(lab_id, {}).get(name)
        failed = test["status"] == "failed"
        if expect:
            faulted += 1
            if not failed:
                problems.append("%s passed, but a planted fault should fail it" % test["name"])
            elif not re.search(expect, test["output"]):
                problems.append("%s failed without saying /%s/:\n%s" % (test["name"], expect, test["output"][:600]))
        elif failed:
            problems.append("%s failed, but no fault touches it:\n%s" % (test["name"], test["output"][:600]))
    print("\nthe faulty tree was graded in %.0f s; %d tests hit by faults, %d others"
          % (seconds, faulted, len(results["tests"]) - faulted))
    if problems:
        print("FAULTS COST MORE (OR LESS) THAN THEY SHOULD:\n  " + "\n  ".join(problems))
        return 1
    print("every fault cost only the tests it touches, each with its message")
    return 0


def lab_title(lab_id):
    return lab_id.partition("_")[2].replace("_", " ")


if __name__ == "__main__":
    sys.exit(main())
