"""Cluster.preempt and PreemptPlan: victims, their eligibility and totals,
carrying a plan out, the gang that does not fit even with every eligible
victim gone, and bad input."""
import random
import unittest

from gstest import needs
import gpusched
from gpusched import Cluster, PlaceReason, PreemptPlan, Topology

_FUNCTIONS = ("gpusched_placer_preempt", "gpusched_preempt_plan_new", "gpusched_preempt_plan_free",
              "gpusched_preempt_plan_victims", "gpusched_preempt_plan_totals")

NODES, GPUS = 32, 8


def job_of(node):
    """The one-node job filling `node` of the full cluster: priorities 0..3,
    cost hints 1..11 in no particular order, every fifth job not
    preemptible."""
    return dict(priority=node % 4, cost_hint=(node * 7) % 11 + 1, preemptible=node % 5 != 0)


class ClusterCase(unittest.TestCase):
    """2 zones x 4 racks x 4 nodes x 8 GPUs."""

    def setUp(self):
        self.t = Topology.uniform(["zone", "rack"], [2, 4, 4], GPUS)
        self.c = Cluster(self.t)

    def tearDown(self):
        self.c.close()
        self.t.close()

    def fill(self, job=job_of):
        for n in range(NODES):
            self.c.allocate(100 + n, {n: "all"}, **job(n))

    def state(self):
        c = self.c
        return (c.free_gpus(), sorted(c.jobs()), {j: c.allocation(j) for j in c.jobs()})

    def assert_eligible(self, plan, priority, job_id=None):
        for v in plan:
            j = self.c.job(v)
            self.assertTrue(j.preemptible, f"victim {v} is not preemptible")
            self.assertLess(j.priority, priority, f"victim {v} has priority {j.priority}")
            self.assertNotEqual(v, job_id)

    def assert_totals(self, plan):
        jobs = [self.c.job(v) for v in plan]
        self.assertEqual(plan.cost, sum(j.cost_hint for j in jobs))
        self.assertEqual(plan.gpus, sum(self.c.allocation(v).gpus for v in plan))

    def assert_every_victim_needed(self, placement, plan):
        """On a full cluster the gang can only use the victims' GPUs, so a
        victim whose GPUs the placement does not touch would be unneeded."""
        used = dict(zip(placement.nodes, placement.masks))
        for v in plan:
            a = self.c.allocation(v)
            self.assertTrue(any(used.get(n, 0) & m for n, m in a.items()),
                            f"victim {v} is not needed by the placement")


@needs(*_FUNCTIONS)
class TestWithoutVictims(ClusterCase):
    def test_fits_as_the_cluster_is(self):
        p, plan = self.c.preempt(16, pod_gpus=8, priority=5)
        self.assertTrue(p.ok)
        self.assertFalse(p.committed)
        self.assertEqual(p.gpus, 16)
        self.assertEqual(plan, PreemptPlan())
        self.assertEqual((plan.victims, plan.cost, plan.gpus, len(plan)), ((), 0, 0, 0))
        self.assertFalse(plan)
        self.assertEqual(p.nodes, self.c.place(16, pod_gpus=8).nodes)
        self.assertEqual(self.c.free_gpus(), NODES * GPUS)

    def test_fits_among_running_jobs(self):
        """Free GPUs are used before anyone is evicted, even when eligible
        victims are running."""
        for n in range(NODES - 2):
            self.c.allocate(100 + n, {n: "all"}, priority=0, preemptible=True)
        before = self.state()
        p, plan = self.c.preempt(16, priority=9, job_id=1, commit=True)
        self.assertTrue(p.committed)
        self.assertEqual(len(plan), 0)
        self.assertEqual(set(p.nodes), {NODES - 2, NODES - 1})
        self.assertEqual(self.c.job_count, len(before[1]) + 1)
        self.assertEqual(self.c.allocation(1), p.allocation)


