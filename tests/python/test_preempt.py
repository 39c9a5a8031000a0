"""Cluster.preempt and PreemptPlan: victims, their eligibility and totals,
carrying a plan out, the gang that does not fit even with every eligible
victim gone, the ranking policies, optimality and its lower bound, jobs
protected until a time, and bad input."""
import os
import random
import tempfile
import unittest

from gstest import needs
import gpusched
from gpusched import Cluster, Job, PlaceReason, PreemptPlan, PreemptPolicy, Topology

_FUNCTIONS = ("gpusched_placer_preempt", "gpusched_preempt_plan_new", "gpusched_preempt_plan_free",
              "gpusched_preempt_plan_victims", "gpusched_preempt_plan_totals",
              "gpusched_preempt_plan_optimality", "gpusched_preempt_plan_protected")

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
        # No victim needed: trivially optimal.
        self.assertEqual(plan, PreemptPlan(exact=True))
        self.assertEqual((plan.victims, plan.cost, plan.gpus, len(plan)), ((), 0, 0, 0))
        self.assertEqual((plan.cost_lower_bound, plan.protected_jobs), (0, 0))
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
            self.assertEqual((plan.exact, plan.cost_lower_bound), (False, 0))
            return
        self.assert_eligible(plan, req["priority"], 1)
        self.assert_totals(plan)
        self.assertLessEqual(plan.cost_lower_bound, plan.cost, "the lower bound")
        if plan.exact:
            self.assertEqual(plan.cost_lower_bound, plan.cost)
        self.assertEqual(plan.protected_jobs, 0)
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


#: The issue's cluster: one node of 5 GPUs.
ONE_NODE = "levels rack\nnode r0 n0 gpus=5\n"


class OneNodeCase(unittest.TestCase):
    """The issue's case: job 1 of priority 2 on GPUs 0-1, job 2 of priority
    1 on GPUs 2-3, both preemptible at cost 0, GPU 4 free. A gang of 2 GPUs
    at priority 3 needs one victim, either job."""

    def setUp(self):
        self.t = Topology.parse(ONE_NODE)
        self.c = Cluster(self.t)
        self.c.allocate(1, {"n0": [0, 1]}, priority=2, preemptible=True)
        self.c.allocate(2, {"n0": [2, 3]}, priority=1, preemptible=True)

    def tearDown(self):
        self.c.close()
        self.t.close()

    def state(self):
        c = self.c
        return sorted(c.jobs()), {j: (c.job(j), c.allocation(j)) for j in c.jobs()}

    def assert_evicts(self, plan, placement, victim):
        """`victim` alone is evicted and the gang takes GPUs among its own
        and the free GPU 4; the plan is proven optimal."""
        self.assertTrue(placement.ok, placement.message)
        self.assertEqual(plan.victims, (victim,))
        self.assertEqual(plan.gpus, 2)
        room = self.c.allocation(victim).masks[0] | 1 << 4
        self.assertEqual(placement.gpus, 2)
        self.assertEqual(placement.masks[0] & ~room, 0)
        self.assertTrue(plan.exact)
        self.assertEqual(plan.cost_lower_bound, plan.cost)


@needs(*_FUNCTIONS)
class TestPolicy(OneNodeCase):
    def test_priority_first_is_the_default(self):
        p, plan = self.c.preempt(2, priority=3)
        self.assert_evicts(plan, p, 2)
        for policy in (PreemptPolicy.PRIORITY_FIRST, 0, "priority_first", "PRIORITY_FIRST"):
            q, same = self.c.preempt(2, priority=3, policy=policy)
            self.assertEqual((same, q.masks), (plan, p.masks), repr(policy))

    def test_cost_first_evicts_the_other(self):
        """Equal costs and GPUs: cost first takes the lower id, job 1,
        whatever its higher priority."""
        for policy in (PreemptPolicy.COST_FIRST, 1, "cost_first"):
            p, plan = self.c.preempt(2, priority=3, policy=policy)
            self.assert_evicts(plan, p, 1)

    def test_cost_decides_only_under_cost_first(self):
        c = self.c
        c.update_job(2, cost_hint=50)
        p, plan = c.preempt(2, priority=3)
        self.assert_evicts(plan, p, 2)
        self.assertEqual(plan.cost, 50)
        p, plan = c.preempt(2, priority=3, policy=PreemptPolicy.COST_FIRST)
        self.assert_evicts(plan, p, 1)
        self.assertEqual(plan.cost, 0)
        # Four GPUs need both, under either policy.
        for policy in PreemptPolicy:
            p, plan = c.preempt(4, priority=3, policy=policy)
            self.assertEqual((plan.victims, plan.cost, plan.gpus), ((1, 2), 50, 4), policy)
            self.assertTrue(plan.exact)
            self.assertEqual(plan.cost_lower_bound, 50)

    def test_commit_carries_out_the_policys_plan(self):
        c = self.c
        p, plan = c.preempt(2, priority=3, job_id=9, commit=True, policy="cost_first")
        self.assertTrue(p.committed)
        self.assertEqual(plan.victims, (1,))
        self.assertEqual(sorted(c.jobs()), [2, 9])
        self.assertEqual(c.allocation(9), p.allocation)
        c.check()

    def test_no_plan_and_no_victim_needed(self):
        c = self.c
        # Priority 1: neither job is below it.
        p, plan = c.preempt(2, priority=1)
        self.assertFalse(p.ok)
        self.assertEqual(plan, PreemptPlan())
        self.assertFalse(plan.exact)
        # One GPU is free: no victim, trivially optimal.
        p, plan = c.preempt(1, priority=3)
        self.assertTrue(p.ok)
        self.assertEqual(plan, PreemptPlan(exact=True))

    def test_bad_policy(self):
        c = self.c
        before = self.state()
        for bad in (2, -1, 2**32, "cheapest", ""):
            with self.subTest(policy=bad), self.assertRaises(ValueError) as cm:
                c.preempt(2, priority=3, policy=bad, job_id=9, commit=True)
            self.assertIn("polic", str(cm.exception))
        for bad in (True, 1.0, None, [0]):
            with self.subTest(policy=bad), self.assertRaises(TypeError) as cm:
                c.preempt(2, priority=3, policy=bad, job_id=9, commit=True)
            self.assertIn("policy", str(cm.exception))
        self.assertEqual(self.state(), before)


