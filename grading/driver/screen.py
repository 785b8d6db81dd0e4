"""What make grade prints on the terminal: a line per test as it finishes, a failing test's
reason (the first time it appears in the lab; "same reason as above" after), the GPU, the
scores, and the lab to work on next. Everything else a test printed stays in the lab's log,
report.html and make check.
"""
import os
import re
import shutil
import sys

from device import nvidia_smi_gpus
from results import practice_line, practice_of


def short_reason(output):
    """What `make grade` shows under a failing test: the message's first line and its hint. The
    rest (maps, counters, sanitizer reports) stays in the lab's log, report.html and make check."""
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    if not lines:
        return []
    head = lines[0]
    if head.endswith(":") and len(lines) > 1 and not lines[1].startswith("Hint:"):
        head += " " + lines[1]  # "launch_x, 31 x 33:" names the case; the next line says what is wrong
    hint = next((line for line in lines[1:] if line.startswith("Hint:")), "")
    return [head] + ([hint] if hint else [])


def reason_key(reason):
    """A reason without the case it was seen in and without its counts: "launch_vector_add,
    n = 1000: c: 232 of 1000 elements are wrong" and "..., n = 1023: c: 255 of 1023 elements are
    wrong" are the same reason."""
    return [re.sub(r"\d+(\.\d+)?", "#", re.sub(r"^[A-Za-z_]\w*, [^:]*: ", "", line)) for line in reason]


class ReasonsSeen:
    """The reasons shown so far in one lab: make grade and report.html group them alike."""

    def __init__(self):
        self.keys = []

    def repeats(self, reason):
        """Whether this reason was shown before in the lab (and, if not, it is now)."""
        key = reason_key(reason)
        if key in self.keys:
            return True
        self.keys.append(key)
        return False


class TestPrinter:
    """Prints a lab's tests as they finish: one line each, with points and time. Under a failing
    test, `verbose` (make check) shows everything it printed; otherwise its reason, and only the
    first time that reason appears in the lab ("same reason as above" after). A lab that is not
    started prints nothing here: grade_lab says so in one sentence. In practice mode the lab's
    first result is headed by the practice line, with its reason, and every result line ends with
    "practice mode: not for grading"."""

    def __init__(self, verbose, quiet=False):
        self.verbose, self.quiet = verbose, quiet
        self.seen, self.hints = ReasonsSeen(), []
        self.practice_said = ""

    def __call__(self, test):
        if self.quiet:
            return
        if test.practice and test.practice != self.practice_said:
            print("  " + practice_line(test.practice))
            self.practice_said = test.practice
        mark = {"passed": "OK  ", "failed": "FAIL", "skipped": "SKIP"}[test.status]
        if test.points:
            worth = "%d/%d" % (test.score if test.status == "passed" else 0, test.points)
        else:
            worth = "%d/%d bonus" % (test.score, test.bonus)
        name = test.name if len(test.name) <= 62 else test.name[:59] + "..."
        print("  %s %s %s %-8s %5.1fs%s" % (name, "." * (64 - len(name)), mark, worth, test.seconds,
                                            "  practice mode: not for grading" if test.practice else ""))
        for line in self.detail(test):
            print("        " + line)
        sys.stdout.flush()

    def detail(self, test):
        if not test.output or not (test.status == "failed" or test.output.strip()):
            return []
        lines = test.output.rstrip().splitlines()
        if self.verbose:
            return lines[:40] + (["... (%d more lines in the log)" % (len(lines) - 40)] if len(lines) > 40 else [])
        if test.status == "passed":
            return lines[:1]  # its headline figure ("your kernel: 2548 GB/s = 86% of copy ...")
        reason = short_reason(test.output)
        if self.seen.repeats(reason):
            return ["same reason as above"]
        if len(reason) > 1 and reason[1] in self.hints:
            return reason[:1]  # its hint was given above, word for word
        self.hints += reason[1:]
        return reason


def print_device(device, args):
    """The GPU the labs are graded on and its ceilings; or, with none, why nothing is graded."""
    if device.get("ok"):
        sgemm = float(device.get("sgemm_gflops", 0))
        tf32 = float(device.get("tf32_gflops", 0))
        print("device: %s; copy ceiling %.0f GB/s, cuBLAS SGEMM %.0f GFLOP/s%s"
              % (device["device"], device["copy_gbs"], sgemm,
                 ", in TF32 %.0f GFLOP/s" % tf32 if tf32 > 0 else ""))
    else:
        print("No usable CUDA GPU here (%s): the checkers are still built, so that a compile error "
              "shows, but no test runs." % device.get("message", "no CUDA device found"))
        print_slurm_hint(args)


