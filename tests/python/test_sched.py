"""gpusched.Scheduler: queues and quotas, submit, the cycle's decisions
(starts, reservations, waits with their numbers and messages), job ends,
node failures, preemption of borrowed capacity, parameters and bad input."""
import unittest

import gpusched
from gpusched import (Cluster, JobStatus, SchedOrder, SchedParam, Scheduler, Topology, WaitReason)


class SchedCase(unittest.TestCase):
    """2 blocks x 3 racks x 4 nodes x 4 GPUs = 96 GPUs, unless a subclass
    gives another topology."""

    def topology(self):
        return Topology.uniform(["block", "rack"], [2, 3, 4], 4)

    def setUp(self):
        self.t = self.topology()
        self.c = Cluster(self.t)
        self.s = Scheduler(self.c)

    def tearDown(self):
        self.s.close()
        self.c.close()
        self.t.close()


class TestQueues(SchedCase):
    def test_tree_quotas_and_usage(self):
        org = self.s.add_queue("org", quota=16)
        a = self.s.add_queue("a", "org", quota=32)
        self.assertEqual(self.s.queue("a"), a)
        self.assertEqual(self.s.queues, ["root", "org", "a"])
        self.assertEqual(self.s.usage(org).quota, 48)
        self.s.set_quota("a", 40, borrowing_limit=0)
        self.assertEqual(self.s.usage("org").quota, 56)
        b = self.s.add_queue("b", weight=3)
        self.s.move_queue("a", b)
        self.assertEqual(self.s.usage("org").quota, 16)
        self.assertEqual(self.s.usage(b).quota, 40)

    def test_bad_queues(self):
        self.s.add_queue("a")
        with self.assertRaises(gpusched.AlreadyExists):
            self.s.add_queue("a")
        with self.assertRaises(gpusched.InvalidArgument) as e:
            self.s.add_queue("has space")
        self.assertIn("character", e.exception.message)
        with self.assertRaises(gpusched.NotFound):
            self.s.queue("nobody")
        with self.assertRaises(ValueError):
            self.s.queue(99)
        self.s.add_queue("child", "a")
        with self.assertRaises(gpusched.InvalidArgument) as e:
            self.s.move_queue("a", "child")
        self.assertIn("cycle", e.exception.message)
        with self.assertRaises(gpusched.OutOfRange) as e:
            self.s.set_quota("a", 1 << 63)
        with self.assertRaises(gpusched.OutOfRange):
            self.s.set_quota("a", 1, resource=5)

    def test_parameters(self):
        self.assertEqual(self.s.get_param(SchedParam.RESV_DEPTH), 1)
        self.s.set_param("order", SchedOrder.FIFO)
        self.assertEqual(self.s.get_param("ORDER"), SchedOrder.FIFO)
        self.assertEqual(Scheduler.param_bounds("resv_depth"), (0, 64))
        with self.assertRaises(gpusched.OutOfRange):
            self.s.set_param("resv_depth", 65)
        with self.assertRaises(ValueError):
            self.s.set_param("nonsense", 1)
        s2 = Scheduler(self.c, half_life=100, strict=1)
        self.assertEqual(s2.get_param("half_life"), 100)
        s2.close()


