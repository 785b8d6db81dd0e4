#!/usr/bin/env python3
"""Reads the symbols of a student's compiled file, at build time, before its checker is linked.

Three jobs, all on `nm`'s listing of the object:
  1. A lab is graded on the kernels the student writes. An object that references cuBLAS, cuDNN
     or CUTLASS (defined or undefined symbols) fails the build here, with a message that says why,
     so that no library can stand in for the student's kernel.
  2. Nor can the reference solution linked beside it: a file that uses any name that
     reference_object.py gave the reference's own symbols, such as reference::launch_matmul_tiled,
     fails here too.
  3. It writes the names the file defines, one per line, to OUT (`<checker>.kernels`). At run
     time the judge (common/judge.hpp) checks that every kernel CUPTI sees a graded call launch
     is among them: a kernel from a library (loaded by dlopen, say) is not.
     Kernels that Thrust or CUB instantiate inside the file are library code and left out.
"""
import argparse
import re
import subprocess
import sys

FORBIDDEN = [("cuBLAS", re.compile(r"cublas", re.I)),
             ("cuDNN", re.compile(r"cudnn", re.I)),
             ("CUTLASS", re.compile(r"cutlass|N4cute", re.I))]
LIBRARY_TEMPLATES = re.compile(r"N6thrust|N3cub|N4cuda3std")


def symbols(obj, *flags):
    r = subprocess.run(["nm", "--format=posix", *flags, obj], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("student_symbols.py: nm could not read %s:\n%s" % (obj, r.stderr))
    return [line.split()[0] for line in r.stdout.splitlines() if line.split()]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--source", required=True, help="the student's file, for the message")
    p.add_argument("--out", required=True)
    p.add_argument("--reference", nargs="*", default=[], help="the reference objects linked beside it")
    p.add_argument("objects", nargs="+")
    a = p.parse_args()
    defined, referenced = set(), set()
    for obj in a.objects:
        defined.update(symbols(obj, "--defined-only"))
        referenced.update(symbols(obj, "--undefined-only"))
    of_reference = set()  # the names reference_object.py gave the reference's own symbols
    for obj in a.reference:
        with open(obj + ".renames") as f:
            of_reference.update(line.split()[1] for line in f if line.strip())
    called = sorted(referenced & of_reference)
    if called:
        shown = subprocess.run(["c++filt", *called[:3]], stdout=subprocess.PIPE, text=True).stdout.split("\n")
        print("%s: error: this file calls the reference solution (%s%s). A lab is graded on the code "
              "you write yourself: remove the call and write the kernel the lab asks for."
              % (a.source, ", ".join(s for s in shown if s), ", ..." if len(called) > 3 else ""))
        return 1
    for library, pattern in FORBIDDEN:
        used = sorted(s for s in defined | referenced if pattern.search(s))
        if used:
            print("%s: error: this file uses %s (%s%s). A lab is graded on the kernels you write "
                  "yourself: remove every %s call and #include, and write the kernel the lab asks for."
                  % (a.source, library, ", ".join(used[:3]), ", ..." if len(used) > 3 else "", library))
            return 1
    with open(a.out, "w") as f:
        for name in sorted(defined):
            if not LIBRARY_TEMPLATES.search(name):
                f.write(name + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
