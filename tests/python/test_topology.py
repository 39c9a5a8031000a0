"""Topology and TopologyBuilder."""
import gc
import unittest

import gstest
from gstest import needs
import gpusched
from gpusched import Topology, TopologyBuilder


class TestPresets(unittest.TestCase):
    def test_preset_list(self):
        names = Topology.presets()
        self.assertIn("tiny", names)
        self.assertIn("gb200-nvl72-1m", names)

    def test_tiny(self):
        with gstest.tiny() as t:
            self.assertEqual(t.levels, ("block", "rack"))
            self.assertEqual((t.node_count, len(t), t.gpu_count), (16, 16, 128))
            self.assertEqual(t.classes, ("h100",))
            self.assertEqual(t.domain_count("block"), 2)
            self.assertEqual(t.domain_count(1), 4)
            self.assertEqual(t.domain_names("rack"), ["b0/r0", "b0/r1", "b1/r0", "b1/r1"])
            self.assertEqual(t.domain_nodes("rack", "b1/r0"), range(8, 12))
            self.assertEqual(t.domain_nodes(0, 1), range(8, 16))
            self.assertEqual(t.domain_parent("rack", "b1/r0"), 1)
            self.assertEqual(t.node_domain("n9", "rack"), 2)
            self.assertEqual(t.node_name(3), "n3")
            self.assertEqual(t.node("n3"), 3)
            self.assertEqual(t.node_gpus("n3"), 8)
            self.assertEqual(t.node_class(0), "h100")
            self.assertEqual(t.node_labels(0), ())
            self.assertEqual(t.node_label_mask(0), 0)
            self.assertGreater(t.memory_bytes, 0)
            self.assertIn("nodes=16", repr(t))

    def test_unknown_preset(self):
        with self.assertRaises(gpusched.NotFound) as cm:
            Topology.preset("no-such")
        self.assertIn("no-such", cm.exception.message)
        self.assertEqual(cm.exception.name, "GPUSCHED_ENOENT")

    def test_big_preset(self):
        with Topology.preset("gb200-nvl72-1m") as t:
            self.assertEqual(t.gpu_count, 1032192)
            self.assertEqual(t.levels, ("zone", "block", "rack"))
            self.assertEqual(t.domain_count("rack"), 8 * 32 * 56)


class TestUniform(unittest.TestCase):
    def test_shape(self):
        t = Topology.uniform(["zone", "rack"], [2, 3, 4], 4, gpu_class="gb200")
        self.assertEqual((t.node_count, t.gpu_count), (24, 96))
        self.assertEqual(t.classes, ("gb200",))
        self.assertEqual(t.domain_count("rack"), 6)
        self.assertEqual(t.domain_names("rack"),
                         ["z0/r0", "z0/r1", "z0/r2", "z1/r0", "z1/r1", "z1/r2"])
        self.assertEqual(t.domain("rack", "z1/r2"), 5)
        self.assertEqual(t.domain_nodes("rack", "z1/r2"), range(20, 24))
        self.assertEqual(t.node_name(23), "n23")

    def test_default_class(self):
        t = Topology.uniform(["rack"], [1, 2], 8)
        self.assertEqual(t.classes, ("default",))

    def test_bad_arguments(self):
        with self.assertRaisesRegex(ValueError, "fanout needs 3"):
            Topology.uniform(["a", "b"], [1, 2], 8)
        with self.assertRaises(TypeError):
            Topology.uniform("ab", [1, 2, 3], 8)
        with self.assertRaises(ValueError):
            Topology.uniform(["a"], [1, -2], 8)
        with self.assertRaises(TypeError):
            Topology.uniform(["a"], [1, 2], "8")
        with self.assertRaises(gpusched.InvalidArgument) as cm:
            Topology.uniform(["a"], [1, 0], 8)
        self.assertTrue(cm.exception.message)
        with self.assertRaises(ValueError):
            Topology.uniform(["a"], [1, 2], 2**32)
        with self.assertRaises(gpusched.InvalidArgument):
            Topology.uniform(["a"], [1, 2], 65)
        with self.assertRaises(gpusched.LimitExceeded) as cm:
            Topology.uniform(["a", "b"], [65536, 65536, 2], 1)
        self.assertIn("2^32", cm.exception.message)

    def test_constructor_is_not_public(self):
        with self.assertRaises(TypeError):
            Topology()


