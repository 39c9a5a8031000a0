"""Cluster: allocation, release, reservations, node health, aggregates,
fragmentation, jobs, snapshots, check()."""
import os
import tempfile
import unittest

import gstest
from gstest import needs
import gpusched
from gpusched import Cluster, NodeHealth, GpuState, Allocation


def state(c):
    """Everything observable about a cluster's state, for "nothing changed"."""
    t = c.topology
    return (c.free_gpus(), c.jobs(), c.reservations(),
            [c.node_state(n) for n in range(t.node_count)],
            [c.allocation(j) for j in c.jobs()])


@needs("gpusched_cluster_new", "gpusched_cluster_allocate")
class TestCluster(gstest.TinyClusterCase):
    def test_empty(self):
        c = self.c
        self.assertEqual(c.free_gpus(), 128)
        self.assertEqual(c.free_nodes(), 16)
        self.assertEqual(c.free_gpus("rack", "b0/r1"), 32)
        self.assertEqual(c.free_nodes("block", 1), 8)
        self.assertEqual(c.nodes_with_free(8), 16)
        self.assertEqual(c.histogram(), [0] * 8 + [16])
        self.assertEqual(c.job_count, 0)
        self.assertEqual(c.jobs(), [])
        self.assertEqual(c.reservations(), [])
        self.assertEqual(c.node_state("n0"), (0xff, 0, 0, NodeHealth.UP))
        self.assertEqual(c.gpu_state(0, 7), (GpuState.FREE, 0))
        self.assertEqual(c.utilization(), 0.0)
        self.assertEqual(c.topology.node_names(), self.t.node_names())
        self.assertGreater(c.memory_bytes, 0)
        c.check()

    def test_allocate_and_release(self):
        c = self.c
        c.allocate(7, {"n0": "all", "n1": [0, 1]}, priority=5, tenant=3, start_time=100,
                   cost_hint=9, preemptible=True)
        self.assertEqual(c.free_gpus(), 118)
        self.assertEqual(c.jobs(), [7])
        self.assertIn(7, c)
        self.assertNotIn(8, c)
        job = c.job(7)
        self.assertEqual(job, gpusched.Job(7, 5, 3, 100, 9, True))
        a = c.allocation(7)
        self.assertEqual(a, Allocation([0, 1], [0xff, 0x3]))
        self.assertEqual(a.gpus, 10)
        self.assertEqual(a.by_name(), {"n0": list(range(8)), "n1": [0, 1]})
        self.assertEqual(list(a), [(0, list(range(8))), (1, [0, 1])])
        self.assertEqual(c.node_state("n1").allocated, 0x3)
        self.assertEqual(c.gpu_state("n1", 1), (GpuState.ALLOCATED, 7))
        self.assertEqual(c.node_jobs("n1"), [7])
        self.assertEqual(c.nodes_with_free(8), 14)
        self.assertEqual(c.histogram()[6], 1)
        before = c.job(7)
        c.update_job(7, priority=-2, preemptible=False)
        self.assertEqual(c.job(7).priority, -2)
        self.assertFalse(c.job(7).preemptible)
        self.assertEqual(c.job(7)._replace(priority=before.priority, preemptible=before.preemptible),
                         before)
        c.update_job(7, tenant=None, cost_hint=None)  # None: unchanged
        c.update_job(7)
        self.assertEqual(c.job(7).priority, -2)
        with self.assertRaises(TypeError) as cm:
            c.update_job(7, -3)  # the fields are keywords
        with self.assertRaises(TypeError) as cm:
            c.update_job(7, prority=-3)
        self.assertIn("unexpected keyword argument 'prority'", str(cm.exception))
        c.check()
        c.release(7)
        self.assertEqual(c.free_gpus(), 128)
        with self.assertRaises(gpusched.NotFound) as cm:
            c.release(7)
        self.assertTrue(cm.exception.message)
        with self.assertRaises(gpusched.NotFound):
            c.job(7)
        with self.assertRaises(gpusched.NotFound):
            c.allocation(7)

    def test_allocate_accepts_pairs_masks_and_allocations(self):
        c = self.c
        c.allocate(1, [(3, 0b1010), ("n2", range(4))])
        self.assertEqual(c.allocation(1), Allocation([2, 3], [0xf, 0b1010]))
        c.allocate(2, Allocation([5], [1]))
        self.assertEqual(c.allocation(2).gpus, 1)

    def test_allocate_errors_change_nothing(self):
        c = self.c
        c.allocate(1, {"n0": [0]})
        before = state(c)
        with self.assertRaises(gpusched.AlreadyExists):
            c.allocate(1, {"n1": [0]})
        with self.assertRaises(gpusched.Busy) as cm:
            c.allocate(2, {"n1": [0], "n0": [0, 1]})
        self.assertTrue(cm.exception.message)
        self.assertEqual(state(c), before)
        # caught in Python, before C
        with self.assertRaises(ValueError):
            c.allocate(3, {"n0": [8]})
        with self.assertRaises(ValueError):
            c.allocate(3, {"n0": 0x100})
        with self.assertRaises(ValueError):
            c.allocate(3, {})
        with self.assertRaises(ValueError):
            c.allocate(3, {"n0": []})
        with self.assertRaises(ValueError):
            c.allocate(3, [("n0", [1]), (0, [2])])
        with self.assertRaises(ValueError):
            c.allocate(-1, {"n1": [0]})
        with self.assertRaises(ValueError):
            c.allocate(3, {"n1": [0]}, priority=2**31)
        with self.assertRaises(TypeError):
            c.allocate(3, {"n1": [0]}, preemptible=1)
        with self.assertRaises(TypeError):
            c.allocate(3, "n1")
        with self.assertRaises(TypeError):
            c.allocate("3", {"n1": [0]})
        with self.assertRaises(gpusched.NotFound):
            c.allocate(3, {"nx": [0]})
        with self.assertRaises(TypeError):
            c.update_job(1, colour="red")
        self.assertEqual(state(c), before)

    def test_node_health(self):
        c = self.c
        c.allocate(1, {"n4": [0, 1]})
        c.allocate(2, {"n4": [5]})
        hit = c.set_node_health("n4", NodeHealth.DOWN)
        self.assertEqual(hit, [1, 2])
        self.assertEqual(c.node_health("n4"), NodeHealth.DOWN)
        self.assertEqual(c.free_gpus(), 120)
        self.assertEqual(c.histogram()[0], 1)
        with self.assertRaises(gpusched.WrongState):
            c.allocate(3, {"n4": [7]})
        self.assertEqual(c.set_node_health(5, "cordoned"), [])
        self.assertEqual(c.set_node_health("n4", "up"), [1, 2])
        with self.assertRaises(ValueError):
            c.set_node_health(5, "sick")
        with self.assertRaises(ValueError):
            c.set_node_health(5, 4)
        c.check()

    def test_reservations(self):
        c = self.c
        c.reserve(9, {"n8": "all"})
        self.assertEqual(c.reservations(), [9])
        self.assertEqual(c.reservation(9), Allocation([8], [0xff]))
        self.assertEqual(c.gpu_state("n8", 0), (GpuState.RESERVED, 9))
        self.assertEqual(c.node_state("n8").reserved, 0xff)
        with self.assertRaises(gpusched.Busy):
            c.allocate(1, {"n8": [0]})
        c.allocate(9, {"n8": [0, 1]})
        self.assertEqual(c.reservations(), [])
        self.assertEqual(c.free_gpus(), 126)
        c.reserve(10, {"n9": [0]})
        c.unreserve(10)
        with self.assertRaises(gpusched.NotFound):
            c.unreserve(10)
        with self.assertRaises(gpusched.NotFound):
            c.reservation(10)
        c.check()

    def test_release_to_reservation(self):
        c = self.c
        c.allocate(1, {"n0": [0, 1], "n1": [7]})
        c.reserve(2, {"n2": [0]})
        c.release_to_reservation(1, 2)
        self.assertEqual(c.jobs(), [])
        self.assertEqual(c.reservation(2), Allocation([0, 1, 2], [0x3, 0x80, 0x1]))
        self.assertEqual(c.gpu_state("n0", 1), (GpuState.RESERVED, 2))
        with self.assertRaises(gpusched.NotFound) as cm:
            c.release_to_reservation(1, 2)
        self.assertTrue(cm.exception.message)
        with self.assertRaises(ValueError):
            c.release_to_reservation(1, -2)
        c.allocate(2, {"n0": [0]})
        self.assertEqual(c.free_gpus(), 127)
        c.check()

    def test_frag(self):
        c = self.c
        self.assertEqual(c.frag("rack"), (4, 0, 128))
        c.allocate(1, {"n0": [0]})
        f = c.frag("rack")
        self.assertEqual(f.free_domains, 3)
        self.assertEqual(f.stranded_gpus, 31)
        self.assertEqual(f.gang_gpus, 96)
        self.assertEqual(c.frag("node").free_domains, 15)
        self.assertEqual(c.frag(2), c.frag("node"))
        with self.assertRaises(ValueError):
            c.frag(3)

    def test_aggregate_arguments(self):
        with self.assertRaises(ValueError):
            self.c.free_gpus("rack")
        with self.assertRaises(ValueError):
            self.c.free_gpus(domain=1)
        with self.assertRaises(ValueError):
            self.c.nodes_with_free(65)
        with self.assertRaises(gpusched.NotFound):
            self.c.free_gpus("rack", "b7/r7")

    def test_closed_and_gc(self):
        c = Cluster(self.t)
        with c:
            pass
        with self.assertRaises(ValueError):
            c.free_gpus()
        for _ in range(50):
            Cluster(self.t).allocate(1, {0: [0]})
        with self.assertRaises(TypeError):
            Cluster("tiny")

    def test_topology_outlives_its_python_object(self):
        t = gpusched.Topology.preset("tiny")
        c = Cluster(t)
        t.close()
        c.allocate(1, {"n0": [0]})
        self.assertEqual(c.free_gpus(), 127)
        c.close()


