#!/usr/bin/env python3
"""docs/figures/check_figures.py can fail: it passes on the tree, and fails on a planted
disagreement in a figure, in a note's percentage, in a walkthrough's percentage or figure, and on
a measured figure that names no measurement of the committed run."""
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "docs", "figures"))
import check_figures  # noqa: E402


class CheckFigures(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.figures = os.path.join(tmp.name, "reference_run.csv")
        self.claims = os.path.join(tmp.name, "claims.json")
        shutil.copy(check_figures.FIGURES, self.figures)
        shutil.copy(check_figures.CLAIMS, self.claims)

    def run_check(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = check_figures.main(["--figures", self.figures, "--claims", self.claims])
        return status, out.getvalue()

    def rows(self):
        return check_figures.read_figures(self.figures)

    def rewrite_row(self, pick, change):
        """Changes the first figure row that `pick` accepts; returns it as it was."""
        header, rows = self.rows()
        row = next(r for r in rows if pick(r))
        before = dict(row)
        change(row)
        check_figures.write_figures(self.figures, header, rows)
        return before

    def add_claim(self, pick, change):
        with open(self.claims) as f:
            claims = json.load(f)
        claim = dict(next(c for c in claims["claims"] if pick(c)))
        change(claim)
        claims["claims"].append(claim)
        with open(self.claims, "w") as f:
            json.dump(claims, f)
        return claim

    def test_the_tree_agrees_with_its_committed_run(self):
        status, out = self.run_check()
        self.assertEqual(status, 0, out)
        self.assertIn("all agree", out)

    def test_a_stale_figure_fails(self):
        def stale(row):
            row["value"] = check_figures.written(float(row["value"]) * 1.3, row["value"])
        was = self.rewrite_row(lambda r: r["unit"] == "GFLOP/s" and r["bench"].startswith("cis750"), stale)
        status, out = self.run_check()
        self.assertEqual(status, 1, out)
        self.assertIn("but the committed run gives %s (%s)" % (was["value"], was["bench"]), out)

    def test_a_stale_percentage_in_a_note_fails(self):
        def stale(row):
            row["note"] = row["note"].replace("% of", "1% of", 1)
        was = self.rewrite_row(lambda r: "% of cuBLAS" in r["note"], stale)
        status, out = self.run_check()
        self.assertEqual(status, 1, out)
        self.assertIn("its note says %s1%% of cuBLAS" % was["note"].split("%")[0], out)

    def test_a_measured_figure_the_run_does_not_measure_fails(self):
        def unkeyed(row):
            row["bench"] = ""
        was = self.rewrite_row(lambda r: r["kind"] == "measured" and r["unit"] == "GB/s", unkeyed)
        status, out = self.run_check()
        self.assertEqual(status, 1, out)
        self.assertIn("%s: a measured figure that names no measurement of the committed run" % was["label"], out)

    def test_a_walkthrough_percentage_that_disagrees_fails(self):
        # The register-blocked step's share read as if it were the naive kernel's.
        claim = self.add_claim(lambda c: "percent" in c and "register blocked" in c["value"],
                               lambda c: c.update(value=c["value"].replace("lab 05 register blocked", "lab 04 naive")))
        status, out = self.run_check()
        self.assertEqual(status, 1, out)
        self.assertIn("the line %r says" % claim["line"], out)

    def test_a_walkthrough_figure_that_disagrees_fails(self):
        # The padded transpose's bandwidth read as if it were the unpadded one's.
        claim = self.add_claim(lambda c: "figure" in c and c["value"].endswith("lab 03 padded|256") and c["unit"] == "GB/s",
                               lambda c: c.update(value=c["value"].replace("padded", "unpadded")))
        status, out = self.run_check()
        self.assertEqual(status, 1, out)
        self.assertIn("the line %r says" % claim["line"], out)
        self.assertIn("GB/s, but the committed run gives", out)


if __name__ == "__main__":
    unittest.main()
