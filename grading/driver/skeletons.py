"""A lab not started: a lab file that is still exactly as handed out (its SHA-256 is the one
labs/skeletons.sha256 lists), and the sentence that says so and names its first TODO.

make grade shows such a lab in one sentence instead of a failure under each of its tests.
"""
import hashlib
import os
import re

from building import SOURCE_DIR


def not_started_sentence(path, name, display_path):
    """"not started: ..." for a lab file still as handed out, naming its first TODO; or ""."""
    if not handed_out(path, name):
        return ""
    todo = first_todo(path)
    if not todo:
        return "not started: %s is as handed out" % display_path
    return "not started (the file is as handed out): begin at %s:%d, %s" % (display_path, todo[0], todo[1])


def handed_out(path, name):
    """Whether a lab file is still exactly as handed out: its SHA-256 is the one listed for `name`
    (e.g. 01_vector_add/vector_add.cu) in labs/skeletons.sha256."""
    try:
        listed = skeleton_hashes()
    except (OSError, ValueError):
        return False
    return name in listed and file_sha256(path) == listed[name]


def skeleton_hashes():
    """labs/skeletons.sha256, in sha256sum's format: {"01_vector_add/vector_add.cu": SHA-256} for
    each lab file as handed out (`make test` checks the list against the skeletons)."""
    listed = {}
    with open(os.path.join(SOURCE_DIR, "labs", "skeletons.sha256")) as f:
        for line in f:
            if line.strip():
                digest, name = line.split(None, 1)
                listed[name.strip().lstrip("*")] = digest
    return listed


def file_sha256(path):
    """A file's SHA-256 (hex), or None where there is no such file."""
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def first_todo(path):
    """The first "TODO n" comment of a lab file: (line number, its first sentence), or None."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for number, line in enumerate(lines, 1):
        match = re.search(r"//\s*(TODO\s*\d+\b.*)$", line)
        if not match:
            continue
        text = match.group(1).strip()
        for more in lines[number:]:  # the comment's next lines, up to its end or the next TODO
            follow = re.match(r"\s*//\s+(\S.*)$", more)
            if not follow or "TODO" in follow.group(1) or text.endswith(":"):
                break  # (a line ending in ":" introduces code, which the file shows better)
            text += " " + follow.group(1).strip()
        text = " ".join(text.split()).rstrip(":")
        sentence = re.match(r"(.*?[.;])(\s|$)", text)
        text = sentence.group(1) if sentence else text
        return number, text if len(text) <= 160 else text[:157] + "..."
    return None
