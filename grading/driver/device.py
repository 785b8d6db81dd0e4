"""The GPU: whether nvidia-smi lists one, and device_query's facts and ceilings (copy bandwidth
and cuBLAS SGEMM), which the performance tests are measured against."""
import json
import os
import re
import subprocess
import sys
import time

from building import build, compiler_errors


def nvidia_smi_gpus():
    """The indices of the GPUs nvidia-smi lists (none when it is missing or fails)."""
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return []
    if r.returncode != 0:
        return []
    return [i for i in (line.strip() for line in r.stdout.splitlines()) if i.isdigit()]


def cmake_architectures():
    """This machine's GPUs as CMake CUDA architectures, e.g. "90-real" ("" when nvidia-smi gives
    no compute capability): what a handout made only for this machine is built for."""
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return ""
    caps = sorted(set(re.findall(r"([0-9]+)\.([0-9]+)", r.stdout)))
    return ";".join("%s%s-real" % cap for cap in caps)


def first_build_estimate():
    """How long the first build of device_query takes here, roughly: 184 s on 2 cores (measured on
    a fresh clone of the handout), and about proportionally less on more."""
    cores = max(1, len(os.sched_getaffinity(0)))
    minutes = 3.0 * 2 / cores
    if minutes >= 1.5:
        return "%d minutes on %d cores" % (round(minutes), cores)
    return "a minute or less on %d cores" % cores


def probe_device(build_dir, no_build=False):
    """Runs device_query once: the GPU's facts and ceilings (copy, cuBLAS SGEMM and TF32), measured
    once and shared by every checker instead of once per lab. With no_build, a device_query
    already built is used as it is."""
    query = os.path.join(build_dir, "bin", "device_query")
    if not (no_build and os.path.exists(query)):
        # The first build also compiles the workbook's common library, which every checker links:
        # minutes, said before it starts so that a first run does not look stuck.
        first = not os.path.exists(query)
        if first:
            print("building the device query, which measures this GPU's ceilings, and the workbook's "
                  "common library (the first time only: about %s)..." % first_build_estimate(), end=" ", flush=True)
        started = time.monotonic()
        ok, output = build(build_dir, "device_query")
        if first:
            print("done (%.0f s)" % (time.monotonic() - started) if ok else "failed", flush=True)
        if not ok:
            sys.exit("could not build device_query:\n" + compiler_errors(output))
    r = subprocess.run([query, "--sgemm"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    try:
        facts = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        facts = {"ok": False, "message": r.stderr.strip() or "device_query failed"}
    return facts
