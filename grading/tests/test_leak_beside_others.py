#!/usr/bin/env python3
"""Lab 01's leak test while another process allocates and frees device memory on the same GPU.

"round trip from host: frees what it allocates" once read the GPU's free memory (cudaMemGetInfo)
before and after the calls, so another process on the GPU (a tool run of another lab, another
student's grading) cost a correct solution its point: "left 162.667 MiB of device memory
allocated". It now reads NVML's figure for the processes that run the student's code. Beside
device_churn (hundreds of MiB allocated and freed in a loop) the solution must keep the point,
and the variant leaks_device_memory must still lose it, both by NVML's figure.

Needs a GPU (exit 77 without one), and the checkers of lab 01's solution and of that variant
built. Exit 77 too where NVML gives no figure for the runner's processes (no NVML, or a PID
namespace it does not see into): the test then falls back to the GPU's free memory, which no
test beside another process can hold to.

Usage: test_leak_beside_others.py --build-dir BUILD --churn DEVICE_CHURN
"""
import argparse
import json
import os
import re
import subprocess
import sys
import threading

import support  # usable_gpu

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TEST = "round trip from host: frees what it allocates"
OWN_FIGURE = "NVML's figure for the process that runs your code"
NO_FIGURE = "was not available"


def graded(build_dir, which, name):
    """Grades lab 01's leak test alone (--solutions, or --variant NAME) in a grade.py of its own
    (whose end ends every process below it: device_churn must not be one): the test's entry in
    results.json, or what kept it from running."""
    out = os.path.join(build_dir, "grade", "leak_beside_others", name)
    r = subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "grading", "driver", "grade.py"), "--build-dir", build_dir,
                        "--lab", "01", "--no-build", "--test", TEST, "--out", out] + which)
    if r.returncode == 77:
        return "no usable GPU"
    try:
        with open(os.path.join(out, "results.json")) as f:
            tests = json.load(f)["tests"]
    except (OSError, ValueError, KeyError) as e:
        return "%s was not graded: %s" % (name, e)
    found = [t for t in tests if t["name"].endswith(": " + TEST)]
    return found[0] if found else "%s did not run %r: %s" % (name, TEST, tests)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build-dir", required=True)
    p.add_argument("--churn", required=True, help="the device_churn program")
    a = p.parse_args()
    build_dir = os.path.abspath(a.build_dir)
    if not support.usable_gpu(build_dir):
        return support.SKIP

    churn = subprocess.Popen([a.churn, "--seconds", "400"], stdout=subprocess.PIPE, text=True)
    first = churn.stdout.readline().strip()
    if first != "ready":
        churn.wait()
        print("device_churn did not start: %r (exit status %s)" % (first, churn.returncode))
        return 77 if churn.returncode == 77 else 1
    last = []
    reader = threading.Thread(target=lambda: last.extend(churn.stdout.read().split()))
    reader.start()
    try:
        solution = graded(build_dir, ["--solutions"], "solution")
        variant = graded(build_dir, ["--variant", "leaks_device_memory"], "leaks_device_memory")
    finally:
        churn.terminate()
        churn.wait()
        reader.join()
    cycles = int(last[1]) if len(last) >= 2 and last[0] == "cycles" else 0
    print("\ndevice_churn allocated and freed %d blocks of 128 to 640 MiB meanwhile" % cycles)
    for test in (solution, variant):
        if isinstance(test, str):
            print(test)
            return 77 if test == "no usable GPU" else 1
    for test in (solution, variant):
        if test["output"].startswith("not run (skipped)") or NO_FIGURE in test["output"]:
            print("skipped: NVML gave no figure for the runner's processes here, and the GPU's free "
                  "memory moves with every other process:\n" + test["output"])
            return 77
    problems = []
    if cycles == 0:
        problems.append("device_churn made no allocation while the tests ran")
    if solution["status"] != "passed":
        problems.append("the solution lost %r beside another process:\n%s" % (TEST, solution["output"]))
    elif OWN_FIGURE not in solution["output"]:
        problems.append("the solution passed, but not by NVML's figure:\n%s" % solution["output"])
    if variant["status"] != "failed":
        problems.append("leaks_device_memory kept %r beside another process:\n%s" % (TEST, variant["output"]))
    elif not re.search("cudaFree every array you cudaMalloc", variant["output"]) or OWN_FIGURE not in variant["output"]:
        problems.append("leaks_device_memory failed without naming the leak by NVML's figure:\n%s" % variant["output"])
    for name, test in (("solution", solution), ("leaks_device_memory", variant)):
        print("%s: %s\n  %s" % (name, test["status"], test["output"].strip().replace("\n", "\n  ")))
    if problems:
        print("LEAK TEST WRONG BESIDE ANOTHER PROCESS:\n  " + "\n  ".join(problems))
        return 1
    print("beside another process, the leak test kept the solution's point and took the leak's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
