"""Cluster.move: a running job placed again with its shape; repair after a
node fails; plan only changes nothing; bad input."""
import unittest

import gpusched
from gpusched import Cluster, NodeHealth, Topology


class MoveCase(unittest.TestCase):
    """2 zones x 4 racks x 4 nodes x 8 GPUs."""

    def setUp(self):
        self.t = Topology.uniform(["zone", "rack"], [2, 4, 4], 8)
        self.c = Cluster(self.t)

    def tearDown(self):
        self.c.close()
        self.t.close()

    def state(self):
        c = self.c
        return (c.free_gpus(), sorted(c.jobs()), {j: c.allocation(j) for j in c.jobs()})

    def test_repair_after_a_node_fails(self):
        c = self.c
        c.allocate(5, {1: "all", 2: "all"}, priority=4, cost_hint=9, preemptible=True)
        for n in (0, 3):
            c.allocate(100 + n, {n: "all"})
        c.set_node_health(2, NodeHealth.DOWN)
        before = self.state()
        plan = c.move(5)
        self.assertTrue(plan.ok, plan.message)
        self.assertEqual(self.state(), before, "a plan-only move changed the cluster")
        # Whole nodes of 8, inside one rack: rack 0 has one up node free of
        # others (node 1, its own), so the job goes to a rack with two.
        self.assertEqual(len(plan.nodes), 2)
        self.assertNotIn(2, plan.nodes)
        self.assertEqual({n // 4 for n in plan.nodes}.__len__(), 1, "the job left its rack shape")
        done = c.move(5, commit=True)
        self.assertTrue(done.ok and done.committed)
        self.assertEqual(sorted(c.allocation(5).nodes), sorted(plan.nodes))
        job = c.job(5)
        self.assertEqual((job.priority, job.cost_hint, job.preemptible), (4, 9, True))
        self.assertEqual(c.job_count, 3)
        c.check()

    def test_nowhere_to_go_and_bad_input(self):
        c = self.c
        for n in range(32):
            c.allocate(100 + n, {n: "all"})
        c.set_node_health(7, NodeHealth.DRAINING)
        before = self.state()
        p = c.move(107, commit=True)
        self.assertFalse(p.ok)
        self.assertIn("usable free GPUs", p.message)
        with self.assertRaises(gpusched.DoesNotFit):
            p.raise_if_failed()
        self.assertEqual(self.state(), before)
        with self.assertRaises(gpusched.NotFound):
            c.move(99)
        with self.assertRaises(TypeError):
            c.move(107, commit=1)
        with self.assertRaises(ValueError):
            c.move(-1)
        self.assertEqual(self.state(), before)


if __name__ == "__main__":
    unittest.main()
