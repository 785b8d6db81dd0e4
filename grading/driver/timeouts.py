"""How long a test may run before it is killed, and the reference solution's own times that
this comes from.

Timeouts come from the reference solution's own time for each test on this GPU, timed once and
kept in <build>/grade/reference_times.json: TIMEOUT_FACTOR times that, and never under
TIMEOUT_FLOOR. A kept time is used again only on the same GPU and with the same build of the
reference checker. (grade.py's test_timeouts decides, and times the reference when it must.)
"""
import json
import os
import threading

TIMEOUT_FACTOR = 10        # a test may take this many times the reference solution's time...
TIMEOUT_FLOOR = 20.0       # ...and never less than this many seconds
REFERENCE_TIMEOUT = 300.0  # while the reference solution itself is timed
PROFILE_ALLOWANCE = 150.0  # more for a performance test: a slow kernel is explained by two ncu runs

# grade.py's first phase times the references of several labs at once, each in a thread of its
# own, and each adds its lab to the one file: a read, a change and a write, one thread at a time.
CACHE_LOCK = threading.Lock()


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
    with CACHE_LOCK:
        cache = load_reference_times(trusted_build_dir)
        cache[lab.id] = {"stamp": reference_stamp(trusted, device),
                         "seconds": {t.name: t.seconds for t in lab.tests if t.status == "passed"}}
        path = reference_cache(trusted_build_dir)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # Written aside and then renamed: a reader (another thread, or another grade run of a class)
        # sees the old file or the new one, never half of one.
        with open("%s.%d.%d" % (path, os.getpid(), threading.get_ident()), "w") as f:
            json.dump(cache, f, indent=1)
        os.replace(f.name, path)