class TestNamesAndIndices(unittest.TestCase):
    def setUp(self):
        self.t = gstest.tiny()

    def tearDown(self):
        self.t.close()

    def test_level(self):
        self.assertEqual(self.t.level("rack"), 1)
        self.assertEqual(self.t.level(0), 0)
        with self.assertRaises(gpusched.NotFound):
            self.t.level("zone")
        with self.assertRaises(ValueError):
            self.t.level(2)
        with self.assertRaises(TypeError):
            self.t.level(1.0)
        self.assertEqual(self.t.level_or_nodes("node"), 2)

    def test_node(self):
        with self.assertRaises(gpusched.NotFound) as cm:
            self.t.node("n99")
        self.assertIn("n99", str(cm.exception))
        with self.assertRaises(ValueError):
            self.t.node(16)
        with self.assertRaises(ValueError):
            self.t.node(-1)
        with self.assertRaises(TypeError):
            self.t.node_gpus(None)

    def test_domain(self):
        with self.assertRaises(gpusched.NotFound):
            self.t.domain("rack", "b9/r9")
        with self.assertRaises(ValueError):
            self.t.domain("rack", 4)
        with self.assertRaises(ValueError):
            self.t.domain_parent("block", 0)

    def test_class(self):
        self.assertEqual(self.t.gpu_class("h100"), 0)
        self.assertEqual(self.t.gpu_class(0), 0)
        with self.assertRaises(gpusched.NotFound):
            self.t.gpu_class("a100")
        with self.assertRaises(ValueError):
            self.t.gpu_class(1)

    def test_label(self):
        with self.assertRaises(gpusched.NotFound):
            self.t.label("ib")
        with self.assertRaises(ValueError):
            self.t.label(0)

    def test_closed(self):
        self.t.close()
        self.assertTrue(self.t.closed)
        with self.assertRaisesRegex(ValueError, "closed Topology"):
            self.t.node_count
        self.t.close()
        self.assertIn("closed", repr(self.t))


class TestBuilder(unittest.TestCase):
    def build(self):
        with TopologyBuilder(["block", "rack"]) as b:
            b.add_node(["b1", "r0"], "gpu-c", 4, gpu_class="a100", labels=["ib"])
            b.add_node(["b0", "r0"], "gpu-a", 8, gpu_class="h100", labels=["ib", "nvme"])
            b.add_node(["b0", "r1"], "gpu-b", 8, gpu_class="h100")
            return b.freeze()

    def test_build(self):
        t = self.build()
        self.assertEqual(t.levels, ("block", "rack"))
        self.assertEqual((t.node_count, t.gpu_count), (3, 20))
        self.assertEqual(set(t.classes), {"a100", "h100"})
        self.assertEqual(set(t.labels), {"ib", "nvme"})
        # freeze sorts nodes so that each domain is contiguous
        blocks = {t.domain_name("block", t.node_domain(n, "block")) for n in ("gpu-a", "gpu-b")}
        self.assertEqual(blocks, {"b0"})
        self.assertEqual(t.node_gpus("gpu-c"), 4)
        self.assertEqual(t.node_class("gpu-c"), "a100")
        self.assertEqual(set(t.node_labels("gpu-a")), {"ib", "nvme"})
        self.assertEqual(t.node_label_mask("gpu-a"), t.label_mask(["ib", "nvme"]))
        self.assertEqual(sorted(t.domain_nodes("block", "b0")),
                         sorted([t.node("gpu-a"), t.node("gpu-b")]))

    def test_errors(self):
        b = TopologyBuilder()
        with self.assertRaises(gpusched.WrongState) as cm:
            b.add_node(["b0"], "n0", 8)
        self.assertTrue(cm.exception.message)
        with self.assertRaises(gpusched.WrongState):
            b.freeze()
        b.set_levels(["rack"])
        with self.assertRaises(gpusched.WrongState):
            b.set_levels(["rack"])
        with self.assertRaisesRegex(ValueError, "path has 2 components"):
            b.add_node(["b0", "r0"], "n0", 8)
        with self.assertRaises(ValueError):
            b.add_node(["r0"], "n0", 65)
        with self.assertRaises(ValueError):
            b.add_node(["r0"], "n\0", 8)
        with self.assertRaises(TypeError):
            b.add_node(["r0"], 7, 8)
        b.add_node(["r0"], "n0", 8)
        with self.assertRaises(gpusched.AlreadyExists) as cm:
            b.add_node(["r0"], "n0", 8)
        self.assertIn("n0", cm.exception.message)
        with self.assertRaises(gpusched.LimitExceeded) as cm:
            b.add_node(["r0"], "n1", 8, labels=[f"l{i}" for i in range(65)])
        self.assertIn("64 labels", cm.exception.message)
        with self.assertRaises(ValueError):
            TopologyBuilder([])
        with self.assertRaises(gpusched.InvalidArgument):
            TopologyBuilder(["a", "a"])
        t = b.freeze()
        self.assertEqual(t.node_count, 1)
        b.close()
        self.assertEqual(t.node_count, 1)

    def test_gc_frees_handles(self):
        for _ in range(100):
            b = TopologyBuilder(["r"])
            b.add_node(["r0"], "n", 8)
            b.freeze()
        gc.collect()