class TestCycle(SchedCase):
    def test_starts_reservation_and_backfill(self):
        q = self.s.add_queue("q", quota=200)
        self.s.submit(1, q, 64, pod_gpus=4, submit_time=0, duration_limit=100)
        d = self.s.cycle(0)
        self.assertEqual([st.job_id for st in d.starts], [1])
        self.assertEqual(sum(bin(m).count("1") for m in d.starts[0].masks), 64)
        self.assertEqual(self.s.job_state(1)[0], JobStatus.RUNNING)
        # A big gang waits with a reservation at 100; a short one backfills,
        # a long one does not.
        self.s.submit(2, q, 96, pod_gpus=4, submit_time=1, duration_limit=50)
        self.s.submit(3, q, 8, pod_gpus=4, submit_time=2, duration_limit=10)
        self.s.submit(4, q, 16, pod_gpus=4, submit_time=3, duration_limit=500)
        d = self.s.cycle(5)
        self.assertFalse(d.quiet)
        self.assertEqual([st.job_id for st in d.starts], [3])
        self.assertEqual(len(d.reservations), 1)
        r = d.reservations[0]
        self.assertEqual((r.job_id, r.time, r.level, len(r.nodes)), (2, 100, None, 24))
        waits = {w.job_id: w for w in d.waits}
        self.assertEqual(waits[2].reason, WaitReason.FIT)
        self.assertEqual(waits[2].time, 100)
        self.assertIn("reserved from 100", waits[2].message)
        self.assertEqual(waits[4].reason, WaitReason.RESERVATION)
        self.assertEqual(waits[4].blocking_job, 2)
        self.assertIn("behind a reservation", waits[4].message)
        self.assertEqual(self.s.job_state(4)[1].reason, WaitReason.RESERVATION)
        # Gang 3 started after the reservation was made: the next cycle
        # places the reservation again on the state after it (it is not
        # quiet), and decides the same; the one after is quiet.
        d = self.s.cycle(6)
        self.assertFalse(d.quiet)
        self.assertEqual(d.starts, ())
        self.assertEqual((d.reservations[0].job_id, d.reservations[0].time), (2, 100))
        self.assertTrue(self.s.cycle(7).quiet)
        # The jobs end; the big gang starts on time.
        self.s.end(3, 15)
        self.s.end(1, 100)
        d = self.s.cycle(100)
        self.assertEqual([st.job_id for st in d.starts], [2])
        self.assertEqual(self.s.counts(), (1, 1))
        self.s.check()

    def test_quota_wait_has_numbers(self):
        a = self.s.add_queue("team-a", quota=8, borrowing_limit=0)
        self.s.submit(1, a, 8)
        self.s.submit(2, a, 4, submit_time=1)
        d = self.s.cycle(0)
        (w,) = d.waits
        self.assertEqual((w.job_id, w.reason, w.queue, w.used, w.limit, w.requested),
                         (2, WaitReason.QUOTA, a, 8, 8, 4))
        self.assertIn("team-a", w.message)
        self.s.cancel(2)
        self.assertEqual(self.s.counts(), (0, 1))

    def test_reclaim_of_borrowed_capacity(self):
        a = self.s.add_queue("a", quota=48)
        b = self.s.add_queue("b", quota=48)
        for i in range(24):
            self.s.submit(100 + i, a, 4, pod_gpus=4, preemptible=True, submit_time=i)
        d = self.s.cycle(0)
        self.assertEqual(len(d.starts), 24, "a borrows b's idle half")
        self.assertEqual(self.s.usage(a).used, 96)
        self.s.submit(1, b, 16, pod_gpus=4, submit_time=30)
        d = self.s.cycle(1)
        self.assertEqual([st.job_id for st in d.starts], [1])
        self.assertEqual(len(d.evictions), 4)
        self.assertTrue(all(f == 1 for _, f in d.evictions))
        self.assertTrue(all(v >= 112 for v, _ in d.evictions), "borrowed jobs go, the last started first")
        for v, _ in d.evictions:
            self.assertEqual(self.s.job_state(v)[0], JobStatus.PENDING)
        self.s.check()

    def test_preempt_max_gpus_spares_large_gangs(self):
        s = Scheduler(self.c, preempt_max_gpus=32)
        self.assertEqual(s.get_param(SchedParam.PREEMPT_MAX_GPUS), 32)
        a = s.add_queue("a", quota=48)
        b = s.add_queue("b", quota=48)
        s.submit(1, b, 64, pod_gpus=4, preemptible=True, submit_time=0)
        s.submit(2, b, 16, pod_gpus=4, preemptible=True, submit_time=0)
        self.assertEqual(len(s.cycle(1).starts), 2)
        s.submit(3, a, 48, pod_gpus=4, submit_time=2)
        d = s.cycle(3)
        self.assertEqual(list(d.evictions), [], "the 64-GPU gang is spared, the 16-GPU one is not enough")
        self.assertEqual(s.job_state(1)[0], JobStatus.RUNNING)
        s.set_param("preempt_max_gpus", 0)
        s.submit(4, a, 48, pod_gpus=4, submit_time=4)
        d = s.cycle(5)
        self.assertEqual(list(d.evictions), [], "a gang keeps the flags it started with")
        s.check()
        s.close()

    def test_keep_resv(self):
        with Cluster(self.t) as c:
            s = Scheduler(c)
            self.assertEqual(s.get_param(SchedParam.KEEP_RESV), 1, "kept across cycles by default")
            s.set_param("keep_resv", 0)
            self.assertEqual(s.get_param(SchedParam.KEEP_RESV), 0)
            with self.assertRaises(gpusched.OutOfRange):
                s.set_param(SchedParam.KEEP_RESV, 2)
            s.close()
            s = Scheduler(c, keep_resv=False)
            self.assertEqual(s.get_param(SchedParam.KEEP_RESV), 0)
            s.close()

    def test_large_gangs_go_first(self):
        for large, head in ((0, 3), (96, 2)):
            with Cluster(self.t) as c:
                s = Scheduler(c, large_gpus=large)
                self.assertEqual(s.get_param(SchedParam.LARGE_GPUS), large)
                light = s.add_queue("light", quota=96)
                heavy = s.add_queue("heavy", quota=96)
                s.submit(1, heavy, 64, duration_limit=100, submit_time=0)
                self.assertEqual([x.job_id for x in s.cycle(0).starts], [1])
                s.submit(2, heavy, 96, duration_limit=50, submit_time=0)
                s.submit(3, light, 64, duration_limit=50, submit_time=1)
                d = s.cycle(10)
                self.assertEqual([r.job_id for r in d.reservations], [head],
                                 "the heavy queue's large gang is the head only when large")
                s.check()
                s.close()

    def test_node_down_and_bad_input(self):
        q = self.s.add_queue("q", quota=96)
        self.s.submit(1, q, 4)
        d = self.s.cycle(0)
        node = d.starts[0].nodes[0]
        self.s.node_health(node, 3, 1)
        d = self.s.cycle(2)
        self.assertEqual(d.evictions[0], (1, 0))
        self.assertNotIn(node, d.starts[0].nodes)
        with self.assertRaises(gpusched.OutOfRange):
            self.s.cycle(1)
        with self.assertRaises(gpusched.AlreadyExists):
            self.s.submit(1, q, 4)
        with self.assertRaises(gpusched.InvalidArgument):
            self.s.submit(9, q, 3, pod_gpus=2)
        with self.assertRaises(TypeError):
            self.s.submit(9, q, 4, commit=True)  # type: ignore[call-arg]
        with self.assertRaises(gpusched.WrongState):
            self.s.cancel(1)
        with self.assertRaises(gpusched.NotFound):
            self.s.end(77, 3)


