#!/usr/bin/env python3
"""Reads what a student's compiled file was made from and what it holds, at build time, before its
checker is linked.

First, the files its compilation read (the compiler's dependency file, <object>.d): a file may
include the files of the tree being graded (its own lab folder and the others beside it), the
workbook's common/ headers, and the system's and the toolkit's. Any other file of the workbook or
of its build folders fails the build: the reference solutions above all (solutions/, the buggy
variants made from them, make bench's development versions), which would otherwise compile as
the student's own code. A symbolic link counts as the file it leads to.

Then three jobs, all on `nm`'s listing of the object:
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
import os
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


def read_depfile(path):
    """The files a Make-style dependency file lists (`target: dep dep ...`), or None if there
    is none."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    text = text.replace("\\\n", " ")
    _, _, deps = text.partition(": ")
    words = re.split(r"(?<!\\)\s+", deps.strip())
    return [w.replace("\\ ", " ") for w in words if w]


def under(path, folder):
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def foreign_includes(source, objects, workbook, confined):
    """The files the objects' compilation read that lie in the workbook or one of its build
    folders (`confined`) but neither in the tree being graded (the folder above the source's lab
    folder) nor in the workbook's common/; and whether every object had a dependency file."""
    tree = os.path.dirname(os.path.dirname(os.path.abspath(source)))
    allowed = [os.path.realpath(os.path.join(workbook, "common"))]
    # The tree is its own unless it is a link from elsewhere into the workbook (a submission
    # folder that leads to solutions/, say): the workbook's own builds name its folders by its path.
    named_inside = any(under(tree, os.path.abspath(c)) for c in confined)
    real_confined = [os.path.realpath(c) for c in confined]
    if named_inside or not any(under(os.path.realpath(tree), c) for c in real_confined):
        allowed.append(os.path.realpath(tree))
    confined = real_confined
    found, complete = [], True
    for obj in objects:
        deps = read_depfile(obj + ".d")
        if deps is None:
            complete = False
            continue
        for dep in [source] + deps:
            real = os.path.realpath(dep)
            if any(under(real, c) for c in confined) and not any(under(real, a) for a in allowed):
                if real not in found:
                    found.append(real)
    return found, complete


def as_written(path, workbook):
    """A path as the student would write it: relative to the workbook when it lies in it."""
    workbook = os.path.realpath(workbook)
    return os.path.relpath(path, workbook) if under(path, workbook) else path


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--source", required=True, help="the student's file, for the message")
    p.add_argument("--out", required=True)
    p.add_argument("--reference", nargs="*", default=[], help="the reference objects linked beside it")
    p.add_argument("--workbook", help="the workbook's source folder: its files are not the student's to include")
    p.add_argument("--confined", nargs="*", default=[],
                   help="the build folders, whose files are not the student's to include either")
    p.add_argument("objects", nargs="+")
    a = p.parse_args()
    if a.workbook:
        found, _ = foreign_includes(a.source, a.objects, a.workbook, [a.workbook] + a.confined)
        if found and found[0] == os.path.realpath(a.source):
            print("%s: error: this file is a link to %s, which is not part of the tree being graded: a lab "
                  "is graded on a file of its own. Replace the link with your file."
                  % (a.source, as_written(found[0], a.workbook)))
            return 1
        if found:
            print("%s: error: this file includes %s%s, which %s not part of the tree being graded. A lab's "
                  "file may include the files of its own tree, the workbook's common/ headers and the "
                  "system's; the workbook's other files, its reference solutions above all, are not yours "
                  "to include: write the kernel the lab asks for."
                  % (a.source, ", ".join(as_written(f, a.workbook) for f in found[:3]),
                     ", ..." if len(found) > 3 else "", "is" if len(found) == 1 else "are"))
            return 1
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