@needs(*_FUNCTIONS)
class TestVictims(ClusterCase):
    def test_plan_on_a_full_cluster(self):
        self.fill()
        before = self.state()
        p, plan = self.c.preempt(16, pod_gpus=8, priority=2, job_id=1)
        self.assertTrue(p.ok, p.message)
        self.assertFalse(p.committed)
        self.assertEqual(p.gpus, 16)
        self.assertTrue(plan)
        self.assertEqual(list(plan.victims), sorted(plan.victims))
        self.assert_eligible(plan, 2, 1)
        self.assert_totals(plan)
        self.assertGreaterEqual(plan.gpus, 16)
        self.assert_every_victim_needed(p, plan)
        self.assertEqual(self.state(), before, "a plan without commit changed the cluster")
        self.assertIn("victims", repr(plan))
        self.assertIn(plan.victims[0], plan)
        self.assertEqual(list(plan), list(plan.victims))

    def test_same_request_same_plan(self):
        self.fill()
        p1, plan1 = self.c.preempt(24, priority=3)
        p2, plan2 = self.c.preempt(24, priority=3)
        self.assertEqual((p1.nodes, p1.masks), (p2.nodes, p2.masks))
        self.assertEqual(plan1, plan2)
        self.assertEqual(hash(plan1), hash(plan2))
        with Cluster(self.t) as other:
            for n in range(NODES):
                other.allocate(100 + n, {n: "all"}, **job_of(n))
            self.assertEqual(other.preempt(24, priority=3)[1], plan1)

    def test_commit_evicts_the_victims(self):
        self.fill()
        planned, plan = self.c.preempt(16, pod_gpus=8, priority=2, job_id=1)
        before = self.state()
        p, done = self.c.preempt(16, pod_gpus=8, priority=2, job_id=1, commit=True, tenant=4,
                                 cost_hint=50)
        self.assertTrue(p.committed)
        self.assertEqual(done, plan)
        self.assertEqual((p.nodes, p.masks), (planned.nodes, planned.masks))
        for v in plan:
            self.assertNotIn(v, self.c)
        self.assertIn(1, self.c)
        self.assertEqual(self.c.allocation(1), p.allocation)
        job = self.c.job(1)
        self.assertEqual((job.priority, job.tenant, job.cost_hint), (2, 4, 50))
        self.assertEqual(sorted(self.c.jobs()),
                         sorted(set(before[1]) - set(plan.victims) | {1}))
        self.assertEqual(self.c.free_gpus(), plan.gpus - 16)
        for j in self.c.jobs():  # nobody else moved
            if j != 1:
                self.assertEqual(self.c.allocation(j), before[2][j])
        self.c.check()

    def test_cheapest_victim(self):
        """One victim settles it: the cheapest one is taken."""
        self.fill(lambda n: dict(priority=0, cost_hint=3 if n == 21 else 10, preemptible=True))
        p, plan = self.c.preempt(8, priority=1)
        self.assertEqual(plan.victims, (121,))
        self.assertEqual((plan.cost, plan.gpus), (3, 8))
        self.assertEqual(p.nodes, (21,))

    def test_required_domain(self):
        self.fill()
        p, plan = self.c.preempt(16, pod_gpus=8, required="rack", priority=2)
        self.assertTrue(p.ok, p.message)
        self.assertEqual(len(p.domains("rack")), 1)
        self.assert_eligible(plan, 2)
        self.assert_totals(plan)
        self.assert_every_victim_needed(p, plan)
        rack = p.domains("rack")[0]
        for v in plan:
            for n in self.c.allocation(v).nodes:
                self.assertEqual(self.t.node_domain(n, "rack"), rack)

    def test_own_job_is_never_a_victim(self):
        self.fill(lambda n: dict(priority=0, cost_hint=1 if n == 7 else 5, preemptible=True))
        _, plan = self.c.preempt(8, priority=1)
        self.assertEqual(plan.victims, (107,))
        _, plan = self.c.preempt(8, priority=1, job_id=107)
        self.assertTrue(plan)
        self.assertNotIn(107, plan)

    def test_plans_are_copies(self):
        """The cluster reuses one C plan; the plans it returned stay as
        they were."""
        self.fill()
        _, a = self.c.preempt(8, priority=1)
        _, b = self.c.preempt(64, priority=3)
        _, c = self.c.preempt(8, priority=0)
        self.assertEqual(len(a), 1)
        self.assertGreaterEqual(len(b), 8)
        self.assertEqual(len(c), 0)
        self.assertEqual(a, self.c.preempt(8, priority=1)[1])
        self.assertNotEqual(a, b)


@needs(*_FUNCTIONS)
class TestGuarantees(ClusterCase):
    """Seeded random clusters of jobs of 1 to 8 GPUs, checked against what
    preempt.h promises, each on a twin cluster (snapshot and restore): a
    plan exists exactly when evicting every eligible victim lets the gang
    fit, its placement is what place() gives once the victims are gone, and
    every victim is needed."""

    def random_fill(self, rng):
        jid = 100
        for n in range(NODES):
            gpu = 0
            while gpu < GPUS:
                size = rng.choice((1, 2, 4, 8))
                size = min(size, GPUS - gpu)
                if rng.random() < 0.97:
                    self.c.allocate(jid, {n: range(gpu, gpu + size)}, priority=rng.randrange(4),
                                    cost_hint=rng.randrange(1, 11),
                                    preemptible=rng.random() < 0.7)
                    jid += 1
                gpu += size

    def twin_without(self, victims):
        twin = Cluster.restore(self.c.snapshot())
        for v in victims:
            twin.release(v)
        return twin

    def test_random_scenarios(self):
        rng = random.Random(20261129)
        plans = 0
        for scenario in range(12):
            self.c.close()
            self.c = Cluster(self.t)
            self.random_fill(rng)
            for _ in range(6):
                req = dict(priority=rng.randrange(1, 5), job_id=1)
                gpus = rng.choice((4, 8, 16, 24, 32, 48))
                if rng.random() < 0.4 and gpus % 8 == 0:
                    req["pod_gpus"] = 8
                if rng.random() < 0.3:
                    req["required"] = "rack"
                with self.subTest(scenario=scenario, gpus=gpus, **req):
                    self.check_one(gpus, req)
                    plans += 1
        self.assertEqual(plans, 72)

    def check_one(self, gpus, req):
        c = self.c
        before = self.state()
        p, plan = c.preempt(gpus, **req)
        self.assertEqual(self.state(), before)
        eligible = [j for j in c.jobs()
                    if c.job(j).preemptible and c.job(j).priority < req["priority"]]
        with self.twin_without(eligible) as all_gone:
            self.assertEqual(p.ok, all_gone.place(gpus, **req).ok, "completeness")
        if not p.ok:
            self.assertEqual(len(plan), 0)
            return
        self.assert_eligible(plan, req["priority"], 1)
        self.assert_totals(plan)
        with self.twin_without(plan) as gone:
            q = gone.place(gpus, **req)
            self.assertEqual((q.nodes, q.masks), (p.nodes, p.masks),
                             "the placement once the victims are gone")
        for v in plan:
            with self.twin_without(set(plan) - {v}) as spared:
                self.assertFalse(spared.place(gpus, **req).ok, f"victim {v} is not needed")
        if len(plan) == 0:
            self.assertTrue(c.place(gpus, **req).ok)


