#!/usr/bin/env python3
"""What a student's file may include (grading/buildtools/student_symbols.py, foreign_includes):
made-up workbooks, build folders and dependency files, so no compiler is needed.

    python3 grading/tests/test_student_includes.py

A file may read its own tree, the workbook's common/ and the system's headers; any other file of
the workbook or of a build folder is foreign, the reference solutions above all, whether it is
reached by #include, by a link as the file itself, or by a submission folder that is a link into
the workbook.
"""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "buildtools"))
import student_symbols  # noqa: E402


class ForeignIncludes(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.root = os.path.realpath(tmp.name)
        self.workbook = self.make("workbook")
        self.build = self.make("workbook/build")
        for folder in ("common", "solutions/02_lab", "labs/02_lab", "tests/buggy/02_lab"):
            self.make("workbook/" + folder)
        self.solution = self.write("workbook/solutions/02_lab/lab.cu")
        self.common = self.write("workbook/common/check.hpp")
        self.system = "/usr/include/stdio.h"

    def make(self, folder):
        path = os.path.join(self.root, folder)
        os.makedirs(path, exist_ok=True)
        return path

    def write(self, name, text=""):
        path = os.path.join(self.root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return path

    def compiled(self, source, *deps):
        """An object of `source` whose dependency file lists the source and `deps`, as nvcc writes it."""
        obj = os.path.join(self.build, "tests", "%d.o" % len(os.listdir(self.build)))
        os.makedirs(os.path.dirname(obj), exist_ok=True)
        with open(obj + ".d", "w") as f:
            f.write("%s : %s" % (obj, " \\\n    ".join(d.replace(" ", "\\ ") for d in (source,) + deps)) + "\n")
        return obj

    def foreign(self, source, *deps):
        found, complete = student_symbols.foreign_includes(source, [self.compiled(source, *deps)], self.workbook,
                                                           [self.workbook, self.build])
        self.assertTrue(complete)
        return found

    def test_own_tree_common_and_system_headers_are_allowed(self):
        source = self.write("workbook/labs/02_lab/lab.cu")
        helper = self.write("workbook/labs/02_lab/helper with space.cuh")
        other_lab = self.write("workbook/labs/01_other/mine.cuh")
        self.assertEqual(self.foreign(source, helper, other_lab, self.common, self.system), [])

    def test_a_submission_outside_the_workbook_may_include_its_own_files(self):
        source = self.write("class/alice/02_lab/lab.cu")
        own = self.write("class/alice/02_lab/util.cuh")
        self.assertEqual(self.foreign(source, own, self.common, self.system), [])

    def test_the_reference_solution_is_foreign_however_it_is_reached(self):
        source = self.write("class/alice/02_lab/lab.cu")
        self.assertEqual(self.foreign(source, self.common, self.solution), [self.solution])
        relative = os.path.join(os.path.dirname(source), "..", "..", "..", "workbook", "solutions", "02_lab", "lab.cu")
        self.assertEqual(self.foreign(source, relative), [self.solution])
        link = os.path.join(os.path.dirname(source), "also_mine.cuh")
        os.symlink(self.solution, link)
        self.assertEqual(self.foreign(source, link), [self.solution])

    def test_files_of_the_build_and_of_other_workbook_folders_are_foreign(self):
        source = self.write("workbook/labs/02_lab/lab.cu")
        variant = self.write("workbook/build/tests/buggy/02_lab/variant.cu")
        dev = self.write("workbook/bench/dev/versions.cu")
        self.assertEqual(self.foreign(source, variant, dev), [variant, dev])

    def test_a_file_that_is_a_link_to_the_solution_is_foreign(self):
        source = os.path.join(self.make("class/bob/02_lab"), "lab.cu")
        os.symlink(self.solution, source)
        self.assertEqual(self.foreign(source), [self.solution])

    def test_a_submission_folder_that_links_into_the_workbook_is_not_a_tree_of_its_own(self):
        os.symlink(os.path.join(self.workbook, "solutions"), os.path.join(self.root, "carol"))
        source = os.path.join(self.root, "carol", "02_lab", "lab.cu")
        self.assertEqual(self.foreign(source), [self.solution])

    def test_the_workbooks_own_trees_build_when_reached_through_a_link(self):
        # The solutions and the buggy variants are the workbook's own builds: their tree is theirs.
        self.assertEqual(self.foreign(self.solution, self.common), [])
        variant = self.write("workbook/tests/buggy/02_lab/variant.cu")
        self.assertEqual(self.foreign(variant, self.common), [])
        os.symlink(self.workbook, os.path.join(self.root, "linked"))
        linked = os.path.join(self.root, "linked")
        found, _ = student_symbols.foreign_includes(
            os.path.join(linked, "solutions", "02_lab", "lab.cu"),
            [self.compiled(os.path.join(linked, "solutions", "02_lab", "lab.cu"), self.common)], linked,
            [linked, os.path.join(linked, "build")])
        self.assertEqual(found, [])

    def test_an_object_without_a_dependency_file_is_said_to_be_unchecked(self):
        source = self.write("workbook/labs/02_lab/lab.cu")
        found, complete = student_symbols.foreign_includes(source, [os.path.join(self.build, "none.o")],
                                                           self.workbook, [self.workbook])
        self.assertEqual((found, complete), ([], False))


if __name__ == "__main__":
    unittest.main()
