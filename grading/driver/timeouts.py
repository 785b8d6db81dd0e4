"""How long a test may run before it is killed, and the reference solution's own times that
this comes from.

Timeouts come from the reference solution's own time for each test on this GPU, timed once and
kept in <build>/grade/reference_times.json: TIMEOUT_FACTOR times that, and never under
TIMEOUT_FLOOR. A kept time is used again only on the same GPU and with the same build of the
reference checker. (one_lab.py's test_timeouts decides, and times the reference when it must.)
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


def remember_reference_times(trusted_build_dir, lab, trusted, device):
    """Keeps each test's time from a run of the reference solution on this GPU."""
    cache = load_reference_times(trusted_build_dir)
    cache[lab.id] = {"stamp": reference_stamp(trusted, device),
                     "seconds": {t.name: t.seconds for t in lab.tests if t.status == "passed"}}
    os.makedirs(os.path.dirname(reference_cache(trusted_build_dir)), exist_ok=True)
    with open(reference_cache(trusted_build_dir), "w") as f:
        json.dump(cache, f, indent=1)
