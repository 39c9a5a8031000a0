"""gpusched draw"""
import unittest
import xml.etree.ElementTree as ET

from clitest import CliTest

SVG = "{http://www.w3.org/2000/svg}"


class Draw(CliTest):
    def parse(self, path):
        root = ET.parse(path).getroot()
        self.assertEqual(root.tag, SVG + "svg")
        return root

    def texts(self, root):
        return [t.text or "" for t in root.iter(SVG + "text")]

    def test_free(self):
        snap = self.scenario()
        self.ok("draw", snap, "-o", "free.svg")
        root = self.parse(self.path("free.svg"))
        titles = [t.text for t in root.iter(SVG + "title")]
        # one cell per node, each with a tooltip
        self.assertEqual(sum(1 for t in titles if t.startswith("n") and "GPUs free" in t), 16)
        texts = self.texts(root)
        self.assertIn("b0", texts)
        self.assertIn("b1", texts)
        self.assertIn("free GPUs per node", texts)
        self.assertTrue(any("free GPUs by level" in t for t in texts))

    def test_job_colors_and_json(self):
        snap = self.scenario()
        j = self.json("draw", snap, "--color", "job", "-o", "jobs.svg")
        self.assertEqual([(x["id"], x["gpus_drawn"]) for x in j["jobs"]], [(1, 16), (2, 12), (3, 4)])
        self.assertEqual(j["nodes"], 16)
        texts = self.texts(self.parse(self.path("jobs.svg")))
        self.assertIn("job 1 (16)", texts)
        self.assertIn("job 3 (4)", texts)

    def test_stdout_and_domain(self):
        out = self.ok("draw", "preset:gb200-nvl72-1m", "--domain", "z0/b0")
        self.assertTrue(out.startswith("<?xml"))
        self.assertIn("1008 nodes", out)

    def test_too_big(self):
        self.fails("draw", "preset:gb200-nvl72-1m", rc=1, stderr_has="--domain")
        self.fails("draw", "preset:tiny", "--domain", "b9", rc=1, stderr_has="no domain")
        self.fails("draw", "preset:tiny", "--color", "red", rc=2)
        self.fails("draw", "preset:tiny", "--json", rc=2, stderr_has="-o")


if __name__ == "__main__":
    unittest.main()
