#!/usr/bin/env python3
"""docs/colab.ipynb, executed headless as Colab would run it: every cell in order, in a Jupyter
kernel (nbclient), with its HANDOUT_URL pointed at a local bare repository (a clone of a local
handout) instead of the student's repository on GitHub. The notebook then clones it, sets up
CUDA 13 (nothing to install where it is already there), runs a one-line kernel and `make check
LAB=01` on this machine's GPU. The skeleton as handed out must fail its tests: the notebook must
report make check's exit status 1. Between make check and the last cell, one cell of this test's
own (STUDENT_EDIT) plays the student: it edits labs/01_vector_add/vector_add.cu, and prints a
made-up token (FAKE_TOKEN, in the kernel's environment as the notebook's token cell would put
a real one) and an address holding it through the notebook's run(). The last cell must commit
that edit and push it: the bare repository's main must then hold the edit, one commit on top of
the handout's, and no output of the executed notebook may hold the token.

--stub-gpu (ctest docs.colab, no GPU needed): the same run where there is no GPU. One cell of
this test's own (GPU_STUBS), right after the notebook's first, wraps its run() so that the three
commands that need a GPU are not run: `nvidia-smi` prints a T4's header (CUDA Version 13.0),
`/tmp/cuda_probe` prints what the one-line kernel prints, and `make check LAB=...` prints a
not-started lab and make's "Error 1", exit status 2, as on a GPU. Every other command of every
cell runs as written (nvcc compiles the probe, git clones, commits and pushes). The handout is
then a plain copy of this tree (make handout needs a GPU's architecture here). The gpu.docs.colab
test runs the notebook with no stub.

The local handout, in this order:
  - the folder in the environment variable WORKBOOK_HANDOUT (a git repository, or a plain folder);
  - `make handout OUT=<tmp>` where the Makefile has that target and solutions/ is here (not in a
    handout itself), its reference objects built for this machine's GPU only;
  - otherwise a plain copy of this tree (its tracked and untracked files, as git lists them).
A plain folder is made a git repository of one commit, so that the notebook's `git clone` works.

Needs a GPU and nbclient with ipykernel (Debian: python3-nbclient python3-ipykernel); exits 77,
saying "skipped", without them, like the other gpu.* tests. The executed notebook is written to
<build>/docs/colab_executed.ipynb, outputs and all, to read when it fails.

Where nbclient cannot be installed (a machine with no network), --without-nbclient runs the same
code cells in order in one plain Python namespace instead of a Jupyter kernel.

Usage: test_colab.py --build-dir BUILD [--keep] [--without-nbclient] [--stub-gpu]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOK = os.path.join(ROOT, "docs", "colab.ipynb")
SKIP = 77
# The notebook's line that names the handout, which the test points at the local one.
HANDOUT_LINE = re.compile(r'^HANDOUT_URL = ".*"$', re.M)
# What the notebook's make check cell prints at its end.
CHECK_STATUS = re.compile(r"make check LAB=01: the grader exited with status (\d+)")
# The student's edit, and the made-up token that no saved output may hold.
EDITED = "labs/01_vector_add/vector_add.cu"
EDIT_LINE = "// edited in Colab (test_colab.py)"
FAKE_TOKEN = "github_pat_TESTCOLAB0123456789abcdef"
# Cells of this test's own, inserted into the notebook (each says so in its first line).
STUDENT_EDIT = """# test_colab.py: the student's edit, and a token that run() must mask (not part of the notebook)
with open(os.path.join(WORKBOOK_DIR, %r), "a") as f:
    f.write(%r + "\\n")
run("echo token $WORKBOOK_GIT_TOKEN in https://x-access-token:$WORKBOOK_GIT_TOKEN@github.com/a/b.git")
""" % (EDITED, EDIT_LINE)
GPU_STUBS = r"""# test_colab.py --stub-gpu: no GPU here. The commands that need one print what they print on a
# GPU, marked as stubs; every other command runs as written (not part of the notebook).
_run_as_written = run
_STUBS = [
    (r"nvidia-smi$", 0, "| NVIDIA-SMI 580.00   Driver Version: 580.00   CUDA Version: 13.0 |\n"
                        "|   0  Tesla T4 (stub: test_colab.py --stub-gpu, no GPU here)       |\n"),
    (r"/tmp/cuda_probe$", 0, "the GPU wrote 42: CUDA 13 programs run here (stub)\n"),
    (r"make check LAB=\w+$", 2, "Lab 01: vector add (stub: test_colab.py --stub-gpu, no GPU here)\n"
                                "  not started: vector_add.cu is as handed out (stub)\n"
                                "make: *** [Makefile:126: check] Error 1\n"),
]


