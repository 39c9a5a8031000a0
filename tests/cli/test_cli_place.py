"""gpusched place"""
import unittest

from clitest import CliTest


class Place(CliTest):
    def test_fits_plan_only(self):
        out = self.ok("place", "preset:tiny", "--gpus", 16, "--pod-gpus", 8, "--required", "rack")
        self.assertIn("fits: 16 GPUs", out)
        self.assertIn("plan only", out)
        self.assertIn("why:", out)
        self.assertIn("n0", out)

    def test_json_fields(self):
        j = self.json("place", "preset:tiny", "--gpus", 16, "--pod-gpus", 8, "--required", "rack",
                      "--job", 7)
        self.assertTrue(j["fits"])
        self.assertEqual(j["reason"], "ok")
        self.assertEqual(j["job"], 7)
        self.assertFalse(j["committed"])
        self.assertEqual([n["name"] for n in j["nodes"]], ["n0", "n1"])
        self.assertEqual(j["nodes"][0]["gpus"], list(range(8)))
        self.assertEqual(j["pods"], [0, 1])
        self.assertEqual(j["domains"], {"block": ["b0"], "rack": ["b0/r0"]})
        self.assertEqual(j["locality"], {"block": 1, "rack": 1, "node": 2})

    def test_does_not_fit_explains(self):
        code, out, err = self.run_cli("place", "preset:tiny", "--gpus", 40, "--required", "rack")
        self.assertEqual(code, 3, err)
        self.assertIn("does not fit", out)
        self.assertIn("the largest rack has 32 GPUs, 40 asked", out)
        j = self.json("place", "preset:tiny", "--gpus", 40, "--required", "rack", rc=3)
        self.assertFalse(j["fits"])
        self.assertEqual(j["reason"], "required")
        self.assertEqual(j["nodes"], [])

    def test_slices_on_the_1m_preset(self):
        # The example: 72-GPU slices, one NVL72 rack each.
        j = self.json("place", "preset:gb200-nvl72-1m", "--gpus", 144, "--slices", "72@rack")
        self.assertTrue(j["fits"])
        self.assertEqual(len(j["domains"]["rack"]), 2)
        self.assertEqual(len(j["nodes"]), 36)
        j = self.json("place", "preset:gb200-nvl72-1m", "--gpus", 144, "--pod-gpus", 4,
                      "--required", "rack", rc=3)
        self.assertEqual(j["reason"], "required")

    def test_class_labels_avoid(self):
        m = self.mixed()
        j = self.json("place", m, "--gpus", 8, "--class", "a100")
        self.assertEqual({n["name"] for n in j["nodes"]}, {"n5", "n6"})
        j = self.json("place", m, "--gpus", 8, "--label", "nvme", "--pod-gpus", 8)
        self.assertEqual([n["name"] for n in j["nodes"]], ["n0"])
        j = self.json("place", m, "--gpus", 8, "--pod-gpus", 8, "--no-label", "ib")
        self.assertEqual([n["name"] for n in j["nodes"]], ["n4"])
        j = self.json("place", m, "--gpus", 8, "--pod-gpus", 8, "--no-label", "ib", "--avoid", "n4", rc=3)
        self.assertFalse(j["fits"])
        j = self.json("place", m, "--gpus", 16, "--whole-nodes", "--avoid", "n0", "--avoid", "1")
        self.assertEqual([n["name"] for n in j["nodes"]], ["n3", "n4"])

    def test_commit_writes_snapshot(self):
        snap = self.scenario()
        info = self.json("snapshot", "info", snap)
        self.assertEqual(info["jobs"]["running"], 3)
        self.assertEqual(info["gpu_states"]["allocated"], 32)
        # The default job id is one above the largest running one.
        j = self.json("place", snap, "--gpus", 8)
        self.assertEqual(j["job"], 4)
        # An id already running cannot be committed again.
        code, out, err = self.run_cli("place", snap, "--gpus", 8, "--job", 1, "-o", "x.snap")
        self.assertEqual(code, 1)
        self.assertIn("GPUSCHED_EEXIST", err)

    def test_preempt(self):
        snap = self.scenario()
        # Rack b0/r0 (n0-n3) holds every job: 1 on n0 and n1, 2 and 3 on n2
        # and n3. Two whole nodes there, every other node avoided, need
        # job 1 (the only preemptible one) evicted.
        args = ["place", snap, "--gpus", 16, "--pod-gpus", 8, "--required", "rack", "--priority", 5,
                "--preempt"]
        for n in range(4, 16):
            args += ["--avoid", f"n{n}"]
        j = self.json(*args)
        self.assertTrue(j["fits"])
        self.assertEqual(j["kind"], "preemption")
        self.assertEqual(j["victims"], [1])
        self.assertEqual([n["name"] for n in j["nodes"]], ["n0", "n1"])
        self.assertEqual(j["cost"], 0)
        self.assertEqual(j["gpus_moved_or_evicted"], 16)
        out = self.ok(*args)
        self.assertIn("victims: 1 jobs", out)
        # Lower priority: nothing is eligible.
        j = self.json(*[a if a != 5 else 0 for a in args], rc=3)
        self.assertFalse(j["fits"])

    def test_defrag(self):
        snap = self.scenario()
        args = ["place", snap, "--gpus", 32, "--required", "rack", "--priority", 5, "--defrag"]
        for n in list(range(4, 16)):
            args += ["--avoid", f"n{n}"]
        j = self.json(*args, rc=3)
        self.assertEqual(j["kind"], "defragmentation")
        j = self.json("place", snap, "--gpus", 8, "--pod-gpus", 8, "--defrag")
        self.assertTrue(j["fits"])
        self.assertEqual(j["moves"], [])

    def test_bad_arguments(self):
        self.fails("place", "preset:tiny", rc=2, stderr_has="--gpus")
        self.fails("place", "preset:tiny", "--gpus", "x", rc=2, stderr_has="not a valid value")
        self.fails("place", "preset:tiny", "--gpus", 8, "--required", "row", rc=1,
                   stderr_has="the levels are block rack")
        self.fails("place", "preset:tiny", "--gpus", 8, "--slices", "72", rc=1, stderr_has="S@LEVEL")
        self.fails("place", "preset:tiny", "--gpus", 8, "--class", "b200", rc=1, stderr_has="no such GPU class")
        self.fails("place", "preset:tiny", "--gpus", 8, "--avoid", "n99", rc=1, stderr_has="no node")
        self.fails("place", "preset:tiny", "--gpus", 8, "--preempt", "--defrag", rc=2)
        # A library error names the code and the field.
        err = self.fails("place", "preset:tiny", "--gpus", 8, "--pod-gpus", 3, rc=1)
        self.assertIn("GPUSCHED_", err)


if __name__ == "__main__":
    unittest.main()
