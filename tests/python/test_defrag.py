"""Cluster.defrag and the movable job flag: a fragmented cluster where one
move frees a rack, who may move, plan only against commit, the gang that
finds no plan, Move and PreemptPlan values, the flag's round trip and bad
input."""
import random
import unittest

from gstest import needs
import gpusched
from gpusched import Allocation, Cluster, Move, PlaceReason, PreemptPlan, Topology

_FUNCTIONS = ("gpusched_placer_defrag", "gpusched_preempt_plan_move_count",
              "gpusched_preempt_plan_move", "gpusched_preempt_plan_victims",
              "gpusched_preempt_plan_totals")

GPUS, RACK_NODES = 8, 4
ZONE0_RACKS, ZONE1_RACKS = range(0, 4), range(4, 8)
GANG = dict(whole_nodes=True, required="rack")

# The movers, one on the first node of each rack of zone 0: id -> fields.
MOVERS = {100: dict(priority=5, cost_hint=3), 101: dict(priority=6, cost_hint=1),
          102: dict(priority=7, cost_hint=2), 103: dict(priority=9, cost_hint=1)}


class FragmentedCase(unittest.TestCase):
    """2 zones x 4 racks x 4 nodes x 8 GPUs. Every rack's first node holds a
    one-node job: movable ones in zone 0 (jobs 100..103, priorities 5, 6, 7,
    9), unmovable but preemptible ones in zone 1 (jobs 200..203). No rack is
    entirely free, so a 32-GPU whole-node gang inside one rack needs a move."""

    def setUp(self):
        self.t = Topology.uniform(["zone", "rack"], [2, 4, 4], GPUS)
        self.c = Cluster(self.t)
        for i, rack in enumerate(ZONE0_RACKS):
            self.c.allocate(100 + i, {rack * RACK_NODES: "all"}, movable=True, tenant=i,
                            start_time=10 + i, **MOVERS[100 + i])
        for i, rack in enumerate(ZONE1_RACKS):
            self.c.allocate(200 + i, {rack * RACK_NODES: "all"}, priority=0, preemptible=True)

    def tearDown(self):
        self.c.close()
        self.t.close()

    def state(self):
        c = self.c
        return (c.free_gpus(), sorted(c.jobs()),
                {j: (c.allocation(j), c.job(j)) for j in c.jobs()})

    def assert_movers_eligible(self, plan, priority, job_id=0):
        for m in plan.moves:
            j = self.c.job(m.job_id)
            self.assertTrue(j.movable, f"job {m.job_id} is not movable")
            self.assertLessEqual(j.priority, priority, f"job {m.job_id} has priority {j.priority}")
            self.assertNotEqual(m.job_id, job_id)

    def assert_moves_consistent(self, placement, plan):
        """Each move keeps its job's GPU count, lands on up nodes outside the
        gang, and no two moves share a GPU; the totals are the movers'."""
        gang = dict(zip(placement.nodes, placement.masks))
        taken = {}
        for m in plan.moves:
            self.assertIsInstance(m, Move)
            self.assertEqual(list(m.nodes), sorted(m.nodes))
            self.assertEqual(len(m.nodes), len(m.masks))
            old = self.c.allocation(m.job_id)
            self.assertEqual(Allocation(m.nodes, m.masks).gpus, old.gpus)
            for n, mask in zip(m.nodes, m.masks):
                self.assertEqual(gang.get(n, 0) & mask, 0, f"move of {m.job_id} overlaps the gang")
                self.assertEqual(taken.get(n, 0) & mask, 0, "two moves share a GPU")
                taken[n] = taken.get(n, 0) | mask
        self.assertEqual(plan.victims, ())
        self.assertEqual(plan.cost, sum(self.c.job(m.job_id).cost_hint for m in plan.moves))
        self.assertEqual(plan.gpus, sum(self.c.allocation(m.job_id).gpus for m in plan.moves))