class TestPodGangs(SchedCase):
    """Pod gangs with cpu and memory, quotas of cpu by name."""

    def topology(self):
        text = "levels rack\nresources cpu memory\n" + "".join(
            f"node r0 n{i} gpus=4 class=a100 cpu=16000 memory=65536\n" for i in range(4))
        return Topology.parse(text)

    def test_cpu_quota_by_name(self):
        a = self.s.add_queue("team-a", quota=16)
        self.assertEqual(self.s.resource("cpu"), 1 + 1 + 0)
        self.assertEqual(self.s.resource("memory"), 1 + 1 + 1)
        self.assertEqual(self.s.resource("a100"), 1)
        self.s.set_quota(a, 20000, resource="cpu", borrowing_limit=0)
        self.s.submit(1, a, pods=4, pod_gpus=1, cpu=4000, memory=8192)
        self.s.submit(2, a, pods=2, cpu=4000, memory=1024, submit_time=1)
        d = self.s.cycle(10)
        self.assertEqual([st.job_id for st in d.starts], [1])
        (w,) = d.waits
        self.assertEqual((w.job_id, w.reason, w.resource, w.used, w.requested, w.limit),
                         (2, WaitReason.QUOTA, self.s.resource("cpu"), 16000, 8000, 20000))
        self.assertIn("team-a (cpu)", w.message)
        self.assertEqual(self.s.usage(a, "cpu").used, 16000)
        self.assertEqual(self.s.usage(a, "memory").used, 4 * 8192)
        self.assertEqual(self.s.usage(a).used, 4)
        self.s.end(1, 20)
        d = self.s.cycle(21)
        self.assertEqual([st.job_id for st in d.starts], [2])
        self.assertEqual(self.s.usage(a, "gpus").used, 0)
        self.s.check()

    def test_fractions_and_bad_pods(self):
        a = self.s.add_queue("a", quota=16)
        self.s.submit(1, a, pods=4, gpu_milli=500, cpu=1000)
        d = self.s.cycle(0)
        self.assertEqual([st.job_id for st in d.starts], [1])
        self.assertEqual(self.s.usage(a).used, 2, "4 halves: 2 GPUs of quota")
        with self.assertRaises(gpusched.InvalidArgument):
            self.s.submit(2, a, pods=2, pod_gpus=2, gpu_milli=500)
        with self.assertRaises(gpusched.NotFound):
            self.s.submit(3, a, pods=1, resources={"disk": 1})
        with self.assertRaises(gpusched.OutOfRange):
            self.s.usage(a, 1 + 1 + 2)
        self.assertEqual(self.s.counts(), (0, 1))


if __name__ == "__main__":
    unittest.main()
