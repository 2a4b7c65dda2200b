"""scripts/check_doc_blocks.py: its block reader, its `...` matching, and a whole run against a
stand-in binary (a shell script printing fixed lines), so these checks need no build."""
import importlib.util
import os
import stat
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "check_doc_blocks.py")
spec = importlib.util.spec_from_file_location("check_doc_blocks", SCRIPT)
cdb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cdb)


class Matching(unittest.TestCase):
    def test_exact_lines_and_trailing_space(self):
        self.assertIsNone(cdb.first_mismatch(["a", "b "], ["a ", "b"]))

    def test_a_changed_line_is_named(self):
        self.assertEqual(cdb.first_mismatch(["a", "step 37.252 ms", "c"], ["a", "step 37.189 ms", "c"]), 1)

    def test_ellipsis_stands_for_any_run_of_lines(self):
        self.assertIsNone(cdb.first_mismatch(["head", "   ...", "tail"], ["head", "x", "y", "tail"]))
        self.assertIsNone(cdb.first_mismatch(["head", "...", "tail"], ["head", "tail"]))
        self.assertIsNone(cdb.first_mismatch(["...", "b", "...", "d"], ["a", "b", "c", "d"]))
        # Lines shown after the ellipsis still have to be there.
        self.assertIsNotNone(cdb.first_mismatch(["head", "...", "tail"], ["head", "x", "tale"]))

    def test_more_or_fewer_lines_differ(self):
        self.assertIsNotNone(cdb.first_mismatch(["a"], ["a", "b"]))
        self.assertIsNotNone(cdb.first_mismatch(["a", "b"], ["a"]))


class Blocks(unittest.TestCase):
    def test_command_with_continuations_and_its_output(self):
        text = "x\n```\n$ build/ddpsim run \\\n    --set a=1\nout 1\nout 2\n```\n```\nplain block\n```\n"
        got = list(cdb.blocks(text))
        self.assertEqual(got, [(3, "build/ddpsim run --set a=1", ["out 1", "out 2"])])

    def test_a_prompt_outside_a_fence_is_prose(self):
        self.assertEqual(list(cdb.blocks("see\n$ build/ddpsim run\nbelow\n")), [])


class WholeRun(unittest.TestCase):
    def run_with(self, doc, printed):
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "ddpsim")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\nprintf '%s\\n'\n" % printed.replace("\n", "\\n"))
            os.chmod(fake, os.stat(fake).st_mode | stat.S_IEXEC)
            md = os.path.join(d, "doc.md")
            with open(md, "w") as f:
                f.write(doc)
            return subprocess.run([sys.executable, SCRIPT, "--ddpsim", fake, md], capture_output=True, text=True,
                                  timeout=60)

    def test_a_doc_that_shows_the_output_passes_and_a_stale_one_fails(self):
        doc = "```\n$ build/ddpsim run\nstep time 37.189 ms\n...\nend\n```\n"
        ok = self.run_with(doc, "step time 37.189 ms\nmiddle\nend")
        self.assertEqual(ok.returncode, 0, ok.stdout + ok.stderr)
        stale = self.run_with(doc, "step time 37.252 ms\nmiddle\nend")
        self.assertEqual(stale.returncode, 1, stale.stdout)
        self.assertIn("FAIL", stale.stdout)
        self.assertIn("37.189", stale.stdout)

    def test_no_block_at_all_is_a_failure(self):
        self.assertEqual(self.run_with("no blocks here\n", "x").returncode, 1)


if __name__ == "__main__":
    unittest.main()
