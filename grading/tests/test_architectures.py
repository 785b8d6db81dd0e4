#!/usr/bin/env python3
"""Every lab part's skeleton and solution compile for the oldest and the newest GPUs a student
may hold: sm_75 (a Colab T4) and sm_120 (a Blackwell card). Compile only: no GPU is needed.

A part built for one architecture alone (labs.json "architecture", e.g. 90a for wgmma and TMA)
is skipped here with its reason, as its checker skips its tests on any other GPU.

Usage: test_architectures.py --nvcc NVCC
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARCHITECTURES = ["75", "120"]


def compile_one(nvcc, source, architecture, out_dir):
    """Compiles `source` for sm_<architecture>; returns (ok, what nvcc said)."""
    name = "%s_%s_sm%s.o" % (os.path.basename(os.path.dirname(os.path.dirname(source))),
                             os.path.basename(source).replace(".", "_"), architecture)
    command = [nvcc, "-std=c++17", "-c", "-arch=sm_" + architecture, "-I" + SOURCE_DIR, source,
               "-o", os.path.join(out_dir, name)]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return done.returncode == 0, done.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nvcc", required=True)
    args = parser.parse_args()
    with open(os.path.join(SOURCE_DIR, "labs.json")) as f:
        parts = json.load(f)["labs"]

    jobs = []
    for part in parts:
        if part.get("architecture"):
            print("skipped: %s is built for sm_%s only (its checker skips on other GPUs)"
                  % (part["id"], part["architecture"]))
            continue
        for tree in ("labs", "solutions"):
            source = os.path.join(SOURCE_DIR, tree, part["dir"], part["source"])
            for architecture in ARCHITECTURES:
                jobs.append((source, architecture))

    failed = []
    with tempfile.TemporaryDirectory() as out_dir:
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            results = pool.map(lambda job: (job, compile_one(args.nvcc, job[0], job[1], out_dir)), jobs)
            for (source, architecture), (ok, said) in results:
                where = os.path.relpath(source, SOURCE_DIR)
                print("%s %s for sm_%s" % ("ok:    " if ok else "FAILED:", where, architecture))
                if not ok:
                    failed.append(where)
                    print("  " + said.strip().replace("\n", "\n  "))
    if failed:
        sys.exit("%d of %d compiles failed" % (len(failed), len(jobs)))
    print("all %d compiles passed (sm_%s)" % (len(jobs), " and sm_".join(ARCHITECTURES)))


if __name__ == "__main__":
    main()