def shape(t):
    """What makes two topologies identical, as plain values."""
    return (t.levels, t.classes, t.labels, t.resources, t.node_names(),
            [t.node_gpus(n) for n in range(t.node_count)],
            [t.node_class(n) for n in range(t.node_count)],
            [t.node_labels(n) for n in range(t.node_count)],
            [t.node_resources(n) for n in range(t.node_count)],
            [t.domain_names(lv) for lv in range(len(t.levels))])


@needs("gpusched_topo_parse", "gpusched_topo_export", "gpusched_topo_builder_parse")
class TestText(unittest.TestCase):
    def test_export_parse_roundtrip(self):
        t = gstest.tiny()
        text = t.export()
        self.assertIsInstance(text, str)
        t2 = Topology.parse(text)
        self.assertEqual(shape(t2), shape(t))
        # a parsed topology exports to the text that parses back to it
        self.assertEqual(Topology.parse(t2.export()).export(), t2.export())
        self.assertEqual(shape(Topology.from_text(text.encode())), shape(t))
        with TopologyBuilder() as b:
            b.parse(text)
            self.assertEqual(shape(b.freeze()), shape(t))

    def test_parse_error_has_position(self):
        with self.assertRaises(gpusched.ParseError) as cm:
            Topology.parse("this is not a topology\n")
        self.assertRegex(cm.exception.message, r"\d")
        with self.assertRaises(TypeError):
            Topology.parse(42)
        b = TopologyBuilder()
        with self.assertRaises(gpusched.ParseError):
            b.parse("this is not a topology\n")


RES_TEXT = """levels block rack
resources cpu memory
node b0/r[0-1] n[0-] count=2 gpus=8 cpu=64000 memory=262144
node b1/r0 small gpus=1 memory=1024
node b1/r0 bare gpus=2
"""


@needs("gpusched_topo_resource_count", "gpusched_topo_resource_name", "gpusched_topo_resource_find",
       "gpusched_topo_node_resource", "gpusched_topo_builder_resource_add",
       "gpusched_topo_builder_node_resource_set")
