"""What the grader's own test scripts share (they run from this folder, which Python puts on
their path): the GPU that the GPU ones need, or the skip that says why there is none; and the
command line of the ones that drive the fake checker."""
import argparse
import os
import sys

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SOURCE_DIR, "grading", "driver"))
import grade  # noqa: E402  (probe_device)

SKIP = 77  # the exit status ctest reads as "skipped" (SKIP_RETURN_CODE)


def usable_gpu(build_dir):
    """Whether this machine's GPU can grade. Where it cannot, prints why, as "skipped, nothing was
    graded: ...", and the caller exits with SKIP: a GPU test without a GPU is skipped, never passed."""
    device = grade.probe_device(build_dir)
    if not device.get("ok"):
        print("skipped, nothing was graded: %s" % device.get("message", "no usable GPU"))
        return False
    return True


def gpu_build_dir():
    """For a GPU test whose one argument is --build-dir: the build folder's absolute path, or None
    where this machine's GPU cannot grade (usable_gpu has printed why, and the caller exits with
    SKIP)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", required=True)
    build_dir = os.path.abspath(parser.parse_args().build_dir)
    return build_dir if usable_gpu(build_dir) else None


def fake_checker_command_line(cleared=()):
    """For the tests that drive the fake checker: reads --fake (the fake_checker binary, which must
    exist), and unsets every FAKE_* setting and each name in `cleared`, which the tests switch on
    one at a time and must never inherit. Returns the binary's absolute path and the arguments left
    for unittest."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--fake", required=True, help="the fake_checker binary")
    options, rest = parser.parse_known_args()
    fake = os.path.abspath(options.fake)
    if not os.access(fake, os.X_OK):
        sys.exit("no fake checker at %s: build it first (make all)" % fake)
    for name in [n for n in os.environ if n.startswith("FAKE_") or n in cleared]:
        del os.environ[name]
    return fake, [sys.argv[0]] + rest