def run(command, check=True):
    for pattern, status, output in _STUBS:
        if re.match(pattern, command):
            print("$ " + command + "    # stubbed: no GPU here\n" + output, end="", flush=True)
            if check and status != 0:
                raise RuntimeError("this command failed (exit status %d): %s" % (status, command))
            return status, output
    return _run_as_written(command, check)
"""


def python_with_nbclient():
    """A Python that imports nbclient and ipykernel: this one, or Debian's /usr/bin/python3 (where
    python3-nbclient installs), or the python3 on PATH. None where there is none."""
    tried = []
    for python in [sys.executable, "/usr/bin/python3", shutil.which("python3") or ""]:
        if not python or python in tried or not os.path.exists(python):
            continue
        tried.append(python)
        r = subprocess.run([python, "-c", "import nbclient, nbformat, ipykernel"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if r.returncode == 0:
            return python
    return None


def gpu_missing(build_dir):
    """Why no notebook can run a kernel here ("" when a GPU is usable): nvidia-smi lists no GPU,
    or the build's device_query (when built) finds none usable."""
    sys.path.insert(0, os.path.join(ROOT, "grading", "driver"))
    import device
    if not device.nvidia_smi_gpus():
        return "no GPU (nvidia-smi lists none)"
    if os.path.exists(os.path.join(build_dir, "bin", "device_query")):
        facts = device.probe_device(build_dir, no_build=True)
        if not facts.get("ok"):
            return facts.get("message", "no usable GPU")
    return ""


def git(folder, *args):
    subprocess.run(["git", "-C", folder, "-c", "user.name=test_colab", "-c",
                    "user.email=test_colab@localhost", *args], check=True,
                   stdout=subprocess.DEVNULL)


