"""What grading produces: a Test (its points, and whether it passed, failed or was skipped) and a
Lab (its tests, and its score and bonus out of theirs).

Every other part of the grader fills these in or reads them: checker_process.py sets each
test's status from the checker's signed results, screen.py prints them, reports.py writes them.
"""


def practice_line(reason):
    """The words every report puts on a result of practice mode, with the reason."""
    return "practice mode: not for grading (%s)" % reason


def practice_of(labs):
    """Why these labs' results are not for grading (practice mode), or "" when they are."""
    return next((lab.practice for lab in labs if lab.practice), "")


class Test:
    """One graded test: what it is worth and what happened to it."""

    def __init__(self, name, points, bonus=0):
        self.name, self.points, self.bonus = name, points, bonus
        self.status = "failed"   # passed | failed | skipped
        self.output = "did not run: the checker stopped before reaching this test"
        self.seconds = 0.0
        # Practice mode (CUDA IPC missing, docs/grading.md): why this result is not for grading,
        # as the checker said on its signed channel; "" for a result that is.
        self.practice = ""

    @property
    def max_score(self):
        return self.points + self.bonus

    @property
    def score(self):
        return self.max_score if self.status == "passed" else 0


class Lab:
    """One lab: its tests in run order, and what kept them from running, if anything."""

    def __init__(self, lab_id, source, folder=None):
        self.id, self.source, self.dir = lab_id, source, folder or lab_id
        self.number, _, name = lab_id.partition("_")
        self.title = name.replace("_", " ")
        self.tests = []
        self.problem = ""        # a lab-level failure: compile error, no GPU, ...
        self.not_started = ""    # "not started: ..." when the file is still as handed out
        self.unmatched = ""      # grade.py's --test, when it matched none of the lab's tests: not run
        self.log_path = ""

    # Bonus points are earned beyond the total: a lab is "12/12 +2/2 bonus".
    @property
    def score(self):
        return sum(t.points for t in self.tests if t.status == "passed")

    @property
    def max_score(self):
        return sum(t.points for t in self.tests)

    @property
    def bonus(self):
        return sum(t.bonus for t in self.tests if t.status == "passed")

    @property
    def max_bonus(self):
        return sum(t.bonus for t in self.tests)

    @property
    def practice(self):
        """Why the lab's results are not for grading (practice mode), or "" when they are."""
        return next((t.practice for t in self.tests if t.practice), "")

    @property
    def all_skipped(self):
        """Every test skipped itself (a part built for an architecture this GPU is not): nothing
        of the lab was graded."""
        return bool(self.tests) and all(t.status == "skipped" for t in self.tests)

    def summary(self):
        text = "%d/%d" % (self.score, self.max_score)
        if self.max_bonus:
            text += " +%d/%d bonus" % (self.bonus, self.max_bonus)
        return text