@needs(*_FUNCTIONS)
class TestProtected(OneNodeCase):
    def test_skipped_until_now_reaches_it(self):
        """Job 2, the default policy's victim, protected until 100: job 1
        is evicted instead while now < 100, and the plan says what
        protection kept out."""
        c = self.c
        c.update_job(2, protected_until=100)
        for now in (0, 99):
            p, plan = c.preempt(2, priority=3, now=now)
            self.assert_evicts(plan, p, 1)
            self.assertEqual((plan.protected_jobs, plan.protected_gpus, plan.protected_until),
                             (1, 2, 100), now)
            self.assertIn("1 protected (2 GPUs) until 100", repr(plan))
        for now in (100, 2**63 - 1):
            p, plan = c.preempt(2, priority=3, now=now)
            self.assert_evicts(plan, p, 2)
            self.assertEqual((plan.protected_jobs, plan.protected_gpus, plan.protected_until),
                             (0, 0, 0))
            self.assertNotIn("protected", repr(plan))
        # The cluster reuses one C plan: a gang that fits as the cluster is
        # reports no protection, not that of the call before.
        c.preempt(2, priority=3, now=0)
        p, plan = c.preempt(1, priority=3, now=0)
        self.assertTrue(p.ok)
        self.assertEqual(plan, PreemptPlan(exact=True))

    def test_every_victim_protected(self):
        """With both jobs protected there is no plan; the plan tells that
        protection is why, and the earliest time to ask again."""
        c = self.c
        c.update_job(1, protected_until=70)
        c.update_job(2, protected_until=100)
        before = self.state()
        p, plan = c.preempt(2, priority=3, now=50, job_id=9, commit=True)
        self.assertFalse(p.ok)
        self.assertEqual(p.reason, PlaceReason.NO_GPUS)
        self.assertEqual(plan.victims, ())
        self.assertEqual((plan.protected_jobs, plan.protected_gpus, plan.protected_until),
                         (2, 4, 70))
        self.assertEqual(plan, PreemptPlan(protected_jobs=2, protected_gpus=4,
                                           protected_until=70))
        self.assertEqual(self.state(), before)
        p, plan = c.preempt(2, priority=3, now=70, job_id=9, commit=True)
        self.assertTrue(p.committed)
        self.assertEqual(plan.victims, (1,))
        self.assertEqual((plan.protected_jobs, plan.protected_until), (1, 100))
        self.assertEqual(sorted(c.jobs()), [2, 9])

    def test_only_would_be_victims_count(self):
        """Protection is reported for jobs that would otherwise be eligible:
        not for a job of too high a priority, nor a job that is not
        preemptible, nor the request's own job."""
        c = self.c
        c.update_job(1, protected_until=100)   # priority 2: not below 2
        c.update_job(2, protected_until=100)
        c.allocate(3, {"n0": [4]}, protected_until=100)  # not preemptible
        p, plan = c.preempt(2, priority=2)
        self.assertFalse(p.ok)
        self.assertEqual((plan.protected_jobs, plan.protected_gpus), (1, 2))
        p, plan = c.preempt(2, priority=2, job_id=2)
        self.assertEqual(plan.protected_jobs, 0)

    def test_round_trip(self):
        """protected_until goes in through allocate, place and update_job,
        comes back from job(), and survives snapshot, save and load, and a
        journal's replay."""
        c = self.c
        self.assertEqual(c.job(1).protected_until, 0)
        c.update_job(1, protected_until=-7)
        c.update_job(1, priority=2)  # left out: kept
        self.assertEqual(c.job(1), Job(1, 2, 0, 0, 0, True, False, -7))
        snap = c.snapshot()
        c.journal_start()
        c.update_job(2, protected_until=2**63 - 1)
        p = c.place(1, job_id=3, commit=True, start_time=40, protected_until=45)
        self.assertTrue(p.committed)
        self.assertEqual(c.job(3), Job(3, 0, 0, 40, 0, False, False, 45))
        want = {j: c.job(j) for j in c.jobs()}
        self.assertEqual(want[2].protected_until, 2**63 - 1)
        with Cluster.restore(c.snapshot()) as back:
            self.assertEqual({j: back.job(j) for j in back.jobs()}, want)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "cluster.snap")
            c.save(path)
            with Cluster.load(path) as back:
                self.assertEqual({j: back.job(j) for j in back.jobs()}, want)
        with Cluster.replay(snap, c.journal()) as back:
            self.assertEqual({j: back.job(j) for j in back.jobs()}, want)
        # Positional construction of the older fields keeps working.
        self.assertEqual(Job(1, 2, 0, 0, 0, True), Job(1, 2, 0, 0, 0, True, False, 0))

    def test_bad_values_change_nothing(self):
        c = self.c
        before = self.state()
        for call in (lambda v: c.allocate(3, {"n0": [4]}, protected_until=v),
                     lambda v: c.update_job(1, protected_until=v),
                     lambda v: c.place(1, job_id=3, commit=True, protected_until=v),
                     lambda v: c.preempt(1, job_id=3, commit=True, protected_until=v),
                     lambda v: c.preempt(1, job_id=3, commit=True, now=v),
                     lambda v: c.defrag(1, job_id=3, commit=True, now=v)):
            with self.assertRaises(ValueError) as cm:
                call(2**63)
            self.assertRegex(str(cm.exception), r"^(protected_until|now) = ")
            with self.assertRaises(TypeError) as cm:
                call("10")
            self.assertRegex(str(cm.exception), r"^(protected_until|now) must be")
        with self.assertRaises(TypeError) as cm:
            c.place_many([dict(gpus=1, job_id=3, commit=True, protected_until=1.5)])
        self.assertIn("protected_until", str(cm.exception))
        self.assertEqual(self.state(), before)
        c.place_many([dict(gpus=1, job_id=3, commit=True, protected_until=8)])
        self.assertEqual(c.job(3).protected_until, 8)


