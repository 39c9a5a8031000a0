"""gpusched frag"""
import unittest

from clitest import CliTest


class Frag(CliTest):
    def test_empty_cluster(self):
        j = self.json("frag", "preset:tiny")
        self.assertEqual(j["free_gpus"], 128)
        self.assertEqual([lv["level"] for lv in j["levels"]], ["block", "rack", "node"])
        for lv in j["levels"]:
            self.assertEqual(lv["stranded_gpus"], 0)
            self.assertEqual(lv["gang_gpus"], 128)
            self.assertEqual(lv["fully_free"], lv["domains"])
        self.assertEqual(j["nodes_by_free_gpus"][8], 16)

    def test_scenario(self):
        j = self.json("frag", self.scenario())
        by = {lv["level"]: lv for lv in j["levels"]}
        self.assertEqual(j["free_gpus"], 96)
        # Every job is in block b0: b1 is the only fully free block.
        self.assertEqual(by["block"]["fully_free"], 1)
        self.assertEqual(by["block"]["gang_gpus"], 64)
        self.assertEqual(by["block"]["stranded_gpus"], 32)
        self.assertAlmostEqual(by["block"]["stranded_share"], 1 / 3)
        self.assertEqual(by["block"]["largest_free"], 64)
        # stranded + gang = free at every level
        for lv in j["levels"]:
            self.assertEqual(lv["gang_gpus"] + lv["stranded_gpus"], 96)
        self.assertEqual(by["node"]["largest_free"], 8)
        out = self.ok("frag", self.path("s3.snap"))
        self.assertIn("96 of 128 GPUs free", out)
        self.assertRegex(out, r"block\s+2\s+1\s+64\s+32\s+33\.3%")

    def test_usage(self):
        self.fails("frag", rc=2)
        self.fails("frag", "no-such.snap", rc=1, stderr_has="cannot open")


if __name__ == "__main__":
    unittest.main()
