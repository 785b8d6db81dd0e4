"""How long a test may run before it is killed, and the reference solution's own times that
this comes from.

Timeouts come from the reference solution's own time for each test on this GPU, timed once and
kept in <build>/grade/reference_times.json: TIMEOUT_FACTOR times that, and never under
TIMEOUT_FLOOR. A kept time is used again only on the same GPU and with the same build of the
reference checker. (one_lab.py's test_timeouts decides, and times the reference when it must.)

The same file keeps the reference's own figure for each timed call of a performance test, from
the same run ("figures"): a checker grading a student is handed them (reference_env), and a
figure of the reference far from its own run's is timed again, and never used if still off
(common/judge.hpp, set_reference_record).
"""
import json
import os

TIMEOUT_FACTOR = 10        # a test may take this many times the reference solution's time...
TIMEOUT_FLOOR = 20.0       # ...and never less than this many seconds
REFERENCE_TIMEOUT = 300.0  # while the reference solution itself is timed
PROFILE_ALLOWANCE = 150.0  # more for a performance test: a slow kernel is explained by two ncu runs
# More for a compute-sanitizer test: its tool run, started early beside other labs' (four at a
# time), has stalled on correct kernels for 7 to 74 s (lab 05 step 4's racecheck, cause unknown;
# docs/grading.md). A stall must cost time, not a correct kernel's points.
SANITIZER_ALLOWANCE = 150.0


def allowance(test_name):
    """Seconds a test gets beyond its timeout for the tool runs it may wait on."""
    if "performance" in test_name:
        return PROFILE_ALLOWANCE
    if "compute-sanitizer" in test_name:
        return SANITIZER_ALLOWANCE
    return 0.0


def reference_cache(trusted_build_dir):
    """The file that keeps the reference solution's times, in the workbook's own build folder."""
    return os.path.join(trusted_build_dir, "grade", "reference_times.json")


def reference_stamp(trusted, device):
    """What the cached times depend on: the GPU and the reference checker's build."""
    return {"device": device.get("device", ""), "built": os.path.getmtime(trusted)}


def load_reference_times(trusted_build_dir):
    """{lab id: {"stamp": ..., "seconds": {test name: seconds}}}; empty when none were kept."""
    try:
        with open(reference_cache(trusted_build_dir)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def figures_file(trusted_build_dir, lab_id):
    """Where a run of the reference solution's checker writes the reference's figures
    (WORKBOOK_REFERENCE_FIGURES_OUT): a line per timed call, "call<TAB>ms<TAB>test name". A file
    of this grade's own (its process id): a class graded on several GPUs at once may time the
    reference in several grades at the same moment."""
    return os.path.join(trusted_build_dir, "grade", "reference_figures.%s.%d.tsv" % (lab_id, os.getpid()))


def figures_out_env(trusted_build_dir, lab_id):
    """For a run of the reference solution: its figures are written afresh to figures_file."""
    path = figures_file(trusted_build_dir, lab_id)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):
        os.remove(path)
    return {"WORKBOOK_REFERENCE_FIGURES_OUT": path}


def read_figures(path):
    """{test name: {call (a string): ms}} from a figures_file; empty when there is none."""
    figures = {}
    try:
        with open(path) as f:
            for line in f:
                call, ms, test = line.rstrip("\n").split("\t", 2)
                figures.setdefault(test, {})[call] = float(ms)
    except (OSError, ValueError):
        return {}
    return figures


def reference_env(trusted_build_dir, lab_id, trusted, device):
    """What a checker grading a student's tree is told of the reference's speed on this GPU: the
    kept figures (WORKBOOK_REFERENCE_FIGURES, in figures_file's format), when they were kept on this
    GPU with this build of the reference checker; nothing otherwise."""
    entry = load_reference_times(trusted_build_dir).get(lab_id)
    if not entry or entry.get("stamp") != reference_stamp(trusted, device):
        return {}
    lines = ["%s\t%.6g\t%s" % (call, ms, test) for test, calls in sorted(entry.get("figures", {}).items())
             for call, ms in sorted(calls.items())]
    return {"WORKBOOK_REFERENCE_FIGURES": "\n".join(lines)} if lines else {}


def remember_reference_times(trusted_build_dir, lab, trusted, device):
    """Keeps each test's time from a run of the reference solution on this GPU, and the figures
    that run wrote (figures_file)."""
    figures = figures_file(trusted_build_dir, lab.id)
    cache = load_reference_times(trusted_build_dir)
    cache[lab.id] = {"stamp": reference_stamp(trusted, device),
                     "seconds": {t.name: t.seconds for t in lab.tests if t.status == "passed"},
                     "figures": read_figures(figures)}
    if os.path.exists(figures):
        os.remove(figures)
    os.makedirs(os.path.dirname(reference_cache(trusted_build_dir)), exist_ok=True)
    with open(reference_cache(trusted_build_dir), "w") as f:
        json.dump(cache, f, indent=1)