def print_no_device_verdict(labs, device, args):
    """The last words of a run with no usable GPU, instead of the scores: nothing was graded, so
    there is no score to give (a "Score: 0/16" would read as sixteen points lost). Names the labs
    with a problem of their own (a missing file, a compile error, shown above) and where to find
    a GPU."""
    print("")
    print("No usable CUDA GPU here: nothing was graded, so there is no score.")
    print("  why: %s" % device.get("message", "no CUDA device found"))
    problems = [lab for lab in labs if lab.problem and lab.problem != device.get("message")]
    for lab in problems:
        print("  lab %s (%s) %s" % (lab.number, lab.title, lab.problem.splitlines()[0].rstrip(":")))
    if labs and not problems:
        print("  Every lab built%s." % ("" if getattr(args, "no_build", False) else " without a compile error"))
    print("  To grade, run the same command where there is an NVIDIA GPU (compute capability 7.5 or newer):")
    print("    - Google Colab's free T4: open docs/colab.ipynb in Colab (README.md says how);")
    if not os.environ.get("SLURM_JOB_ID"):  # inside a Slurm job, srun already brought us here
        print("    - a Slurm cluster, from its login node: %s RUNNER=slurm;" % make_command(args))
    print("    - a machine of your own with an NVIDIA GPU, its driver and the CUDA toolkit.")
    sys.stdout.flush()


def print_scores(labs):
    """The summary after the last lab: a line per lab, then the score (and bonus) in all. A lab's
    problem is named once; the next lab with the same one says "the same as above"."""
    print("")
    practice = practice_of(labs)
    if practice:
        print(practice_line(practice))
    previous = None
    for lab in labs:
        problem = lab.problem.splitlines()[0].rstrip(":") if lab.problem else ""
        note = "" if not problem else " (the same as above)" if problem == previous else " (%s)" % problem
        previous = problem
        if lab.practice:
            note += "  practice mode: not for grading"
        print("Lab %s %-24s %s%s" % (lab.number, lab.title, lab.summary(), note))
    total, possible = sum(lab.score for lab in labs), sum(lab.max_score for lab in labs)
    bonus, possible_bonus = sum(lab.bonus for lab in labs), sum(lab.max_bonus for lab in labs)
    print("Score: %d/%d%s" % (total, possible, " (practice mode: not for grading)" if practice else ""))
    if possible_bonus:
        print("Bonus: %d/%d" % (bonus, possible_bonus))


def next_step(labs):
    """The last lines of `make grade`: the first lab to work on, and the command that shows all
    of its details."""
    def command(lab):
        shared = sum(1 for other in labs if other.number == lab.number) > 1
        return "make check LAB=%s" % (lab.id if shared else lab.number)

    def first_failure(lab):
        return next((t for t in lab.tests if t.status == "failed"), None)

    for lab in labs:
        missing = lab.max_score - lab.score if lab.max_score else lab.max_bonus - lab.bonus
        if lab.max_score and lab.score == lab.max_score:
            continue
        if not lab.max_score and any(other.max_score and other.score < other.max_score for other in labs):
            continue  # going further waits until every lab has its points
        if not missing:
            continue
        name = "lab %s (%s)" % (lab.number, lab.title)
        if lab.not_started:
            return ["Next: %s is %s" % (name, lab.not_started), "  then run: %s" % command(lab)]
        failed = first_failure(lab)
        where = ', first at "%s"' % failed.name if failed else ""
        return ["Next: %s is missing %d %spoint%s%s." % (name, missing, "" if lab.max_score else "bonus ",
                                                          "" if missing == 1 else "s", where),
                "  every detail (maps, counters, hints): %s" % command(lab)]
    return ["Every lab and every going-further part has full marks."]


# ----------------------------------------------------------------------------------------------
# Slurm: a login node has no GPU, its cluster has

def print_slurm_hint(args):
    """On a machine with no GPU but with Slurm's srun (a login node), and not already inside a
    Slurm job: says so, and names the command that grades on a GPU of the cluster."""
    if os.environ.get("SLURM_JOB_ID") or shutil.which("srun") is None or nvidia_smi_gpus():
        return
    print("This machine has no GPU (nvidia-smi lists none), but it has Slurm's srun: to grade on "
          "a GPU of the cluster, run\n    %s RUNNER=slurm" % make_command(args))
    sys.stdout.flush()


def make_command(args):
    """The make command of this grade run: make check LAB=NN, or make grade and its variables."""
    lab, seed = getattr(args, "lab", None), getattr(args, "seed", None)
    if getattr(args, "verbose", False) and lab:
        words = ["make check", "LAB=" + lab]
    else:
        words = ["make grade"] + (["LAB=" + lab] if lab else [])
        words += ["SUBMISSION=" + args.submission] if getattr(args, "submission", None) else []
    words += ["SOLUTIONS=1"] if getattr(args, "solutions", False) else []
    words += ["SEED=%d" % seed] if seed is not None else []
    return " ".join(words)
