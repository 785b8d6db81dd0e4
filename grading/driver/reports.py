"""The reports a grade run writes under <build>/grade/: results.json (Gradescope's format),
junit.xml (for CI), and report.html (one self-contained page for the student).

Each is written from the same Labs and Tests that make grade printed; report.html groups a
repeated reason as make grade does (screen.py's ReasonsSeen).

In practice mode (CUDA IPC missing: docs/grading.md, "Practice mode") the results are not for
grading: write_reports writes report.html only, marked, and removes a results.json or junit.xml
left by an earlier run, unless told to write them (make grade --allow-practice); then every
result in them says "practice mode: not for grading (<why>)", and results.json's extra_data
carries "practice_mode": <why>.
"""
import json
import os
import xml.etree.ElementTree as ET
from html import escape

from results import practice_line, practice_of
from screen import ReasonsSeen, short_reason


def write_results_json(path, labs, seed, device, seconds):
    """results.json in Gradescope's format: an entry per test, a skipped one marked "not run",
    and one for a lab with a problem and no tests. The score counts bonus points. Returns it."""
    tests = []
    for lab in labs:
        if lab.problem and not lab.tests:
            tests.append({"name": "lab %s %s" % (lab.number, lab.title), "score": 0,
                          "max_score": 0, "status": "failed", "output": lab.problem,
                          "visibility": "visible"})
        for t in lab.tests:
            output = t.output if t.status != "skipped" else "not run (skipped): " + t.output
            if t.practice:
                output = practice_line(t.practice) + "\n" + output
            tests.append({"name": "lab %s %s: %s" % (lab.number, lab.title, t.name),
                          "score": t.score, "max_score": t.max_score,
                          "status": "passed" if t.status == "passed" else "failed",
                          "output": output, "visibility": "visible"})
    result = {
        "score": sum(lab.score + lab.bonus for lab in labs),
        "execution_time": round(seconds, 1),
        "output": "seed %d (replay: make grade SEED=%d); device: %s" % (
            seed, seed, device.get("device", device.get("message", "none"))),
        "tests": tests,
    }
    practice = practice_of(labs)
    if practice:
        result["output"] = practice_line(practice) + "; " + result["output"]
        result["extra_data"] = {"practice_mode": practice}
    with open(path, "w") as f:
        json.dump(result, f, indent=2)
    return result


def write_junit(path, labs):
    """junit.xml: a testsuite per lab, a testcase per test, with its failure or skip message."""
    root = ET.Element("testsuites", name="cuda-workbook")
    for lab in labs:
        suite = ET.SubElement(root, "testsuite", name=lab.id, tests=str(len(lab.tests)),
                              failures=str(sum(t.status == "failed" for t in lab.tests)),
                              skipped=str(sum(t.status == "skipped" for t in lab.tests)),
                              time="%.3f" % sum(t.seconds for t in lab.tests))
        if lab.practice:
            properties = ET.SubElement(suite, "properties")
            ET.SubElement(properties, "property", name="practice_mode", value=practice_line(lab.practice))
        for t in lab.tests:
            case = ET.SubElement(suite, "testcase", classname=lab.id, name=t.name,
                                 time="%.3f" % t.seconds)
            if t.practice:
                ET.SubElement(case, "properties").append(
                    ET.Element("property", name="practice_mode", value=practice_line(t.practice)))
            if t.status == "failed":
                first = t.output.strip().splitlines()[0] if t.output.strip() else "failed"
                ET.SubElement(case, "failure", message=first).text = t.output
            elif t.status == "skipped":
                ET.SubElement(case, "skipped", message=t.output)
            if t.output and t.status == "passed":
                ET.SubElement(case, "system-out").text = t.output
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


# report.html carries its own style: one file, nothing beside it to lose when it is sent on.
REPORT_CSS = ("body{font:14px/1.4 sans-serif;margin:2em auto;max-width:60em;color:#222}"
              "h2{margin:1.6em 0 .4em}table{border-collapse:collapse;width:100%}"
              "td{padding:2px 8px;border-bottom:1px solid #eee;vertical-align:top}"
              ".track{background:#eee;height:1.2em;border-radius:3px;overflow:hidden}"
              ".bar{background:#2e7d32;height:100%}.passed{color:#2e7d32}.failed{color:#c62828}"
              ".skipped{color:#8d6e00}pre{background:#fafafa;border-left:3px solid #c62828;"
              "padding:.4em .8em;white-space:pre-wrap;margin:.2em 0 .6em}.n{text-align:right}"
              "summary{cursor:pointer;color:#555}")


def write_report_html(path, labs, seed, device, seconds):
    """report.html beside results.json: one self-contained page, a bar per lab, every test's
    status and points, and each failing test's reason (grouped as make grade groups them) with
    its whole message a click away."""
    out = report_head(labs, seed, device, seconds) + score_bars(labs)
    for lab in labs:
        out += lab_section(lab)
    out.append("</body></html>\n")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out))


