"""A class's reports: <out>/gradebook.csv and <out>/summary.md, from the students' scores (and,
in the summary, the reference's figures across the class, from their logs: reference_spread.py).

grading/grade_class.py calls write_outputs once every student has a row, whichever runner graded
them (class_local.py or class_slurm.py): the scores come from each student's results.json (read
by class_student.read_results), never from anything a checker printed.

    write_outputs(...)   the gradebook, the summary (also printed) and the closing line
    replay_command(...)  the make command that grades the class again with the same seed
"""
import csv
import os
import statistics

from class_student import duration, plural, say
from reference_spread import spread_table

TOP_FAILED = 20   # the summary lists this many of the tests most students failed


def write_outputs(out_dir, students, labs, seed, args, where, seconds):
    """The gradebook and the summary, and the closing lines."""
    gradebook = os.path.join(out_dir, "gradebook.csv")
    write_gradebook(gradebook, students, labs)
    summary = summary_text(students, labs, seed, args, where, seconds, out_dir)
    with open(os.path.join(out_dir, "summary.md"), "w") as f:
        f.write(summary)
    say("\n" + summary)
    say("Graded %s in %s. Gradebook: %s; summary: %s; each student's results.json "
        "and logs in %s/<student>/" % (plural(len([s for s in students if s.graded]), "student"),
                                        duration(seconds),
                                        gradebook, os.path.join(out_dir, "summary.md"), out_dir))


def replay_command(args, seed):
    return "make grade-class SUBMISSIONS=%s SEED=%d%s%s" % (
        args.submissions, seed, " LAB=%s" % args.lab if args.lab else "",
        " RUNNER=slurm" if args.runner == "slurm" else "")


# ----------------------------------------------------------------------------------------------
# The gradebook: a row per student, a column per lab

def gradebook_columns(labs):
    """(header, lab id, "points" or "bonus"): a lab's points, then its bonus if it has bonus
    tests; a going-further part that has only bonus tests gets its bonus column alone."""
    columns = []
    for lab in labs:
        if lab.max_score or not lab.max_bonus:
            columns.append((lab.id, lab.id, "points"))
        if lab.max_bonus:
            columns.append(("%s bonus" % lab.id, lab.id, "bonus"))
    return columns


def write_gradebook(path, students, labs):
    columns = gradebook_columns(labs)
    possible = sum(lab.max_score for lab in labs)
    possible_bonus = sum(lab.max_bonus for lab in labs)
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["student"] + [header for header, _, _ in columns]
                     + ["total", "bonus", "possible", "possible bonus", "status", "notes"])
        for s in students:
            if s.graded:
                scores = [getattr(s, kind).get(lab_id, 0) for _, lab_id, kind in columns]
                scores += [s.total, s.total_bonus]
            else:
                scores = [""] * (len(columns) + 2)
            out.writerow([s.name] + scores + [possible, possible_bonus, s.status, s.note])


# ----------------------------------------------------------------------------------------------
# The summary: the class's status, score distribution, most failed tests and problems

def summary_text(students, labs, seed, args, where, seconds, out_dir):
    """`where`: the GPUs it ran on ("2 GPUs", "no GPU", "Slurm job 12"); `out_dir`: where each
    student's logs are (for the reference's figures, reference_spread.py)."""
    graded = [s for s in students if s.graded]
    lines = summary_heading(students, labs, seed, args, where, seconds)
    lines += ["", "## Scores", ""] + score_table(graded, labs)
    lines += ["", "## Tests most students failed", ""] + most_failed(graded)
    figures = spread_table(out_dir, [s.key for s in graded])
    if figures:
        lines += ["", "## The reference's figures across the class", ""] + figures
    lines += problems(students, graded, labs)
    return "\n".join(lines) + "\n"


def summary_heading(students, labs, seed, args, where, seconds):
    """The title, what was graded and how, and how many students ended in each status."""
    students_here = plural(len([s for s in students if s.status != "not graded"]), "student")
    lines = ["# Class grading: %s" % args.submissions, "",
             "%s, labs %s; seed %d (replay: %s); %s; %s." % (
                 students_here, ", ".join(lab.id for lab in labs), seed,
                 replay_command(args, seed), where, duration(seconds)), ""]
    counts = {status: [s.name for s in students if s.status == status]
              for status in ("ok", "no GPU", "grading failed", "not graded")}
    lines.append("Status: " + "; ".join(
        "%s %d" % (status, len(names)) + (" (%s)" % ", ".join(names) if status != "ok" else "")
        for status, names in counts.items() if names or status == "ok") + ".")
    if counts["no GPU"]:
        lines.append("")
        lines.append("No GPU: every GPU test was skipped and scored 0; the failures below are "
                     "only labs that did not compile.")
    return lines


def score_table(graded, labs):
    """Mean, median, min and max of the total, of each lab with points, and of the bonus."""
    if not graded:
        return ["No student was graded."]
    possible = sum(lab.max_score for lab in labs)
    lines = ["| | mean | median | min | max | possible |", "|---|---|---|---|---|---|"]
    rows = [("total", [s.total for s in graded], possible)]
    rows += [(lab.id, [s.points.get(lab.id, 0) for s in graded], lab.max_score)
             for lab in labs if lab.max_score]
    if any(lab.max_bonus for lab in labs):
        rows.append(("bonus", [s.total_bonus for s in graded], sum(lab.max_bonus for lab in labs)))
    for name, values, most in rows:
        lines.append("| %s | %.1f | %g | %d | %d | %d |" % (
            name, statistics.mean(values), statistics.median(values), min(values),
            max(values), most))
    return lines


def most_failed(graded):
    """The TOP_FAILED tests that failed for the most students, with how many."""
    failures = {}
    for s in graded:
        for name in s.failed:
            failures[name] = failures.get(name, 0) + 1
    if not failures:
        return ["No test failed." if graded else "No student was graded."]
    ranked = sorted(failures.items(), key=lambda item: (-item[1], item[0]))[:TOP_FAILED]
    lines = ["| test | failed | % |", "|---|---|---|"]
    lines += ["| %s | %d/%d | %.0f%% |" % (name, n, len(graded), 100.0 * n / len(graded))
              for name, n in ranked]
    if len(failures) > TOP_FAILED:
        lines.append("")
        lines.append("(%d more tests failed for someone: see the gradebook and each "
                     "student's results.json)" % (len(failures) - TOP_FAILED))
    return lines


def problems(students, graded, labs):
    """The labs that did not compile, and for whom, then every student not graded: a section
    only when there is any."""
    no_compile = [(lab.id, [s.name for s in graded if lab.id in s.no_compile]) for lab in labs]
    not_graded = [s for s in students if not s.graded]
    if not any(names for _, names in no_compile) and not not_graded:
        return []
    lines = ["", "## Problems", ""]
    lines += ["- %s does not compile for %d: %s" % (lab_id, len(names), ", ".join(names))
              for lab_id, names in no_compile if names]
    lines += ["- %s: %s: %s" % (s.name, s.status, s.note) for s in not_graded]
    return lines