@needs(*_FUNCTIONS)
class TestPlan(FragmentedCase):
    def test_one_move_frees_a_rack(self):
        c = self.c
        self.assertFalse(c.place(32, **GANG).ok, "the scenario must need a move")
        before = self.state()
        p, plan = c.defrag(32, priority=7, job_id=1, **GANG)
        self.assertTrue(p.ok, p.message)
        self.assertFalse(p.committed)
        self.assertEqual(self.state(), before, "a plan-only defrag changed the cluster")
        self.assertEqual(len(plan.moves), 1)
        self.assertEqual(len(plan), 0)
        self.assert_movers_eligible(plan, 7, 1)
        self.assert_moves_consistent(p, plan)
        # The gang takes the rack the mover leaves, all of it.
        mover = plan.moves[0].job_id
        rack = c.allocation(mover).nodes[0] // RACK_NODES
        self.assertEqual(p.nodes, tuple(range(rack * RACK_NODES, (rack + 1) * RACK_NODES)))
        self.assertEqual(p.gpus, 32)
        # Job 101 is the cheapest eligible mover.
        self.assertEqual(mover, 101)
        self.assertEqual((plan.cost, plan.gpus), (1, 8))
        # Planning again gives the same plan.
        p2, plan2 = c.defrag(32, priority=7, job_id=1, **GANG)
        self.assertEqual((plan2, p2.nodes), (plan, p.nodes))

    def test_commit_moves_and_runs_the_gang(self):
        c = self.c
        _, planned = c.defrag(32, priority=7, job_id=1, **GANG)
        jobs_before = {j: c.job(j) for j in c.jobs()}
        allocs_before = {j: c.allocation(j) for j in c.jobs()}
        p, plan = c.defrag(32, priority=7, job_id=1, commit=True, movable=True, cost_hint=4, **GANG)
        self.assertTrue(p.ok and p.committed, p.message)
        self.assertEqual(plan, planned, "the commit carried out another plan")
        self.assertEqual(c.allocation(1), p.allocation)
        self.assertEqual(c.job(1), gpusched.Job(1, 7, 0, 0, 4, False, True))
        moved = {m.job_id for m in plan.moves}
        for m in plan.moves:
            self.assertEqual(c.job(m.job_id), jobs_before[m.job_id], "a moved job's fields changed")
            self.assertEqual(c.allocation(m.job_id), Allocation(m.nodes, m.masks))
            self.assertNotEqual(c.allocation(m.job_id), allocs_before[m.job_id])
        for j, a in allocs_before.items():
            if j not in moved:
                self.assertEqual(c.allocation(j), a, f"job {j} moved without being planned")
        self.assertEqual(sorted(c.jobs()), sorted(list(jobs_before) + [1]))
        self.assertEqual(c.free_gpus(), 32 * GPUS - 8 * 8 - 32)
        c.check()

    def test_equal_priority_may_move(self):
        """Only job 100 (priority 5) is eligible for a gang of priority 5."""
        p, plan = self.c.defrag(32, priority=5, **GANG)
        self.assertTrue(p.ok, p.message)
        self.assertEqual([m.job_id for m in plan.moves], [100])
        self.assertEqual(p.domain_names("rack"), [self.t.domain_name("rack", 0)])

    def test_fits_as_the_cluster_is(self):
        """No move without need: a gang that fits gets an empty plan and the
        placement place() gives."""
        p, plan = self.c.defrag(24, priority=9, **GANG)
        self.assertTrue(p.ok)
        self.assertEqual(plan, PreemptPlan())
        self.assertEqual((plan.moves, plan.cost, plan.gpus), ((), 0, 0))
        self.assertEqual(p.nodes, self.c.place(24, **GANG).nodes)

    def test_protected_jobs_stay_until_their_time(self):
        """Job 101, the cheapest mover, protected until 50: while the
        request's now is before it, the next cheapest (102) moves instead."""
        c = self.c
        c.update_job(101, protected_until=50)
        self.assertEqual(c.job(101).protected_until, 50)
        for now in (0, 49):
            p, plan = c.defrag(32, priority=7, now=now, **GANG)
            self.assertTrue(p.ok, p.message)
            self.assertEqual([m.job_id for m in plan.moves], [102], now)
            self.assert_moves_consistent(p, plan)
        _, plan = c.defrag(32, priority=7, now=50, **GANG)
        self.assertEqual([m.job_id for m in plan.moves], [101])
        # A defragmentation reports no optimality nor protection: those
        # are a preemption's.
        self.assertEqual((plan.exact, plan.cost_lower_bound, plan.protected_jobs,
                          plan.protected_gpus, plan.protected_until), (False, 0, 0, 0, 0))
        # Every mover protected: no plan, nothing changes.
        for j in MOVERS:
            c.update_job(j, protected_until=50)
        before = self.state()
        p, plan = c.defrag(32, priority=9, job_id=1, commit=True, now=10, **GANG)
        self.assertFalse(p.ok)
        self.assertEqual(plan, PreemptPlan())
        self.assertEqual(self.state(), before)
        p, plan = c.defrag(32, priority=9, job_id=1, commit=True, now=50, **GANG)
        self.assertTrue(p.committed, p.message)

    def test_unmovable_jobs_never_move(self):
        """Required in zone 1, whose jobs are preemptible but not movable:
        no plan, while a preemption finds one."""
        c = self.c
        for rack in ZONE0_RACKS:
            for k in range(1, RACK_NODES):
                c.allocate(300 + rack * RACK_NODES + k, {rack * RACK_NODES + k: "all"})
        before = self.state()
        p, plan = c.defrag(32, priority=9, **GANG)
        self.assertFalse(p.ok)
        self.assertEqual(p.function, "gpusched_placer_defrag")
        self.assertEqual(plan, PreemptPlan())
        self.assertEqual(self.state(), before)
        p, plan = c.preempt(32, priority=9, **GANG)
        self.assertTrue(p.ok, p.message)
        self.assertEqual(len(plan), 1)
        self.assertEqual(plan.moves, (), "a preemption plan has no moves")

    def test_preempt_plans_have_no_moves(self):
        p, plan = self.c.preempt(32, priority=1, **GANG)
        self.assertTrue(p.ok, p.message)
        self.assertEqual(plan.moves, ())
        self.assertTrue(all(v >= 200 for v in plan))