@needs(*_FUNCTIONS)
class TestOptimality(ClusterCase):
    def test_heuristic_plans_state_a_bound(self):
        """Cost first at priority 4 on the full cluster: 25 candidate
        victims in the one domain, more than the exact search takes, so a
        big gang's plan comes from the heuristic, with a lower bound."""
        self.fill()
        self.assertEqual(gpusched.preemption.EXACT_MAX, 24)
        p, plan = self.c.preempt(64, priority=4, policy=PreemptPolicy.COST_FIRST)
        self.assertTrue(p.ok, p.message)
        self.assert_totals(plan)
        self.assertFalse(plan.exact)
        # The bound of a domain too large to search: the 64 GPUs it lacks
        # at its least cost per GPU (1 for 8 GPUs).
        self.assertLessEqual(plan.cost_lower_bound, plan.cost)
        self.assertEqual(plan.cost_lower_bound, 8)
        self.assertIn(f"at least {plan.cost_lower_bound}", repr(plan))
        # Priority first searches the lowest tier that makes room, fewer
        # candidates: proven optimal.
        p, plan = self.c.preempt(64, priority=4)
        self.assertTrue(p.ok, p.message)
        self.assertTrue(plan.exact)
        self.assertEqual(plan.cost_lower_bound, plan.cost)
        self.assertIn("optimal", repr(plan))
        self.assertEqual(max(self.c.job(v).priority for v in plan), 1)

    def test_values(self):
        a = PreemptPlan([3], 5, 8, exact=True, cost_lower_bound=5)
        self.assertEqual(a, PreemptPlan((3,), 5, 8, exact=True, cost_lower_bound=5))
        self.assertNotEqual(a, PreemptPlan([3], 5, 8))
        self.assertNotEqual(PreemptPlan(protected_jobs=1, protected_gpus=2, protected_until=3),
                            PreemptPlan())
        self.assertEqual(len({a, PreemptPlan([3], 5, 8, exact=True, cost_lower_bound=5),
                              PreemptPlan()}), 2)
        with self.assertRaises(TypeError):
            PreemptPlan([3], 5, 8, (), True)  # the new fields are keywords


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
