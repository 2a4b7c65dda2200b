"""The nccl-tests layout fixtures (tests/data/nccl-tests/formats) are what their script writes."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FORMATS = os.path.join(ROOT, "tests", "data", "nccl-tests", "formats")


class NcclFormatFixtures(unittest.TestCase):
    def test_script_writes_the_committed_files(self):
        with tempfile.TemporaryDirectory() as out:
            subprocess.run([sys.executable, os.path.join(FORMATS, "make_formats.py"), out], check=True, timeout=60)
            names = sorted(os.listdir(out))
            self.assertEqual(names, ["a100-runb-C1.txt", "a100-runb-I1-S1.txt", "a100-runb.json"])
            for name in names:
                with open(os.path.join(out, name), "rb") as a, open(os.path.join(FORMATS, name), "rb") as b:
                    self.assertEqual(a.read(), b.read(), name)


if __name__ == "__main__":
    unittest.main()
