#!/usr/bin/env python3
"""Builds a buggy variant from its patch: the reference solution with a few lines changed.

A variant is kept under tests/buggy/NN_name/ as a unified diff against its solution, headed by
the lines that say which test must reject it (see expect_rejected.py). At build time this
script applies it with GNU patch, writing the variant's source into the build folder, beside a
copy of each file of the solution's folder that the solution includes by a quoted name (step 6
of lab 05 includes step 5's persistent.cu), so that the variant compiles as the solution does. A
patch that no longer applies (the solution changed under it) fails the build and names the patch.
Where GNU patch is missing, a plain applier below does the same for our own exact patches.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys


def apply_plain(solution_lines, patch_text):
    """Applies a unified diff whose context matches exactly; returns the new lines or None."""
    out, position = [], 0
    lines = patch_text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        m = re.match(r"@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@", lines[i])
        i += 1
        if not m:
            continue
        start = int(m.group(1)) - 1
        out.extend(solution_lines[position:start])
        position = start
        while i < len(lines) and not lines[i].startswith("@@"):
            line = lines[i]
            tag, body = line[:1], line[1:]
            if line.startswith("\\"):
                pass
            elif tag == " " or tag == "-":
                if position >= len(solution_lines) or solution_lines[position].rstrip("\n") != body.rstrip("\n"):
                    return None
                if tag == " ":
                    out.append(solution_lines[position])
                position += 1
            elif tag == "+":
                out.append(body if body.endswith("\n") else body + "\n")
            elif line.startswith("--- ") or line.startswith("+++ "):
                break
            i += 1
    out.extend(solution_lines[position:])
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--patch", required=True)
    p.add_argument("--solution", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    if shutil.which("patch"):
        r = subprocess.run(["patch", "--quiet", "--force", "--reject-file=-", "-o", a.out, a.solution, a.patch],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        ok, detail = r.returncode == 0, r.stdout
    else:
        with open(a.solution) as f:
            solution = f.readlines()
        with open(a.patch) as f:
            result = apply_plain(solution, f.read())
        ok, detail = result is not None, "a hunk's context does not match"
        if ok:
            with open(a.out, "w") as f:
                f.writelines(result)
    if not ok:
        if os.path.exists(a.out):
            os.remove(a.out)
        print("%s: error: this buggy variant no longer applies to %s; the solution changed under it. "
              "Remake the patch (diff -u solution variant) and keep its expect- lines.\n%s"
              % (a.patch, a.solution, detail))
        return 1
    copy_included_siblings(a.solution, os.path.dirname(a.out))
    return 0


def copy_included_siblings(solution, folder):
    """Copies into `folder` each file beside `solution` that it includes as #include "name"."""
    here = os.path.dirname(os.path.abspath(solution))
    with open(solution) as f:
        names = re.findall(r'^\s*#\s*include\s*"([^"/]+)"', f.read(), re.MULTILINE)
    for name in names:
        if os.path.isfile(os.path.join(here, name)):
            shutil.copyfile(os.path.join(here, name), os.path.join(folder, name))


if __name__ == "__main__":
    sys.exit(main())