def report_head(labs, seed, device, seconds):
    """The page's head, then the score in all, the seed that replays the run, and the GPU."""
    total, possible = sum(lab.score for lab in labs), sum(lab.max_score for lab in labs)
    bonus, possible_bonus = sum(lab.bonus for lab in labs), sum(lab.max_bonus for lab in labs)
    return ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
            "<title>Grade report: %d/%d</title><link rel='icon' href='data:,'><style>%s</style></head><body>"
            % (total, possible, REPORT_CSS),
            "<h1>Score: %d/%d%s</h1>" % (total, possible,
                                         " +%d/%d bonus" % (bonus, possible_bonus) if possible_bonus else ""),
            "<p>seed %d (replay: <code>make grade SEED=%d</code>); device: %s; %.1f s</p>" % (
                seed, seed, escape(device.get("device", device.get("message", "none"))), seconds)] + (
            ["<p class='failed'><b>%s</b></p>" % escape(practice_line(practice_of(labs)))]
            if practice_of(labs) else [])


def score_bars(labs):
    """A table of the labs, each with a bar as long as its share of its points (a lab of bonus
    points only: of its bonus)."""
    out = ["<table>"]
    for lab in labs:
        width = (100.0 * lab.score / lab.max_score if lab.max_score else
                 100.0 * lab.bonus / lab.max_bonus if lab.max_bonus else 0)
        out.append("<tr><td>Lab %s %s</td><td style='width:50%%'><div class='track'><div class='bar' "
                   "style='width:%.1f%%'></div></div></td><td class='n'>%s</td></tr>"
                   % (escape(lab.number), escape(lab.title), width, escape(lab.summary())))
    out.append("</table>")
    return out


def lab_section(lab):
    """A lab's heading and score, its problem if it has one, and a row for each test."""
    out = ["<h2 id='lab-%s'>Lab %s %s: %s</h2>" % (escape(lab.id), escape(lab.number),
                                                   escape(lab.title), escape(lab.summary()))]
    if lab.problem:
        out.append("<pre>%s</pre>" % escape(lab.problem))
    if lab.not_started:
        # One sentence, as make grade says it; the tests stay a click away.
        out.append("<p class='skipped'>%s</p><details><summary>its %d tests</summary>"
                   % (escape(lab.not_started), len(lab.tests)))
    out.append("<table>")
    seen = ReasonsSeen()
    for t in lab.tests:
        out += test_rows(t, lab.problem, seen)
    out.append("</table>")
    if lab.not_started:
        out.append("</details>")
    return out


def test_rows(t, lab_problem, seen):
    """A test's row (status, name, points, time) and, under a test that failed or was skipped,
    why: a failure's reason with every detail folded, unless it is the lab's problem, shown
    once above the table."""
    worth = ("%d/%d" % (t.score, t.points) if t.points else "%d/%d bonus" % (t.score, t.bonus))
    out = ["<tr><td class='%s'>%s</td><td>%s%s</td><td class='n'>%s</td><td class='n'>"
           "%.1f s</td></tr>" % (t.status, t.status.upper(), escape(t.name),
                                 " <span class='skipped'>(%s)</span>" % escape(practice_line(t.practice))
                                 if t.practice else "", worth, t.seconds)]
    if t.status == "failed" and t.output.strip() and t.output != lab_problem:
        reason = short_reason(t.output)
        shown = ("same reason as above" if seen.repeats(reason)
                 else "<br>".join(escape(line) for line in reason))
        out.append("<tr><td></td><td colspan='3'>%s<details><summary>every detail</summary>"
                   "<pre>%s</pre></details></td></tr>" % (shown, escape(t.output)))
    elif t.status == "skipped" and t.output and t.output != lab_problem:
        out.append("<tr><td></td><td colspan='3' class='skipped'>%s</td></tr>" % escape(t.output))
    return out


def write_reports(out_dir, labs, seed, device, seconds, allow_practice=False):
    """All three, side by side in out_dir; in practice mode report.html only, unless
    `allow_practice`: results.json and junit.xml are what a course grades from, and an earlier
    run's are removed, so that none is taken for this run's. Returns the names written."""
    written = []
    for name in ("results.json", "junit.xml"):
        path = os.path.join(out_dir, name)
        if practice_of(labs) and not allow_practice:
            if os.path.exists(path):
                os.remove(path)
            continue
        if name == "results.json":
            write_results_json(path, labs, seed, device, seconds)
        else:
            write_junit(path, labs)
        written.append(name)
    write_report_html(os.path.join(out_dir, "report.html"), labs, seed, device, seconds)
    return written + ["report.html"]
