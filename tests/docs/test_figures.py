#!/usr/bin/env python3
"""docs/figures/check_figures.py can fail: it passes on the tree, and fails on a planted
disagreement in a figure, in a note's percentage and in a walkthrough's percentage."""
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

    def plant(self, old, new):
        with open(self.figures, encoding="utf-8") as f:
            text = f.read()
        self.assertEqual(text.count(old), 1, old)
        with open(self.figures, "w", encoding="utf-8") as f:
            f.write(text.replace(old, new))

    def test_the_tree_agrees_with_its_committed_run(self):
        status, out = self.run_check()
        self.assertEqual(status, 0, out)
        self.assertIn("all agree", out)

    def test_a_stale_figure_fails(self):
        self.plant("going further)\",42089,", "going further)\",29672,")
        status, out = self.run_check()
        self.assertEqual(status, 1, out)
        self.assertIn("is 29672 GFLOP/s, but the committed run gives 42089", out)

    def test_a_stale_percentage_in_a_note_fails(self):
        self.plant("42089,GFLOP/s,measured,NVIDIA H100,2026-11-23,reference run,82% of cuBLAS",
                   "42089,GFLOP/s,measured,NVIDIA H100,2026-11-23,reference run,57% of cuBLAS")
        status, out = self.run_check()
        self.assertEqual(status, 1, out)
        self.assertIn("its note says 57% of cuBLAS, but 42089 over 51540 is 82%", out)

    def test_a_walkthrough_percentage_that_disagrees_fails(self):
        with open(self.claims) as f:
            claims = json.load(f)
        # The register-blocked step's 57% read as if it were the warp-tiled step's share.
        claims["claims"].append(dict(claims["claims"][-1], percent=0))
        with open(self.claims, "w") as f:
            json.dump(claims, f)
        status, out = self.run_check()
        self.assertEqual(status, 1, out)
        self.assertIn("says 57%, but the committed run gives 82%", out)


if __name__ == "__main__":
    unittest.main()