@needs(*_FUNCTIONS)
class TestDoesNotFit(ClusterCase):
    def assert_no_plan(self, p, plan, before):
        self.assertFalse(p.ok)
        self.assertFalse(p.committed)
        self.assertEqual(p.reason, PlaceReason.NO_GPUS)
        self.assertEqual(plan, PreemptPlan())
        with self.assertRaises(gpusched.DoesNotFit) as cm:
            p.raise_if_failed()
        self.assertEqual(cm.exception.function, "gpusched_placer_preempt")
        self.assertEqual(cm.exception.message, p.message)
        self.assertEqual(self.state(), before)

    def test_no_lower_priority(self):
        self.fill()
        before = self.state()
        self.assert_no_plan(*self.c.preempt(8, priority=0), before)
        self.assert_no_plan(*self.c.preempt(8, priority=0, job_id=1, commit=True), before)

    def test_none_preemptible(self):
        self.fill(lambda n: dict(priority=0, cost_hint=1, preemptible=False))
        before = self.state()
        self.assert_no_plan(*self.c.preempt(8, priority=9, job_id=1, commit=True), before)

    def test_not_even_with_every_victim_gone(self):
        """The explanation is about the cluster without its eligible
        victims: priority-0 preemptible jobs hold 6 nodes (48 GPUs)."""
        self.fill()
        before = self.state()
        p, plan = self.c.preempt(200, priority=1, job_id=1, commit=True)
        self.assertEqual((p.ok, p.reason, len(plan)), (False, PlaceReason.NO_GPUS, 0))
        self.assertIn("48", p.message)
        p, plan = self.c.preempt(40, priority=3, required="rack")
        self.assertEqual((p.reason, len(plan)), (PlaceReason.REQUIRED, 0))
        self.assertIn("rack", p.message)
        self.assertEqual(self.state(), before)


@needs(*_FUNCTIONS)
class TestBadInput(ClusterCase):
    def test_argument_errors_change_nothing(self):
        self.fill()
        c = self.c
        before = self.state()
        with self.assertRaises(ValueError):
            c.preempt(0, priority=1)
        with self.assertRaises(TypeError):
            c.preempt("8")
        with self.assertRaises(TypeError) as cm:
            c.preempt(8, victims=[1])
        self.assertIn("preempt()", str(cm.exception))
        with self.assertRaises(ValueError):
            c.preempt(8, priority=2**31)
        with self.assertRaises(ValueError):
            c.preempt(8, job_id=-1)
        with self.assertRaises(TypeError):
            c.preempt(8, commit="yes")
        with self.assertRaises(gpusched.NotFound):
            c.preempt(8, required="block")
        with self.assertRaises(gpusched.NotFound):
            c.preempt(8, avoid_nodes=["nowhere"])
        with self.assertRaises(gpusched.InvalidArgument) as cm:
            c.preempt(12, pod_gpus=8, priority=3, commit=True, job_id=1)
        self.assertEqual(cm.exception.function, "gpusched_placer_preempt")
        self.assertIn("pods", cm.exception.message)
        with self.assertRaises(gpusched.InvalidArgument):
            c.preempt(8, slices=[(32, "rack"), (64, "zone")], priority=3)
        with self.assertRaises(gpusched.AlreadyExists) as cm:
            c.preempt(8, priority=3, job_id=101, commit=True)
        self.assertIn("101", cm.exception.message)
        self.assertEqual(self.state(), before)
        # The placer is still fine after the errors.
        p, plan = c.preempt(8, priority=1)
        self.assertTrue(p.ok and plan)

    def test_closed_cluster(self):
        self.c.preempt(8)
        self.c.close()
        with self.assertRaises(ValueError):
            self.c.preempt(8)


if __name__ == "__main__":
    unittest.main()