class TestResources(unittest.TestCase):
    def test_from_text(self):
        with Topology.parse(RES_TEXT) as t:
            self.assertEqual(t.resources, ["cpu", "memory"])
            for n in ("n0", "n1", "n2", "n3"):
                self.assertEqual(t.node_resources(n), {"cpu": 64000, "memory": 262144})
            self.assertEqual(t.node_resources("small"), {"cpu": 0, "memory": 1024})
            self.assertEqual(t.node_resources("bare"), {"cpu": 0, "memory": 0})
            self.assertEqual(t.node_resources(t.node("small")), t.node_resources("small"))
            self.assertEqual(t.node_resource("small", "memory"), 1024)
            self.assertEqual(t.node_resource(0, 0), 64000)
            self.assertEqual(t.resource("memory"), 1)
            self.assertEqual(t.resource(1), 1)
            with self.assertRaises(gpusched.NotFound):
                t.resource("nic")
            with self.assertRaises(ValueError):
                t.resource(2)
            with self.assertRaises(gpusched.NotFound):
                t.node_resources("n99")
            # a copy: changing it changes nothing
            t.resources.append("nic")
            self.assertEqual(t.resources, ["cpu", "memory"])

    def test_none_declared(self):
        with gstest.tiny() as t:
            self.assertEqual(t.resources, [])
            self.assertEqual(t.node_resources("n3"), {})
            with self.assertRaises(ValueError):
                t.resource(0)

    def test_parse_errors(self):
        with self.assertRaises(gpusched.ParseError) as cm:
            Topology.parse("levels r\nresources cpu\nnode r0 a gpus=1 cpu=-1\n")
        self.assertIn("line 3, column 22", cm.exception.message)
        with self.assertRaises(gpusched.ParseError) as cm:
            Topology.parse("levels r\nresources cpu\nnode r0 a gpus=1 cpu=4294967296\n")
        self.assertIn("too large", cm.exception.message)
        with self.assertRaises(gpusched.ParseError) as cm:
            Topology.parse("levels r\nnode r0 a gpus=1 cpu=1\n")
        self.assertIn("unknown property 'cpu'", cm.exception.message)

    def test_export_parse_snapshot_roundtrip(self):
        t = Topology.parse(RES_TEXT)
        text = t.export()
        self.assertIn("resources cpu memory\n", text)
        self.assertIn("node b1/r0 small gpus=1 class=default memory=1024\n", text)
        self.assertEqual(shape(Topology.parse(text)), shape(t))
        c = gpusched.Cluster(t)
        back = gpusched.Cluster.restore(c.snapshot())
        self.assertEqual(shape(back.topology), shape(t))
        self.assertEqual(back.topology.node_resources("n2"), {"cpu": 64000, "memory": 262144})

    def test_builder(self):
        with TopologyBuilder(["rack"]) as b:
            cpu = b.add_resource("cpu")
            self.assertEqual(cpu, 0)
            b.add_node(["r1"], "late", 8)
            b.add_node(["r0"], "n0", 8)
            mem = b.add_resource("memory")
            self.assertEqual((mem, b.add_resource("cpu")), (1, 0))
            b.set_node_resource("n0", cpu, 64000)
            b.set_node_resource("n0", mem, 2**32 - 1)
            b.set_node_resource("late", mem, 5)
            t = b.freeze()
        self.assertEqual(t.resources, ["cpu", "memory"])
        self.assertEqual(t.node_resources("n0"), {"cpu": 64000, "memory": 2**32 - 1})
        self.assertEqual(t.node_resources("late"), {"cpu": 0, "memory": 5})

    def test_builder_errors(self):
        b = TopologyBuilder(["rack"])
        b.add_node(["r0"], "n0", 8)
        for reserved in ("gpus", "class", "labels", "count"):
            with self.assertRaises(gpusched.InvalidArgument) as cm:
                b.add_resource(reserved)
            self.assertIn("reserved", cm.exception.message)
        with self.assertRaises(gpusched.InvalidArgument):
            b.add_resource("has space")
        with self.assertRaises(gpusched.InvalidArgument) as cm:
            b.set_node_resource("n0", 0, 1)
        self.assertIn("not declared", cm.exception.message)
        for i in range(gpusched.topology.MAX_RESOURCES):
            self.assertEqual(b.add_resource(f"r{i}"), i)
        with self.assertRaises(gpusched.LimitExceeded):
            b.add_resource("ninth")
        with self.assertRaises(gpusched.NotFound) as cm:
            b.set_node_resource("n9", 0, 1)
        self.assertIn("n9", cm.exception.message)
        with self.assertRaises(ValueError):
            b.set_node_resource("n0", 0, -1)
        with self.assertRaises(ValueError):
            b.set_node_resource("n0", 0, 2**32)
        with self.assertRaises(TypeError):
            b.add_resource(7)
        t = b.freeze()
        self.assertEqual(len(t.resources), 8)
        self.assertEqual(t.node_resources("n0"), {f"r{i}": 0 for i in range(8)})
        b.close()


if __name__ == "__main__":
    unittest.main()
