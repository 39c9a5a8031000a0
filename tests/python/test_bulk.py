"""Topology.nodes_info and Cluster.nodes_state: one call for a range of
nodes, equal to the per-node reads; ranges checked."""
import array
import unittest

from gpusched import Cluster, NodeHealth, Topology


class BulkCase(unittest.TestCase):
    def setUp(self):
        self.t = Topology.uniform(["zone", "rack"], [2, 3, 4], 8)
        self.c = Cluster(self.t)
        self.c.allocate(1, {0: [0, 1], 5: "all"})
        self.c.reserve(2, {7: [3]})
        self.c.set_node_health(9, NodeHealth.DOWN)

    def tearDown(self):
        self.c.close()
        self.t.close()

    def test_nodes_state_equals_node_state(self):
        n = self.t.node_count
        for first in range(n + 1):
            for count in (0, 1, 3, n - first):
                if first + count > n:
                    continue
                s = self.c.nodes_state(first, count)
                self.assertIsInstance(s.free, array.array)
                self.assertEqual(len(s.free), count)
                for i in range(count):
                    one = self.c.node_state(first + i)
                    self.assertEqual((s.free[i], s.reserved[i], s.allocated[i], s.health[i]),
                                     (one.free, one.reserved, one.allocated, int(one.health)))
        whole = self.c.nodes_state()
        self.assertEqual(len(whole.health), n)
        self.assertEqual(whole.health[9], NodeHealth.DOWN)
        self.assertEqual(whole.allocated[0], 0b11)

    def test_nodes_info_equals_per_node(self):
        n = self.t.node_count
        info = self.t.nodes_info()
        self.assertEqual(len(info.gpus), n)
        for i in range(n):
            self.assertEqual(info.gpus[i], self.t.node_gpus(i))
            self.assertEqual(info.label_masks[i], self.t.node_label_mask(i))
            self.assertEqual(self.t.classes[info.classes[i]], self.t.node_class(i))
        part = self.t.nodes_info(4, 2)
        self.assertEqual(list(part.gpus), [8, 8])

    def test_ranges_are_checked(self):
        n = self.t.node_count
        for bad in ((n + 1, 0), (0, n + 1), (3, n - 2)):
            with self.assertRaises(ValueError):
                self.c.nodes_state(*bad)
            with self.assertRaises(ValueError):
                self.t.nodes_info(*bad)
        with self.assertRaises(ValueError):
            self.c.nodes_state(-1)
        with self.assertRaises(TypeError):
            self.t.nodes_info("0")
        self.assertEqual(len(self.c.nodes_state(n).free), 0)


if __name__ == "__main__":
    unittest.main()
