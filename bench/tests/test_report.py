#!/usr/bin/env python3
"""The test of bench/report.py on a made-up fixture: ctest's `unit.bench_report`, no GPU needed.

    python3 bench/tests/test_report.py [-v]

Runs bench/report.py on bench/tests/fixture (made-up numbers in the bench's format, NOT a
measurement; its README says what it covers) into a temporary folder and checks the Markdown:
the sources' published figures, the fixture's figures beside them, left-out CPU runs, the ratios
the sources claim and the same ratios computed here from the fixture's CSVs, the missing table
reported rather than crashed on; and the plots (PNG and SVG) when matplotlib is installed.
"""
import csv
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
REPORT = os.path.join(ROOT, "bench", "report.py")
FIXTURE = os.path.join(HERE, "fixture")
SOURCES = os.path.join(ROOT, "bench", "sources.json")

sys.path.insert(0, os.path.join(ROOT, "bench"))
import report  # noqa: E402  (for python_with_matplotlib only: the report itself runs as a program)

PRESENT = ["ijcee_table1", "ijcee_table2", "cis750", "stokastik_matmul", "stokastik_convolution"]
MISSING = "stokastik_transpose"


def fixture_ms(table, size, implementation, threads=None, copies=None):
    """A time from the fixture's CSV, read here independently of report.py."""
    with open(os.path.join(FIXTURE, table + ".csv"), encoding="utf-8", newline="") as f:
        lines = [line for line in f if not line.startswith("#")]
    for row in csv.DictReader(lines):
        if (row["size"] == size and row["implementation"] == implementation
                and (threads is None or row["threads"] == threads)
                and (copies is None or row["copies"] == copies)):
            return float(row["ms"])
    raise KeyError((table, size, implementation, threads, copies))


def x(value):
    """A ratio as the report prints it: one decimal below 100, whole above."""
    return "%.1fx" % value if value < 99.95 else "{:,.0f}x".format(value)


def gpu_pair(table, size, implementation, threads=None):
    return (fixture_ms(table, size, implementation, threads, "kernel"),
            fixture_ms(table, size, implementation, threads, "with copies"))


class ReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = cls.tmp.name
        r = subprocess.run([sys.executable, REPORT, "--results", FIXTURE, "--out", cls.out],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        cls.returncode, cls.output = r.returncode, r.stdout
        with open(SOURCES, encoding="utf-8") as f:
            cls.tables = {t["id"]: t for t in json.load(f)["tables"]}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def md(self, table):
        path = os.path.join(self.out, table + ".md")
        self.assertTrue(os.path.exists(path), "no %s.md; report.py said:\n%s" % (table, self.output))
        with open(path, encoding="utf-8") as f:
            return f.read()

    def claim_line(self, text, claim_start):
        """The row of the Ratios table for the claim whose text starts with claim_start."""
        lines = [line for line in text.splitlines() if line.startswith("| " + claim_start)]
        self.assertEqual(len(lines), 1, "no single Ratios row for %r in:\n%s" % (claim_start, text))
        return lines[0]

    def test_exit_status_and_missing_table(self):
        self.assertEqual(self.returncode, 0, self.output)
        self.assertFalse(os.path.exists(os.path.join(self.out, MISSING + ".md")))
        self.assertIn("no %s.csv" % MISSING, self.output)
        with open(os.path.join(self.out, "README.md"), encoding="utf-8") as f:
            index = f.read()
        self.assertIn("No %s.csv in the results, so this table is skipped" % MISSING, index)
        self.assertIn("TEST FIXTURE, not a measurement", index)
        for table in PRESENT:
            self.assertIn(self.tables[table]["title"], index)
        # The tables come in the order of sources.json.
        positions = [index.index(self.tables[t]["title"]) for t in self.tables]
        self.assertEqual(positions, sorted(positions))

    def test_ijcee_table1(self):
        text = self.md("ijcee_table1")
        for published in ("2,169", "| 598 |", "| 275 |", "1,450"):
            self.assertIn(published, text)
        # n and 8n side by side, then MulH published and the one-thread host loop measured here.
        host = fixture_ms("ijcee_table1", "800", "host loop", "1")
        self.assertIn("| 100 | 800 | 2,169 | %g |" % host, text)
        naive, tiled = gpu_pair("ijcee_table1", "800", "lab 04 naive"), \
            gpu_pair("ijcee_table1", "800", "lab 05 tiled")
        self.assertIn("%g / %g" % naive, text)
        self.assertIn("%g / %g" % tiled, text)
        line = self.claim_line(text, "shared memory almost twice")
        self.assertIn("| 2.2x |", line)                                        # 598 / 275
        self.assertIn("%s kernel, %s with copies" % (x(naive[0] / tiled[0]), x(naive[1] / tiled[1])),
                      line)
        line = self.claim_line(text, "shared memory 5 to 8 times")
        self.assertIn("| 7.9x |", line)                                        # 2169 / 275
        self.assertIn("%s kernel, %s with copies" % (x(host / tiled[0]), x(host / tiled[1])), line)
        self.assertIn("lab 05 register blocked (at 800)", text)               # matched by no column
        self.assertIn("| 20 | 160 | 10 | — |", text)                          # a size not measured

    def test_ijcee_table2(self):
        text = self.md("ijcee_table2")
        self.assertIn("| 1 | 11,149 | 90 / 91 |", text)
        self.assertIn("| 4 | 1,531 | — |", text)
        self.assertIn("| 1024 | — | 0.45 / 1.45 |", text)                   # measured here only
        host = fixture_ms("ijcee_table2", "512", "host loop", "1")
        host_all = fixture_ms("ijcee_table2", "512", "host loop", "4")
        self.assertIn("published 357 ms", text)
        self.assertIn("%g ms on 1 thread, %g ms on 4 threads" % (host, host_all), text)
        at256 = gpu_pair("ijcee_table2", "512", "lab 06 dynamic tile", "256")
        line = self.claim_line(text, "with 256 threads")
        self.assertIn("| 4.3x |", line)                                        # 357 / 83
        self.assertIn("%s kernel, %s with copies" % (x(host / at256[0]), x(host / at256[1])), line)

    def test_cis750(self):
        text = self.md("cis750")
        self.assertIn("0.078", text)                                           # CUDA 4 at 32
        self.assertIn("13,542", text)
        self.assertIn("left out (> 30 s)", text)
        self.assertIn("Sequential at 4096 (host loop, 1 thread): left out: over 30 s", text)
        self.assertIn("MPI (8 processes): not rerun", text)
        one_d = gpu_pair("cis750", "4096", "lab 04 naive 1-D")
        strips = gpu_pair("cis750", "4096", "lab 05 register blocked")
        line = self.claim_line(text, "algorithm 4 is 18.3 times")
        self.assertIn("| 18.4x |", line)                                       # 13542 / 736.9
        self.assertIn("%s kernel, %s with copies" % (x(one_d[0] / strips[0]), x(one_d[1] / strips[1])),
                      line)
        seq = fixture_ms("cis750", "1024", "host loop", "1")
        strips = gpu_pair("cis750", "1024", "lab 05 register blocked")
        line = self.claim_line(text, "the best CUDA algorithm")
        self.assertIn("| 875x |", line)                                        # 14934 / 17.06
        self.assertIn("%s kernel, %s with copies" % (x(seq / strips[0]), x(seq / strips[1])), line)

    def test_stokastik_matmul(self):
        text = self.md("stokastik_matmul")
        self.assertIn("| CPU, 1 thread | 33,730 | left out (> 30 s) | host loop, 1 thread |", text)
        self.assertIn("| CPU, 100 threads | 3,020 | 9,000 | host loop, 4 threads |", text)
        line = self.claim_line(text, "over 650 times")
        self.assertTrue(line.endswith("| 649x | — |"), line)                  # ours: left out
        naive = gpu_pair("stokastik_matmul", "2000x1000x5000", "lab 04 naive")
        tiled = gpu_pair("stokastik_matmul", "2000x1000x5000", "lab 05 tiled")
        line = self.claim_line(text, "shared memory beats")
        self.assertIn("| 1.5x |", line)                                        # 85 / 57
        self.assertIn("%s kernel, %s with copies" % (x(naive[0] / tiled[0]), x(naive[1] / tiled[1])),
                      line)

    def test_percent_of_ceiling(self):
        # 2 x 2000 x 1000 x 5000 = 20 GFLOP per product: 0.5 ms is 40,000 GFLOP/s, 200% of the
        # fixture's made-up 20,000; 2000 x 5000 floats in and out are 0.08 GB.
        text = self.md("stokastik_matmul")
        self.assertIn("cuBLAS SGEMM (FP32, 20,000 GFLOP/s)", text)
        self.assertIn("| lab 05 register blocked | 64 | 2000x1000x5000 | 40,000 GFLOP/s | 200% |", text)
        self.assertIn("| lab 04 naive | 256 | 2000x1000x5000 | 10,000 GFLOP/s | 50% |", text)
        direct = fixture_ms("stokastik_convolution", "2000x5000", "lab 07 direct", "1024")
        text = self.md("stokastik_convolution")
        self.assertIn("a device-to-device copy (1,000 GB/s)", text)
        self.assertIn("| lab 07 direct | 1024 | 2000x5000 | %s GB/s | %.0f%% |"
                      % ("{:,.0f}".format(0.08 / (direct / 1e3)), 100 * 0.08 / (direct / 1e3) / 1000), text)

    def test_stokastik_convolution(self):
        text = self.md("stokastik_convolution")
        self.assertIn("| CPU, 1 thread | 11,700 |", text)
        host = fixture_ms("stokastik_convolution", "2000x5000", "host loop", "1")
        direct = gpu_pair("stokastik_convolution", "2000x5000", "lab 07 direct")
        self.assertIn("| P100 (direct, 32 x 32 blocks) | 140 | %g / %g |" % direct, text)
        self.assertIn("| tiled (not in the post) | — |", text)
        line = self.claim_line(text, "the GPU is about 84 times")
        self.assertIn("| 83.6x |", line)                                       # 11700 / 140
        self.assertIn("%s kernel, %s with copies" % (x(host / direct[0]), x(host / direct[1])), line)

    def test_plots(self):
        if report.python_with_matplotlib() is None:
            self.assertIn("plots skipped", self.output)
            self.skipTest("matplotlib is not installed (apt-get install python3-matplotlib): "
                          "the plots were not drawn, and report.py said so")
        for table in PRESENT:
            png, svg = (os.path.join(self.out, table + ext) for ext in (".png", ".svg"))
            self.assertTrue(os.path.exists(png) and os.path.getsize(png) > 1000, png)
            self.assertTrue(os.path.exists(svg) and os.path.getsize(svg) > 1000, svg)
            with open(png, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", png)
            with open(svg, encoding="utf-8") as f:
                self.assertIn("<svg", f.read())
            self.assertIn("](%s.png)" % table, self.md(table))

    def test_without_matplotlib(self):
        """With no matplotlib anywhere the Markdown is still written, and the output says so."""
        with tempfile.TemporaryDirectory() as out:
            # matplotlib hidden from this run, which is told not to look for another Python.
            code = ("import sys, runpy; sys.modules['matplotlib'] = None; "
                    "sys.argv = [%r, '--results', %r, '--out', %r]; "
                    "runpy.run_path(%r, run_name='__main__')" % (REPORT, FIXTURE, out, REPORT))
            env = dict(os.environ, **{report.REEXEC_ENV: "1"})
            r = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=env)
            self.assertEqual(r.returncode, 0, r.stdout)
            self.assertIn("plots skipped", r.stdout)
            self.assertFalse(os.path.exists(os.path.join(out, "cis750.png")))
            with open(os.path.join(out, "cis750.md"), encoding="utf-8") as f:
                self.assertIn("No plot: matplotlib was not found", f.read())

    def test_no_results_is_an_error(self):
        with tempfile.TemporaryDirectory() as empty:
            r = subprocess.run([sys.executable, REPORT, "--results", empty],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            self.assertEqual(r.returncode, 2, r.stdout)
            self.assertIn("no bench results", r.stdout)


if __name__ == "__main__":
    unittest.main()
