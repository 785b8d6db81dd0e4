#!/usr/bin/env python3
"""The runner's sandbox where a machine gives less than this one: each fallback forced, and the
sandbox's own tests (unit_sandbox, test_sandbox.cpp) run under it.

    test_sandbox_fallbacks.py --unit-sandbox build/bin/unit_sandbox --without bubblewrap
    test_sandbox_fallbacks.py --unit-sandbox build/bin/unit_sandbox --without namespaces

The sandbox (grading/judge/sandbox.cpp, find_sandbox) takes what the machine has: bubblewrap,
else util-linux's unshare, else no namespace at all, where the checker reaps what the runner
leaves. It finds its tools on PATH, so a PATH of this machine's programs less some forces each
fallback without touching the grader:

  bubblewrap   bwrap is not installed: the sandbox falls back to unshare
  namespaces   bwrap and unshare fail as they do where user namespaces are off (a container
               without them, a kernel that forbids them): no PID namespace, the checker reaps

Each must pass unit_sandbox's tests and name, among what it could not give, the piece that is
missing: the log of every checker says the same.
"""
import argparse
import os
import subprocess
import sys
import tempfile

# What bwrap and unshare say where user namespaces are off; each then exits 1.
REFUSALS = {
    "bwrap": "bwrap: No permissions to creating new namespace, likely because the kernel does not allow "
             "non-privileged user namespaces.",
    "unshare": "unshare: unshare failed: Operation not permitted",
}


def programs_without(folder, left_out, refusing):
    """Fills `folder` with links to every program on PATH (the first of each name) but those in
    `left_out`, and with a script that refuses for each of `refusing`."""
    for directory in os.environ.get("PATH", "/usr/bin:/bin").split(":"):
        if not os.path.isdir(directory):
            continue
        for name in os.listdir(directory):
            path = os.path.join(directory, name)
            link = os.path.join(folder, name)
            if name in left_out or name in refusing or os.path.lexists(link):
                continue
            if os.path.isfile(path) and os.access(path, os.X_OK):
                os.symlink(path, link)
    for name in refusing:
        script = os.path.join(folder, name)
        with open(script, "w") as f:
            f.write("#!/bin/sh\necho '%s' >&2\nexit 1\n" % REFUSALS[name])
        os.chmod(script, 0o755)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--unit-sandbox", required=True, help="the unit_sandbox program")
    p.add_argument("--without", required=True, choices=["bubblewrap", "namespaces"])
    a = p.parse_args()
    if a.without == "bubblewrap":
        left_out, refusing = {"bwrap"}, []
        expected = ["not here: bubblewrap (bwrap) is not installed"]
    else:
        left_out, refusing = set(), ["bwrap", "unshare"]
        expected = ["not here: bubblewrap (", "could not start /bin/true", "not here: no PID namespace"]
    with tempfile.TemporaryDirectory() as folder:
        programs_without(folder, left_out, refusing)
        env = dict(os.environ, PATH=folder)
        env.pop("WORKBOOK_SANDBOX", None)
        # --success: the first test's MESSAGEs (the sandbox's description and what it lacks) are shown.
        r = subprocess.run([os.path.abspath(a.unit_sandbox), "--success",
                            "--test-case=the sandbox says what holds*"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        described = r.stdout
        r_all = subprocess.run([os.path.abspath(a.unit_sandbox)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    said = [line.strip() for line in described.splitlines() if "runner sandbox here:" in line or "not here:" in line]
    print("without %s, the sandbox says:\n  %s" % (a.without, "\n  ".join(said)))
    problems = []
    for words in expected:
        if words not in described:
            problems.append("nothing says %r" % words)
    if r.returncode != 0:
        problems.append("the sandbox's description test failed:\n" + described)
    if r_all.returncode != 0:
        problems.append("unit_sandbox's tests failed without %s:\n%s" % (a.without, r_all.stdout[-4000:]))
    if problems:
        print("SANDBOX FALLBACK WRONG:\n  " + "\n  ".join(problems))
        return 1
    print("unit_sandbox's tests pass without %s" % a.without)
    return 0


if __name__ == "__main__":
    sys.exit(main())