@needs(*_FUNCTIONS)
class TestNoPlan(FragmentedCase):
    def test_no_eligible_mover(self):
        """Every mover's priority is above 4: nothing may move."""
        before = self.state()
        p, plan = self.c.defrag(32, priority=4, job_id=1, commit=True, **GANG)
        self.assertFalse(p.ok)
        self.assertFalse(p.committed)
        self.assertEqual(p.reason, PlaceReason.REQUIRED)
        self.assertEqual(plan, PreemptPlan())
        with self.assertRaises(gpusched.DoesNotFit) as cm:
            p.raise_if_failed()
        self.assertEqual(cm.exception.function, "gpusched_placer_defrag")
        self.assertEqual(self.state(), before)
        self.assertNotIn(1, self.c)

    def test_no_room_for_the_mover(self):
        """Every node but rack 0's last three is full: job 100 could free
        rack 0 but has nowhere to go."""
        c = self.c
        for n in range(32):
            if n % RACK_NODES != 0 and n // RACK_NODES != 0:
                c.allocate(1000 + n, {n: "all"}, priority=0, movable=True)
        before = self.state()
        p, plan = c.defrag(24, priority=9, **GANG)   # fits on rack 0's free nodes
        self.assertTrue(p.ok)
        self.assertEqual(plan.moves, ())
        p, plan = c.defrag(32, priority=9, job_id=1, commit=True, **GANG)
        self.assertFalse(p.ok)
        self.assertEqual(plan, PreemptPlan())
        self.assertEqual(self.state(), before)
        c.check()


