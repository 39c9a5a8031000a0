"""gpusched topo show|check|convert"""
import unittest

from clitest import CliTest


class TopoShow(CliTest):
    def test_preset_text(self):
        out = self.ok("topo", "show", "preset:tiny")
        self.assertIn("nodes: 16", out)
        self.assertIn("GPUs: 128", out)
        self.assertIn("h100 (128 GPUs)", out)
        self.assertRegex(out, r"rack\s+4\s+4\s+32")
        self.assertIn("memory: topology", out)

    def test_mixed_json(self):
        j = self.json("topo", "show", self.mixed())
        self.assertEqual([lv["name"] for lv in j["levels"]], ["block", "rack"])
        self.assertEqual(j["levels"][0]["domains"], 2)
        self.assertEqual(j["levels"][1]["domains"], 3)
        self.assertEqual((j["levels"][1]["min_nodes"], j["levels"][1]["max_nodes"]), (2, 3))
        self.assertEqual((j["levels"][0]["min_gpus"], j["levels"][0]["max_gpus"]), (8, 40))
        self.assertEqual(j["nodes"], 7)
        self.assertEqual(j["gpus"], 48)
        self.assertEqual(j["gpus_per_node"], {"4": 2, "8": 5})
        self.assertEqual({c["name"]: c["gpus"] for c in j["classes"]}, {"h100": 40, "a100": 8})
        self.assertEqual({c["name"]: c["nodes"] for c in j["labels"]}, {"ib": 4, "nvme": 2})
        self.assertGreater(j["memory"]["topology_bytes"], 0)
        self.assertGreater(j["memory"]["bytes_per_gpu"], 0)

    def test_big_preset(self):
        j = self.json("topo", "show", "preset:gb200-nvl72-1m")
        self.assertEqual(j["gpus"], 1032192)
        self.assertEqual([lv["domains"] for lv in j["levels"]], [8, 256, 14336])
        self.assertLess(j["memory"]["bytes_per_gpu"], 32)

    def test_stdin(self):
        from clitest import MIXED
        rc, out, err = self.run_cli("topo", "show", "-", stdin=MIXED)
        self.assertEqual(rc, 0, err)
        self.assertIn("nodes: 7", out)

    def test_snapshot_input(self):
        snap = self.scenario()
        j = self.json("topo", "show", snap)
        self.assertEqual(j["kind"], "snapshot")
        self.assertEqual(j["gpus"], 128)


class TopoCheck(CliTest):
    def test_ok(self):
        out = self.ok("topo", "check", self.mixed())
        self.assertIn("ok", out)
        for preset in ("tiny", "h100-superpod", "gb200-nvl72-1m"):
            with self.subTest(preset=preset):
                self.assertTrue(self.json("topo", "check", f"preset:{preset}")["ok"])

    def test_parse_error_names_line_and_column(self):
        bad = self.write("bad.txt", "levels block rack\nnode b0/r0 n0 gpus=8\nnode b0/r0 n1 gpus=x\n")
        err = self.fails("topo", "check", bad)
        self.assertIn("bad.txt", err)
        self.assertRegex(err, r"line 3")
        self.assertRegex(err, r"column \d+")
        j = self.json("topo", "check", bad, rc=1)
        self.assertFalse(j["ok"])
        self.assertIn("line 3", j["problem"])

    def test_missing_file(self):
        err = self.fails("topo", "check", "no-such-file.txt")
        self.assertIn("no-such-file.txt", err)
        self.assertIn("cannot open", err)

    def test_unknown_preset_lists_presets(self):
        err = self.fails("topo", "show", "preset:nope")
        self.assertIn("preset:tiny", err)


class TopoConvert(CliTest):
    def test_text_round_trip(self):
        once = self.ok("topo", "convert", self.mixed())
        self.write("once.txt", once)
        twice = self.ok("topo", "convert", "once.txt")
        self.assertEqual(once, twice)

    def test_text_snapshot_text(self):
        text = self.ok("topo", "convert", self.mixed())
        self.ok("topo", "convert", self.mixed(), "--to", "snapshot", "-o", "t.snap")
        with open(self.path("t.snap"), "rb") as f:
            self.assertEqual(f.read(8), b"GSCLSNAP")
        self.assertTrue(self.json("snapshot", "check", self.path("t.snap"))["ok"])
        back = self.ok("topo", "convert", "t.snap")
        self.assertEqual(text, back)

    def test_preset_round_trip(self):
        # A preset exports as one ranged line; once parsed, one line per
        # node: the topology is the same (topo check), the text form is
        # stable from the first parse on.
        self.ok("topo", "convert", "preset:tiny", "-o", "tiny.txt")
        self.assertTrue(self.json("topo", "check", "tiny.txt")["ok"])
        a = self.ok("topo", "convert", "tiny.txt")
        self.write("a.txt", a)
        self.assertEqual(a, self.ok("topo", "convert", "a.txt"))

    def test_json(self):
        j = self.json("topo", "convert", self.mixed())
        self.assertEqual(j["levels"], ["block", "rack"])
        self.assertEqual(j["classes"], ["h100", "a100"])
        self.assertEqual(j["labels"], ["ib", "nvme"])
        self.assertEqual(len(j["nodes"]), 7)
        self.assertEqual(j["nodes"][0], {"name": "n0", "domain": "b0/r0", "gpus": 8, "class": "h100",
                                         "labels": ["ib", "nvme"]})
        self.assertEqual(j["nodes"][6]["domain"], "b1/r0")
        # --to json -o writes the same document to a file
        self.ok("topo", "convert", self.mixed(), "--to", "json", "-o", "m.json")
        import json
        with open(self.path("m.json")) as f:
            self.assertEqual(json.load(f), j)

    def test_bad_format(self):
        err = self.fails("topo", "convert", self.mixed(), "--to", "yaml", rc=2)
        self.assertIn("text, json or snapshot", err)


if __name__ == "__main__":
    unittest.main()
