"""gpusched snapshot info|check"""
import unittest

from clitest import CliTest


class Snapshot(CliTest):
    def test_info(self):
        snap = self.scenario()
        out = self.ok("snapshot", "info", snap)
        self.assertIn("cluster snapshot, format version", out)
        self.assertIn("3 running (1 preemptible, 1 movable)", out)
        self.assertIn("32 allocated (25.0%)", out)
        j = self.json("snapshot", "info", snap)
        self.assertEqual(j["nodes"], 16)
        self.assertEqual(j["gpus"], 128)
        self.assertEqual(j["health"], {"up": 16, "cordoned": 0, "draining": 0, "down": 0})
        self.assertEqual(j["gpu_states"], {"free_usable": 96, "free_on_unavailable_nodes": 0,
                                           "reserved": 0, "allocated": 32})
        self.assertEqual(j["jobs"]["running"], 3)
        self.assertEqual((j["jobs"]["priority_min"], j["jobs"]["priority_max"]), (0, 1))
        self.assertAlmostEqual(j["utilization"], 0.25)
        self.assertEqual(j["reservations"], 0)

    def test_check_ok(self):
        snap = self.scenario()
        self.assertIn("ok", self.ok("snapshot", "check", snap))
        self.assertTrue(self.json("snapshot", "check", snap)["ok"])

    def test_check_corrupt(self):
        snap = self.scenario()
        with open(snap, "rb") as f:
            data = bytearray(f.read())
        data[40] ^= 0xff
        bad = self.write("bad.snap", bytes(data))
        err = self.fails("snapshot", "check", bad)
        self.assertIn("GPUSCHED_ECORRUPT", err)
        j = self.json("snapshot", "check", bad, rc=1)
        self.assertFalse(j["ok"])
        self.assertIn("does not restore", j["problem"])
        short = self.write("short.snap", bytes(data[:20]))
        self.assertFalse(self.json("snapshot", "check", short, rc=1)["ok"])

    def test_not_a_snapshot(self):
        err = self.fails("snapshot", "info", self.mixed())
        self.assertIn("not a cluster snapshot", err)
        self.assertIn("gpusched topo", err)

    def test_usage(self):
        self.fails("snapshot", "list", "x", rc=2, stderr_has="info or check")
        self.fails("snapshot", "info", rc=2)


if __name__ == "__main__":
    unittest.main()