@needs(*_FUNCTIONS)
class TestValues(unittest.TestCase):
    def test_move_and_plan_values(self):
        a = PreemptPlan(cost=1, gpus=8, moves=[(7, [1, 2], [3, 255])])
        b = PreemptPlan(cost=1, gpus=8, moves=(Move(7, (1, 2), (3, 255)),))
        self.assertEqual(a, b)
        self.assertEqual(hash(a), hash(b))
        self.assertEqual(a.moves[0], Move(job_id=7, nodes=(1, 2), masks=(3, 255)))
        self.assertIsInstance(a.moves[0].nodes, tuple)
        self.assertNotEqual(a, PreemptPlan(cost=1, gpus=8))
        self.assertNotEqual(a, PreemptPlan(cost=1, gpus=8, moves=[(8, [1, 2], [3, 255])]))
        self.assertEqual(len(a), 0)
        self.assertIn("1 moves", repr(a))
        self.assertNotIn("moves", repr(PreemptPlan([1], 2, 8)))
        self.assertEqual(len({a, b, PreemptPlan()}), 2)

    def test_plans_are_copies(self):
        t = Topology.uniform(["zone", "rack"], [2, 4, 4], GPUS)
        with Cluster(t) as c:
            c.allocate(5, {0: "all"}, movable=True)
            for rack in range(1, 8):
                c.allocate(10 + rack, {rack * RACK_NODES: "all"})
            _, plan = c.defrag(32, **GANG)
            kept = PreemptPlan(plan.victims, plan.cost, plan.gpus, plan.moves)
            c.defrag(8)
            c.preempt(8)
            self.assertEqual(plan, kept)
            self.assertEqual([m.job_id for m in plan.moves], [5])
        t.close()