def has_handout_target():
    """Whether the Makefile has a handout target (make -n handout names no missing rule)."""
    r = subprocess.run(["make", "-C", ROOT, "-n", "handout", "OUT=/nonexistent/probe"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return "No rule to make target" not in r.stderr


def plain_copy(target):
    """This tree's files as git lists them (tracked and untracked, not ignored), or, without
    git, everything but build folders."""
    r = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others",
                        "--exclude-standard"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if r.returncode == 0 and r.stdout:
        for name in sorted(set(r.stdout.decode().split("\0")) - {""}):
            source = os.path.join(ROOT, name)
            if os.path.isfile(source):
                os.makedirs(os.path.dirname(os.path.join(target, name)), exist_ok=True)
                shutil.copy2(source, os.path.join(target, name))
    else:
        shutil.copytree(ROOT, target, ignore=shutil.ignore_patterns("build", "build-*", ".git"))


def local_handout(tmp, build_dir):
    """A git repository to clone in place of the course's: (path, how it was made)."""
    given = os.environ.get("WORKBOOK_HANDOUT")
    if given:
        if not os.path.isdir(given):
            sys.exit("WORKBOOK_HANDOUT=%s is not a folder" % given)
        source, how = os.path.abspath(given), "WORKBOOK_HANDOUT=%s" % given
        if os.path.isdir(os.path.join(source, ".git")):
            return source, how
        copy = os.path.join(tmp, "handout")
        shutil.copytree(source, copy)
        source = copy
    elif os.path.isdir(os.path.join(ROOT, "solutions")) and has_handout_target():
        # The reference objects for this machine's GPU only: the notebook runs here, and every
        # architecture would cost minutes more (make handout's own test covers those).
        sys.path.insert(0, os.path.join(ROOT, "grading", "driver"))
        import device
        architectures = device.cmake_architectures()
        if not architectures:
            sys.exit("nvidia-smi gave no compute capability")
        source, how = os.path.join(tmp, "handout"), "make handout HANDOUT_ARCHITECTURES=%s" % architectures
        subprocess.run(["make", "-C", ROOT, "handout", "OUT=" + source, "BUILD=" + build_dir,
                        "HANDOUT_ARCHITECTURES=" + architectures], check=True)
        if os.path.isdir(os.path.join(source, ".git")):
            return source, how
    else:
        source, how = os.path.join(tmp, "handout"), "a plain copy of this tree (no make handout yet)"
        plain_copy(source)
    git(source, "init", "-q")
    git(source, "add", "-A")
    git(source, "commit", "-q", "-m", "the handout, for test_colab")
    return source, how


def bare_remote(tmp, handout):
    """A bare clone of the handout, which the notebook clones and pushes to, as it would to the
    student's repository on GitHub: (its path, the commit its main starts at)."""
    bare = os.path.join(tmp, "student-repository.git")
    subprocess.run(["git", "clone", "-q", "--bare", handout, bare], check=True)
    start = subprocess.run(["git", "--git-dir", bare, "rev-parse", "HEAD"], stdout=subprocess.PIPE,
                           text=True, check=True).stdout.strip()
    return bare, start


def pushed(bare, start):
    """What is wrong with the bare repository after the notebook's last cell ("" when nothing):
    one new commit on top of `start`, holding the student's edit."""
    def git(*args):
        return subprocess.run(["git", "--git-dir", bare, *args], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True).stdout
    head = git("rev-parse", "HEAD").strip()
    if head == start:
        return "nothing was pushed: the repository's HEAD is still the handout's commit %s" % start[:12]
    parents = git("rev-list", "--parents", "-n", "1", head).split()[1:]
    if parents != [start]:
        return "the pushed commit %s is not one commit on top of the handout's (parents %s)" % (head[:12], parents)
    if EDIT_LINE not in git("show", "HEAD:" + EDITED):
        return "the pushed commit does not hold the edit of %s" % EDITED
    return ""


def point_at(notebook_text, handout, stub_gpu=False):
    """The notebook with HANDOUT_URL set to the local repository (exactly one such line must be),
    STUDENT_EDIT before its last cell and, with stub_gpu, GPU_STUBS after its first code cell."""
    notebook = json.loads(notebook_text)
    lines = 0
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        lines += len(HANDOUT_LINE.findall(source))
        cell["source"] = HANDOUT_LINE.sub(lambda m: "HANDOUT_URL = %r" % handout, source)
    if lines != 1:
        sys.exit("docs/colab.ipynb has %d lines 'HANDOUT_URL = \"...\"', not one: the test "
                 "cannot point it at a local handout" % lines)
    code = [i for i, cell in enumerate(notebook["cells"]) if cell["cell_type"] == "code"]
    if "git push" not in "".join(notebook["cells"][code[-1]]["source"]):
        sys.exit("docs/colab.ipynb's last code cell does not push (git push): the test cannot check it")

    def cell(text, ident):
        return {"cell_type": "code", "execution_count": None, "id": ident, "metadata": {}, "outputs": [],
                "source": text}
    notebook["cells"].insert(code[-1], cell(STUDENT_EDIT, "testedit"))
    if stub_gpu:
        notebook["cells"].insert(code[0] + 1, cell(GPU_STUBS, "teststub"))
    return json.dumps(notebook)


# Run in the Python that has nbclient: executes the notebook in `cwd`, writes it with its outputs,
# and prints every output text, so that the caller can read what the cells printed.
EXECUTE = r"""
import sys, nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
source, executed, cwd = sys.argv[1:4]
nb = nbformat.read(source, as_version=4)
client = NotebookClient(nb, timeout=3000, kernel_name="python3", resources={"metadata": {"path": cwd}})
status = 0
try:
    client.execute()
except CellExecutionError as e:
    print("a cell failed:\n%s" % e)
    status = 1
finally:
    nbformat.write(nb, executed)
for cell in nb.cells:
    for output in cell.get("outputs", []):
        text = output.get("text") or "".join(output.get("traceback", []))
        if text:
            print(text, end="" if text.endswith("\n") else "\n")
sys.exit(status)
"""

# --without-nbclient: the code cells run in order in one namespace of a plain Python, in `cwd`, as
# a kernel would run them (the notebook's cells are plain Python: no ! or % lines). For a machine
# where nbclient cannot be installed; the cells' code is the same, Jupyter's mechanics are not.
EXECUTE_PLAIN = r"""
import json, os, sys, traceback
source, executed, cwd = sys.argv[1:4]
os.chdir(cwd)
with open(source, encoding="utf-8") as f:
    nb = json.load(f)
namespace = {"__name__": "__main__"}
for number, cell in enumerate(nb["cells"], 1):
    if cell["cell_type"] != "code":
        continue
    code = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
    if any(line.lstrip().startswith(("!", "%")) for line in code.splitlines()):
        sys.exit("cell %d has an IPython ! or %% line, which only a kernel runs" % number)
    print("--- cell %d" % number, flush=True)
    try:
        exec(compile(code, "cell %d" % number, "exec"), namespace)
    except BaseException:
        traceback.print_exc(file=sys.stdout)
        print("a cell failed: cell %d" % number)
        sys.exit(1)
"""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build-dir", required=True)
    p.add_argument("--keep", action="store_true", help="keep the temporary folder, and say where")
    p.add_argument("--without-nbclient", action="store_true",
                   help="run the code cells in order in a plain Python (where nbclient is missing)")
    p.add_argument("--stub-gpu", action="store_true",
                   help="no GPU needed: nvidia-smi, the probe kernel and make check are stubbed (GPU_STUBS)")
    args = p.parse_args()
    build_dir = os.path.abspath(args.build_dir)

    python, execute = python_with_nbclient(), EXECUTE
    if args.without_nbclient:
        python, execute = sys.executable, EXECUTE_PLAIN
    if python is None:
        print("skipped: nbclient or ipykernel is missing (Debian: apt-get install python3-nbclient "
              "python3-ipykernel; or run the cells without Jupyter: --without-nbclient)")
        return SKIP
    why = "" if args.stub_gpu else gpu_missing(build_dir)
    if why:
        print("skipped: %s" % why)
        return SKIP

    tmp = tempfile.mkdtemp(prefix="test_colab-")
    try:
        if args.stub_gpu and not os.environ.get("WORKBOOK_HANDOUT"):
            handout, how = os.path.join(tmp, "handout"), "a plain copy of this tree (--stub-gpu)"
            plain_copy(handout)
            git(handout, "init", "-q")
            git(handout, "add", "-A")
            git(handout, "commit", "-q", "-m", "the handout, for test_colab")
        else:
            handout, how = local_handout(tmp, build_dir)
        print("the handout: %s (%s)" % (handout, how), flush=True)
        remote, start = bare_remote(tmp, handout)
        print("the student's repository: %s, a bare clone of it" % remote, flush=True)
        with open(NOTEBOOK, encoding="utf-8") as f:
            pointed = point_at(f.read(), remote, args.stub_gpu)
        source = os.path.join(tmp, "colab.ipynb")
        with open(source, "w", encoding="utf-8") as f:
            f.write(pointed)
        work = os.path.join(tmp, "content")  # Colab's /content: where the clone goes
        os.makedirs(work)
        executed = os.path.join(build_dir, "docs", "colab_executed.ipynb")
        os.makedirs(os.path.dirname(executed), exist_ok=True)
        # The kernel inherits this environment: a made-up token, as the notebook's token cell sets one.
        r = subprocess.run([python, "-c", execute, source, executed, work],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env=dict(os.environ, WORKBOOK_GIT_TOKEN=FAKE_TOKEN))
        print(r.stdout)
        if not args.without_nbclient:
            print("the executed notebook: %s" % executed)
        if r.returncode != 0:
            print("FAILED: a cell of docs/colab.ipynb raised an error (above)")
            return 1
        statuses = CHECK_STATUS.findall(r.stdout)
        if statuses != ["1"]:
            print("FAILED: the grader of the notebook's make check LAB=01 should exit with status 1 on the "
                  "skeleton (its tests fail); the notebook reported %s" % (statuses or "no status"))
            return 1
        if "not started" not in r.stdout:
            print("FAILED: make check LAB=01 did not say that the skeleton is not started")
            return 1
        wrong = pushed(remote, start)
        if wrong:
            print("FAILED: the notebook's last cell did not commit and push the student's edit: " + wrong)
            return 1
        saved = r.stdout
        if not args.without_nbclient:
            with open(executed, encoding="utf-8") as f:
                saved += f.read()
        if FAKE_TOKEN in saved:
            print("FAILED: the token is in the notebook's output: run() must mask it")
            return 1
        if "https://***@github.com/a/b.git" not in r.stdout:
            print("FAILED: run() did not show the address that holds the token masked as https://***@github.com/...")
            return 1
        print("passed: the notebook cloned the handout (%s)%s, ran make check LAB=01%s, whose tests fail on the "
              "skeleton as they should, committed the student's edit and pushed it to the repository, and "
              "its output holds no token" % (how, "" if args.without_nbclient else " in a Jupyter kernel",
                                             " (stubbed: no GPU)" if args.stub_gpu else ""))
        return 0
    finally:
        if args.keep:
            print("kept: %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