@needs("gpusched_cluster_snapshot", "gpusched_cluster_restore")
class TestSnapshot(gstest.TinyClusterCase):
    def test_snapshot_restore(self):
        c = self.c
        c.allocate(1, {"n0": [0, 1]}, tenant=4)
        c.reserve(2, {"n3": [7]})
        c.set_node_health("n15", "draining")
        data = c.snapshot()
        self.assertIsInstance(data, bytes)
        with Cluster.restore(data) as r:
            self.assertEqual(r.snapshot(), data)
            self.assertEqual(r.job(1).tenant, 4)
            self.assertEqual(r.topology.node_names(), self.t.node_names())
            self.assertEqual(r.node_health("n15"), NodeHealth.DRAINING)
            r.check()
        with Cluster.restore(bytearray(data)) as r:
            self.assertEqual(r.free_gpus(), c.free_gpus())
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "state.bin")
            c.save(p)
            with Cluster.load(p) as r:
                self.assertEqual(r.snapshot(), data)

    def test_file_errors_raise_io_failure(self):
        """Cluster.load and save raise the class DecisionLog.read raises for
        the same failure: gpusched.IOFailure (GPUSCHED_EIO), not OSError."""
        with tempfile.TemporaryDirectory() as d:
            missing = os.path.join(d, "missing.bin")
            failures = [
                (lambda: Cluster.load(missing), "Cluster.load", missing),
                (lambda: Cluster.load(d), "Cluster.load", d),
                (lambda: self.c.save(d), "Cluster.save", d),
                (lambda: self.c.save(os.path.join(d, "no", "such.bin")), "Cluster.save", "no"),
                (lambda: gpusched.DecisionLog.read(missing), "gpusched_fairq_log_read", missing),
            ]
            for call, function, path in failures:
                with self.subTest(function=function, path=path):
                    with self.assertRaises(gpusched.IOFailure) as cm:
                        call()
                    e = cm.exception
                    self.assertNotIsInstance(e, OSError)
                    self.assertEqual((e.code, e.name, e.function), (-43, "GPUSCHED_EIO", function))
                    self.assertIn(path, e.message)
            self.assertEqual(os.listdir(d), [], "nothing was written")

    def test_restore_rejects_bad_images(self):
        data = self.c.snapshot()
        with self.assertRaises(gpusched.CorruptData) as cm:
            Cluster.restore(data[:len(data) // 2])
        self.assertTrue(cm.exception.message)
        bad = bytearray(data)
        bad[-1] ^= 0xff
        with self.assertRaises((gpusched.CorruptData, gpusched.UnsupportedVersion)):
            Cluster.restore(bytes(bad))
        with self.assertRaises(TypeError):
            Cluster.restore("not bytes")


if __name__ == "__main__":
    unittest.main()