class TestMovableFlag(unittest.TestCase):
    def setUp(self):
        self.t = Topology.uniform(["zone", "rack"], [2, 4, 4], GPUS)
        self.c = Cluster(self.t)

    def tearDown(self):
        self.c.close()
        self.t.close()

    def test_round_trip(self):
        c = self.c
        c.allocate(1, {0: "all"}, movable=True)
        c.allocate(2, {1: "all"}, preemptible=True)
        c.allocate(3, {2: "all"}, preemptible=True, movable=True)
        c.allocate(4, {3: "all"})
        flags = {j: (c.job(j).preemptible, c.job(j).movable) for j in (1, 2, 3, 4)}
        self.assertEqual(flags, {1: (False, True), 2: (True, False), 3: (True, True),
                                 4: (False, False)})
        c.update_job(4, movable=True)
        self.assertEqual((c.job(4).preemptible, c.job(4).movable), (False, True))
        c.update_job(3, movable=False, priority=2)
        self.assertEqual(c.job(3), gpusched.Job(3, 2, 0, 0, 0, True, False))
        p = c.place(8, job_id=9, commit=True, movable=True)
        self.assertTrue(p.committed)
        self.assertTrue(c.job(9).movable)
        # The field comes after the six older ones and defaults to False
        # (protected_until, after it, to 0): six positional fields still work.
        self.assertEqual(gpusched.Job(1, 0, 0, 0, 0, False),
                         gpusched.Job(1, 0, 0, 0, 0, False, False, 0))
        self.assertEqual(gpusched.Job._fields[-2:], ("movable", "protected_until"))
        snap = Cluster.restore(c.snapshot())
        self.assertTrue(snap.job(1).movable and snap.job(4).movable)
        snap.close()

    @needs(*_FUNCTIONS)
    def test_bad_input_changes_nothing(self):
        c = self.c
        c.allocate(1, {0: "all"}, movable=True)
        state = lambda: (c.free_gpus(), sorted(c.jobs()), c.job(1), c.allocation(1))
        before = state()
        with self.assertRaises(TypeError) as cm:
            c.allocate(2, {1: "all"}, movable=1)
        self.assertIn("movable", str(cm.exception))
        with self.assertRaises(TypeError):
            c.update_job(1, movable="no")
        with self.assertRaises(TypeError):
            c.place(8, movable=None)
        with self.assertRaises(TypeError):
            c.defrag(8, movable=1)
        with self.assertRaises(TypeError) as cm:
            c.defrag(8, movers=[1])
        self.assertIn("defrag()", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            c.defrag(8, policy=gpusched.PreemptPolicy.COST_FIRST)  # preempt() only
        self.assertIn("defrag()", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            c.defrag(8, now=1.5)
        self.assertIn("now", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            c.defrag(8, now=2**63)
        self.assertIn("now", str(cm.exception))
        with self.assertRaises(ValueError):
            c.defrag(0)
        with self.assertRaises(TypeError):
            c.defrag("8")
        with self.assertRaises(ValueError):
            c.defrag(8, priority=2**31)
        with self.assertRaises(gpusched.NotFound):
            c.defrag(8, required="block")
        with self.assertRaises(gpusched.InvalidArgument) as cm:
            c.defrag(12, pod_gpus=8, commit=True, job_id=5)
        self.assertEqual(cm.exception.function, "gpusched_placer_defrag")
        with self.assertRaises(gpusched.AlreadyExists) as cm:
            c.defrag(8, job_id=1, commit=True)
        self.assertIn("1", cm.exception.message)
        self.assertEqual(state(), before)
        p, plan = c.defrag(8, job_id=2, commit=True)
        self.assertTrue(p.committed and not plan.moves)
        c.check()
        c.close()
        with self.assertRaises(ValueError):
            c.defrag(8)


@needs(*_FUNCTIONS)
class TestRandom(unittest.TestCase):
    def test_random_clusters(self):
        """Random one- and two-node jobs on a small cluster, random gangs:
        every plan moves eligible jobs onto GPUs apart from the gang, plan
        only changes nothing, the commit gives what was planned."""
        rng = random.Random(7)
        plans = 0
        for _ in range(60):
            t = Topology.uniform(["rack"], [4, 4], 4)
            with Cluster(t) as c:
                jid = 10
                for n in range(16):
                    if rng.random() < 0.5:
                        c.allocate(jid, {n: rng.choice([1, 3, 15])}, priority=rng.randrange(4),
                                   cost_hint=rng.randrange(5), movable=rng.random() < 0.7)
                        jid += 1
                prio = rng.randrange(4)
                gpus = rng.choice([4, 8, 12, 16])
                kw = rng.choice([dict(whole_nodes=True, required="rack"), dict(required="rack"),
                                 dict(pod_gpus=4)])
                before = {j: (c.allocation(j), c.job(j)) for j in c.jobs()}
                p, plan = c.defrag(gpus, priority=prio, job_id=1, **kw)
                self.assertEqual({j: (c.allocation(j), c.job(j)) for j in c.jobs()}, before)
                if not p.ok:
                    self.assertEqual(plan, PreemptPlan())
                    continue
                plans += bool(plan.moves)
                gang = dict(zip(p.nodes, p.masks))
                for m in plan.moves:
                    j = c.job(m.job_id)
                    self.assertTrue(j.movable and j.priority <= prio)
                    self.assertEqual(Allocation(m.nodes, m.masks).gpus, c.allocation(m.job_id).gpus)
                    self.assertTrue(all(gang.get(n, 0) & mk == 0 for n, mk in zip(m.nodes, m.masks)))
                done, cplan = c.defrag(gpus, priority=prio, job_id=1, commit=True, **kw)
                self.assertTrue(done.committed)
                self.assertEqual((cplan, done.allocation), (plan, p.allocation))
                for m in plan.moves:
                    self.assertEqual(c.allocation(m.job_id), Allocation(m.nodes, m.masks))
                    self.assertEqual(c.job(m.job_id), before[m.job_id][1])
                c.check()
            t.close()
        self.assertGreater(plans, 3, "too few scenarios needed a move")


if __name__ == "__main__":
    unittest.main()
