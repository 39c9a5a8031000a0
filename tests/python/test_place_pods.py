"""Pods with resources and GPU fractions through the binding (place.h,
"Pods with resources"): Cluster.place's pod keywords, the cluster's free
resources and milli-GPUs through claims and releases, gangs with a required
level, bad input, the placement policies and Cluster.set_workload. The C
side of the same behaviour is tests/test-place-pods.c."""
import math
import unittest

import gstest
from gstest import needs
import gpusched
from gpusched import (AlreadyExists, Cluster, GpuState, InvalidArgument, LimitExceeded, NotFound,
                      PlacePolicy, PlaceReason, Topology)


def pod_topology(blocks, racks, nodes, gpus, two_classes=False, cpu=None):
    """blocks x racks x nodes of `gpus` GPUs with cpu and memory (8000 and
    32768 unless `cpu(node)` gives ``(cpu, memory)``), as topology text;
    classes a100/h100 alternate by node when `two_classes`."""
    lines = ["levels block rack", "resources cpu memory"]
    k = 0
    for b in range(blocks):
        for r in range(racks):
            for _ in range(nodes):
                c, m = cpu(k) if cpu else (8000, 32768)
                cls = "h100" if two_classes and k & 1 else "a100"
                lines.append(f"node b{b}/r{r} n{k} gpus={gpus} class={cls} cpu={c} memory={m}")
                k += 1
    return Topology.parse("\n".join(lines) + "\n")


def tight_cpu(node):
    """Node 0: cpu 2000 (one 1-GPU pod's worth); node 1: cpu 16000."""
    return (2000 if node == 0 else 16000), 65536


class PodCase(unittest.TestCase):
    """A cluster on `self.t`, closed after each test."""

    def use(self, topo):
        self.t = topo
        self.c = Cluster(topo)
        self.addCleanup(self.t.close)
        self.addCleanup(self.c.close)
        return self.c

    def free_resources(self):
        """{node: {resource: free}} of every node."""
        return {n: {r: self.c.node_resource_free(n, r) for r in self.t.resources}
                for n in range(self.t.node_count)}

    def capacities(self):
        return {n: self.t.node_resources(n) for n in range(self.t.node_count)}

    def all_milli(self):
        return {(n, g): self.c.gpu_milli_free(n, g)
                for n in range(self.t.node_count) for g in range(self.t.node_gpus(n))}

    def state(self):
        c = self.c
        return (c.free_gpus(), sorted(c.jobs()), self.free_resources(), self.all_milli())


@needs("gpusched_cluster_node_resource_free", "gpusched_cluster_gpu_milli_free")
class TestFractions(PodCase):
    def test_fractions_share_a_gpu_and_give_it_back(self):
        c = self.use(pod_topology(1, 1, 2, 4))
        half = dict(pods=1, gpu_milli=500, cpu=1000, memory=4096,
                    place_policy=PlacePolicy.BEST_FIT, commit=True)
        p = c.place(job_id=1, **half)
        self.assertTrue(p.ok, p.message)
        self.assertTrue(p.committed)
        self.assertEqual(len(p.nodes), 1)
        self.assertEqual(bin(p.masks[0]).count("1"), 1)
        self.assertEqual(p.gpus, 1)
        self.assertEqual(len(p.pods), 1)
        n, g = p.nodes[0], p.masks[0].bit_length() - 1
        self.assertEqual(c.gpu_milli_free(n, g), 500)
        self.assertEqual(c.gpu_state(n, g), (GpuState.SHARED, 0))
        self.assertEqual(c.node_resource_free(n, "cpu"), 7000)
        self.assertEqual(c.node_resource_free(self.t.node_name(n), 1), 32768 - 4096)
        self.assertEqual(c.free_gpus(), 7, "a shared GPU is not free for whole-GPU gangs")
        c.check()

        # The second half goes to the same GPU: the fullest with room.
        p2 = c.place(job_id=2, **half)
        self.assertTrue(p2.ok, p2.message)
        self.assertEqual((p2.nodes, p2.masks), (p.nodes, p.masks))
        self.assertEqual(c.gpu_milli_free(n, g), 0)
        self.assertEqual(c.gpu_state(n, g), (GpuState.SHARED, 0))
        self.assertEqual(c.frag_shared(), (1, 0))
        self.assertEqual(c.node_resource_free(n, "cpu"), 6000)
        self.assertEqual(sorted(c.node_jobs(n)), [1, 2])
        self.assertEqual(c.allocation(2).items(), [(n, 1 << g)])
        c.check()

        # Whole-GPU gangs see the 7 other GPUs.
        self.assertTrue(c.place(7).ok)
        self.assertFalse(c.place(8).ok)

        c.release(1)
        self.assertEqual(c.gpu_milli_free(n, g), 500)
        self.assertEqual(c.gpu_state(n, g)[0], GpuState.SHARED)
        c.check()
        c.release(2)
        self.assertEqual(c.gpu_milli_free(n, g), 1000)
        self.assertEqual(c.gpu_state(n, g), (GpuState.FREE, 0))
        self.assertEqual(self.free_resources(), self.capacities())
        self.assertEqual(c.free_gpus(), 8)
        c.check()

    def test_a_gang_never_puts_two_fractions_on_one_gpu(self):
        c = self.use(pod_topology(1, 1, 1, 4))
        p = c.place(pods=3, gpu_milli=300, commit=True, job_id=1)
        self.assertTrue(p.ok, p.message)
        self.assertEqual(p.pods, (0, 0, 0))
        self.assertEqual(bin(p.masks[0]).count("1"), 3)
        for g in range(4):
            self.assertEqual(c.gpu_milli_free(0, g), 700 if p.masks[0] >> g & 1 else 1000)
        # gpus= may be given: one GPU per fraction.
        self.assertTrue(c.place(4, gpu_milli=300).ok)
        with self.assertRaisesRegex(InvalidArgument, "gpus is 3"):
            c.place(3, pods=2, gpu_milli=300)
        # Five fractions of one gang need five GPUs: the node has four.
        self.assertFalse(c.place(pods=5, gpu_milli=100).ok)
        c.check()

    def test_gpu_milli_free_of_whole_and_reserved_gpus(self):
        c = self.use(pod_topology(1, 1, 1, 4))
        c.allocate(1, {0: [0]})
        c.reserve(2, {0: [1]})
        self.assertEqual([c.gpu_milli_free("n0", g) for g in range(4)], [0, 0, 1000, 1000])
        with self.assertRaises(ValueError):
            c.gpu_milli_free(0, 4)
        with self.assertRaises(NotFound):
            c.gpu_milli_free("n9", 0)


@needs("gpusched_cluster_node_resource_free")
class TestResources(PodCase):
    def test_cpu_and_memory_decrease_and_come_back(self):
        c = self.use(pod_topology(1, 2, 2, 4))
        self.assertEqual(self.free_resources(), self.capacities())
        p = c.place(pods=5, pod_gpus=1, cpu=3000, memory=10000, commit=True, job_id=7)
        self.assertTrue(p.ok, p.message)
        self.assertEqual(len(p.pods), 5)
        self.assertEqual(p.gpus, 5)
        per_node = {n: p.pods.count(n) for n in set(p.pods)}
        self.assertTrue(all(k <= 2 for k in per_node.values()), "cpu 8000 holds 2 pods of 3000")
        free = self.free_resources()
        for n in range(self.t.node_count):
            k = per_node.get(n, 0)
            self.assertEqual(free[n], {"cpu": 8000 - 3000 * k, "memory": 32768 - 10000 * k})
        self.assertEqual(c.free_gpus(), 16 - 5)
        c.check()
        c.release(7)
        self.assertEqual(self.free_resources(), self.capacities())
        self.assertEqual(c.free_gpus(), 16)

    def test_resources_mapping_and_indices(self):
        c = self.use(pod_topology(1, 1, 1, 4))
        p = c.place(pods=1, resources={"cpu": 500, "memory": 100}, commit=True, job_id=1)
        self.assertTrue(p.ok, p.message)
        self.assertEqual(self.free_resources()[0], {"cpu": 7500, "memory": 32668})
        # Resource indices work too, in the mapping and in the query.
        p = c.place(pods=1, resources={1: 200}, cpu=100, commit=True, job_id=2)
        self.assertTrue(p.ok, p.message)
        self.assertEqual((c.node_resource_free(0, 0), c.node_resource_free(0, "memory")),
                         (7400, 32468))
        with self.assertRaises(NotFound) as cm:
            c.node_resource_free(0, "gpu")
        self.assertIn("gpu", str(cm.exception))
        with self.assertRaises(ValueError):
            c.node_resource_free(0, 2)
        with self.assertRaises(NotFound):
            c.node_resource_free("n9", "cpu")

    def test_cpu_only_pods(self):
        c = self.use(pod_topology(1, 1, 2, 4))
        p = c.place(pods=3, cpu=2000, pod_gpus=0, commit=True, job_id=1)
        self.assertTrue(p.ok, p.message)
        self.assertEqual(p.gpus, 0)
        self.assertEqual(set(p.masks), {0})
        self.assertEqual(len(p.pods), 3)
        self.assertEqual(c.free_gpus(), 8, "cpu-only pods take no GPU")
        used = sum(8000 - c.node_resource_free(n, "cpu") for n in range(2))
        self.assertEqual(used, 6000)
        # pod_gpus may be left out: no whole GPU.
        self.assertTrue(c.place(pods=1, cpu=100).ok)
        # More jobs on a node than it has GPUs: node_jobs and
        # set_node_health report every one.
        for job in range(10, 20):
            self.assertTrue(c.place(pods=1, cpu=100, place_policy="first_fit", commit=True,
                                    job_id=job).ok)
        jobs0 = c.node_jobs(0)
        self.assertGreater(len(jobs0), self.t.node_gpus(0))
        self.assertTrue(set(range(10, 20)) <= set(jobs0))
        self.assertEqual(sorted(c.set_node_health(0, "draining")), sorted(jobs0))
        c.check()
        for job in c.jobs():
            c.release(job)
        self.assertEqual(self.free_resources(), self.capacities())

    def test_gangs_of_pods_with_a_required_level(self):
        c = self.use(pod_topology(2, 2, 2, 4))
        # A cpu-only pod takes no GPU.
        p = c.place(pods=1, cpu=6000, memory=1024, commit=True, job_id=1)
        self.assertTrue(p.ok, p.message)
        n = p.nodes[0]
        self.assertEqual(p.masks, (0,))
        self.assertEqual(c.node_resource_free(n, "cpu"), 2000)
        self.assertEqual(c.node_jobs(n), [1])
        # 6 pods of 2 GPUs and 3000 cpu in one block: at most 2 per node,
        # packed into the block already used.
        g = c.place(pods=6, pod_gpus=2, cpu=3000, memory=1024, required="block", commit=True,
                    job_id=2)
        self.assertTrue(g.ok, g.message)
        self.assertEqual(len(g.pods), 6)
        self.assertEqual(len(g.domains("block")), 1)
        block = g.domains("block")[0]
        self.assertEqual(self.t.node_domain(n, "block"), block)
        c.check()
        # 8 cpu-only pods of 3000 in one block: only the other block holds them.
        big = dict(cpu=3000, memory=1024)
        p = c.place(pods=8, required="block", **big)
        self.assertTrue(p.ok, p.message)
        self.assertEqual(p.domains("block"), (1 - block,))
        p = c.place(pods=9, **big)
        self.assertFalse(p.ok)
        self.assertEqual(p.reason, PlaceReason.SPLIT)
        self.assertIn("hold 8 of 9 pods", p.message)
        p = c.place(pods=5, required="rack", **big)
        self.assertFalse(p.ok)
        self.assertEqual(p.reason, PlaceReason.REQUIRED)
        self.assertIn("the best rack holds 4 of 5 pods", p.message)
        c.release(2)
        c.release(1)
        c.check()
        self.assertEqual(self.free_resources(), self.capacities())

    def test_gpu_classes(self):
        c = self.use(pod_topology(1, 2, 2, 4, two_classes=True))
        for classes in (["h100"], "h100", ("a100", "h100"), [1]):
            p = c.place(pods=1, gpu_milli=250, cpu=1000, gpu_classes=classes)
            self.assertTrue(p.ok, p.message)
            if classes != ("a100", "h100"):
                self.assertEqual(self.t.node_class(p.nodes[0]), "h100", classes)
        p = c.place(pods=4, pod_gpus=4, gpu_classes=["h100"])
        self.assertFalse(p.ok, "two h100 nodes hold 2 pods of 4 GPUs")
        self.assertTrue(c.place(pods=4, pod_gpus=4).ok)


@needs("gpusched_cluster_node_resource_free", "gpusched_cluster_gpu_milli_free")
class TestBadInput(PodCase):
    def test_bad_input_raises_and_changes_nothing(self):
        c = self.use(pod_topology(1, 2, 2, 4, two_classes=True))
        c.allocate(99, {0: [0]})
        before = self.state()
        base = dict(pods=1, cpu=1000, memory=1000, gpu_milli=500, commit=True, job_id=1)
        cases = [
            (dict(cpu=-1), ValueError, "cpu"),
            (dict(memory=-5), ValueError, "memory"),
            (dict(cpu=1.5), TypeError, "cpu"),
            (dict(cpu=True), TypeError, "cpu"),
            (dict(cpu=2 ** 32), InvalidArgument, "more than a node can have"),
            (dict(cpu=2 ** 64), ValueError, "cpu"),
            (dict(resources={"gpu": 1}), NotFound, "'gpu'"),
            (dict(resources={"memory": -1}), ValueError, "memory"),
            (dict(resources={"cpu": 5}), ValueError, "given twice"),
            (dict(cpu=None, resources={"cpu": 5, 0: 6}), ValueError, "given twice"),
            (dict(resources=[("cpu", 1)]), TypeError, "mapping"),
            (dict(pod_gpus=2), InvalidArgument, "a fraction is of one GPU"),
            (dict(gpu_milli=1001), InvalidArgument, "gpu_milli is 1001"),
            (dict(gpu_milli=-1), ValueError, "gpu_milli"),
            (dict(gpu_classes=["b200"]), NotFound, "'b200'"),
            (dict(gpu_classes=[7]), ValueError, "gpu_class"),
            (dict(pods=0), ValueError, "pods"),
            (dict(pods=-1), ValueError, "pods"),
            (dict(pods=2, gpus=5), InvalidArgument, "gpus is 5"),
            (dict(place_policy="worst_fit"), ValueError, "worst_fit"),
            (dict(place_policy=9), ValueError, "place_policy"),
            (dict(slices=[(1, "rack"), (1, "rack")]), InvalidArgument, "two slice constraints at level"),
            (dict(whole_nodes=True), InvalidArgument, "a pod on a whole node takes whole GPUs"),
            (dict(pods=None), TypeError, "pods"),
            (dict(job_id=99), AlreadyExists, "99"),
        ]
        for change, exc, needle in cases:
            kw = dict(base, **change)
            with self.subTest(change=change):
                with self.assertRaises(exc) as cm:
                    c.place(**kw)
                self.assertIn(needle, str(cm.exception))
                self.assertEqual(self.state(), before)
        # A topology without memory: memory= names what is missing.
        only_cpu = Topology.parse("levels rack\nresources cpu\nnode r0 m0 gpus=2 cpu=100\n")
        self.addCleanup(only_cpu.close)
        with Cluster(only_cpu) as other:
            with self.assertRaises(NotFound) as cm:
                other.place(pods=1, cpu=10, memory=10)
            self.assertIn("'memory'", str(cm.exception))
            self.assertTrue(other.place(pods=1, cpu=10).ok)
        self.assertEqual(self.state(), before)

    def test_a_pod_bigger_than_every_node_does_not_fit(self):
        c = self.use(pod_topology(1, 2, 2, 4))
        p = c.place(pods=1, pod_gpus=1, cpu=9000, memory=1000, commit=True, job_id=1)
        self.assertFalse(p.ok)
        self.assertFalse(p.committed)
        self.assertIn("cpu 8000 (a pod asks 9000)", p.message)
        with self.assertRaises(gpusched.DoesNotFit):
            p.raise_if_failed()
        self.assertEqual(c.job_count, 0)

    def test_calls_that_do_not_take_pods_yet(self):
        c = self.use(pod_topology(1, 2, 2, 4))
        self.assertTrue(c.place(pods=1, gpu_milli=250, cpu=500, commit=True, job_id=1).ok)
        before = self.state()
        pod = dict(pods=1, cpu=500, job_id=2, commit=True, priority=5)
        with self.assertRaises(InvalidArgument):
            c.defrag(**pod)
        self.assertEqual(self.state(), before)
        # A move takes the job of pods elsewhere, or leaves it where it is.
        self.assertTrue(c.move(1, commit=True).ok)
        self.assertEqual(c.free_gpus(), before[0])
        # Snapshots and the journal keep what the pods hold.
        back = Cluster.restore(c.snapshot())
        try:
            self.assertEqual(back.free_gpus(), c.free_gpus())
            self.assertEqual([back.node_resource_free(n, "cpu") for n in range(4)],
                             [c.node_resource_free(n, "cpu") for n in range(4)])
            self.assertEqual([back.gpu_milli_free(n, g) for n in range(4) for g in range(4)],
                             [c.gpu_milli_free(n, g) for n in range(4) for g in range(4)])
        finally:
            back.close()
        c.journal_start()
        # Whole-GPU gangs keep working beside the pods.
        self.assertTrue(c.place(8, pod_gpus=4, commit=True, job_id=3).ok)
        self.assertTrue(c.preempt(4)[0].ok)

    def test_batches_of_pods_hold_what_each_placed(self):
        c = self.use(pod_topology(1, 1, 2, 2))
        cpu = c.node_resource_free(0, "cpu")
        # Each pod takes most of a node's cpu: a third finds no room, as it
        # would after the first two were committed; plan only changes nothing.
        before = self.state()
        out = c.place_many([dict(pods=1, cpu=cpu - 100, job_id=1), dict(pods=1, cpu=cpu - 100, job_id=2),
                            dict(pods=1, cpu=200, gpu_milli=500, job_id=3)])
        self.assertEqual([p.ok for p in out], [True, True, False])
        self.assertNotEqual(out[0].nodes, out[1].nodes)
        self.assertEqual(self.state(), before)
        out = c.place_many([dict(pods=1, cpu=cpu - 100, job_id=1, commit=True),
                            dict(pods=2, cpu=50, gpu_milli=600, job_id=2, commit=True)])
        self.assertTrue(all(p.ok for p in out))
        self.assertEqual(c.job_count, 2)
        self.assertIsNone(c.check())

    def test_preemption_frees_cpu_for_a_pod_gang(self):
        c = self.use(pod_topology(1, 2, 2, 4))
        # Preemptible pods without GPUs take almost all of each node's cpu.
        cpu = c.node_resource_free(0, "cpu")
        for n in range(4):
            self.assertTrue(c.place(pods=1, cpu=cpu - 100, commit=True, job_id=10 + n, priority=n % 2,
                                    cost_hint=10 - n, preemptible=True).ok)
        before = self.state()
        placement, plan = c.preempt(pods=2, cpu=5000, gpu_milli=250, priority=5, job_id=20)
        self.assertTrue(placement.ok, placement.message)
        self.assertEqual(len(plan.victims), 2)
        # Priority first: both victims from the lowest tier (priority 0).
        self.assertEqual(sorted(plan.victims), [10, 12])
        self.assertFalse(plan.exact)
        self.assertEqual(self.state(), before, "a plan changes nothing")
        placement, plan = c.preempt(pods=2, cpu=5000, gpu_milli=250, priority=5, job_id=20, commit=True)
        self.assertTrue(placement.ok, placement.message)
        self.assertEqual(c.job_count, 3)
        self.assertIsNone(c.check())
        # Nothing of lower priority left to evict: does not fit, nothing changes.
        before = self.state()
        placement, plan = c.preempt(pods=4, cpu=5000, priority=5, job_id=21, commit=True)
        self.assertFalse(placement.ok)
        self.assertEqual(plan.victims, ())
        self.assertEqual(self.state(), before)

    def test_gpus_or_pods_is_needed(self):
        c = self.use(pod_topology(1, 1, 1, 4))
        with self.assertRaisesRegex(TypeError, "gpus"):
            c.place()
        with self.assertRaisesRegex(TypeError, "pods"):
            c.place(gpu_milli=500, cpu=10)
        with self.assertRaisesRegex(TypeError, "has no gpus"):
            c.place_many([dict(cpu=10)])
        self.assertEqual(c.job_count, 0)


class TestSlices(PodCase):
    def test_slices_of_pods_stay_in_one_rack(self):
        # 2 blocks x 2 racks x 2 nodes of 4 GPUs; 8 one-GPU pods with 2000
        # cpu (4 per node), in slices of 4 pods per rack.
        c = self.use(pod_topology(2, 2, 2, 4))
        p = c.place(pods=8, pod_gpus=1, cpu=2000, slices=(4, "rack"), commit=True, job_id=1)
        self.assertTrue(p.ok, p.message)
        racks = {}
        for node in p.pods:
            rack = self.c.topology.node_domain(node, "rack")
            racks[rack] = racks.get(rack, 0) + 1
        self.assertTrue(all(n % 4 == 0 for n in racks.values()), racks)
        # A slice of 6 pods needs 6 x 2000 cpu in one rack: 2 nodes hold 8.
        q = c.place(pods=6, pod_gpus=1, cpu=2000, slices=(6, "rack"))
        self.assertTrue(q.ok, q.message)
        q = c.place(pods=6, pod_gpus=1, cpu=3000, slices=(6, "rack"))
        self.assertFalse(q.ok)

    def test_two_nested_slices(self):
        # 8 one-GPU pods in slices of 4 per block made of slices of 2 per
        # rack, after a gang took a whole rack: every rack and block used
        # holds whole slices.
        c = self.use(pod_topology(2, 2, 2, 4))
        self.assertTrue(c.place(8, pod_gpus=4, commit=True, job_id=1, required="rack").ok)
        p = c.place(pods=8, pod_gpus=1, cpu=1000, slices=[(2, "rack"), (4, "block")])
        self.assertTrue(p.ok, p.message)
        for level, size in (("rack", 2), ("block", 4)):
            per = {}
            for node in p.pods:
                d = c.topology.node_domain(node, level)
                per[d] = per.get(d, 0) + 1
            self.assertTrue(all(n % size == 0 for n in per.values()), (level, per))
        # Slices that do not nest are refused, naming both.
        with self.assertRaises(InvalidArgument) as cm:
            c.place(pods=12, pod_gpus=1, slices=[(4, "rack"), (6, "block")])
        self.assertIn("slices must nest", str(cm.exception))


class TestWholeNodes(PodCase):
    def test_each_pod_has_an_idle_node_to_itself(self):
        c = self.use(pod_topology(1, 2, 2, 4))
        # Node 0 runs a cpu-only pod: no GPU is taken, but it is not idle.
        self.assertTrue(c.place(pods=1, cpu=500, commit=True, job_id=1, place_policy="first_fit").ok)
        busy = c.jobs()[0]
        p = c.place(pods=2, whole_nodes=True, cpu=1000, memory=1024, commit=True, job_id=2)
        self.assertTrue(p.ok, p.message)
        self.assertEqual(len(p.nodes), 2)
        self.assertTrue(all(m == 0b1111 for m in p.masks), "all of each node's GPUs")
        cpu_node = [n for n in range(4) if c.node_resource_free(n, "cpu") == 7500]
        self.assertEqual(len(cpu_node), 1)
        self.assertNotIn(cpu_node[0], p.nodes)
        self.assertEqual(sorted(c.node_resource_free(n, "cpu") for n in p.nodes), [7000, 7000])
        # One idle node is left: a third whole-node pod fits, a fourth not.
        self.assertTrue(c.place(pods=1, whole_nodes=True, cpu=1).ok)
        p = c.place(pods=2, whole_nodes=True, cpu=1)
        self.assertFalse(p.ok)
        # No node has 8 GPUs; a fraction cannot take a whole node.
        self.assertFalse(c.place(pods=1, whole_nodes=True, pod_gpus=8, cpu=1).ok)
        with self.assertRaises(InvalidArgument):
            c.place(pods=1, whole_nodes=True, gpu_milli=500)
        self.assertIsNotNone(busy)


class TestPolicies(PodCase):
    """The scenario of frag_keeps_cpu_where_gpus_need_it (C): node 0 has
    the cpu of one 1-GPU pod, node 1 plenty; a cpu-only pod."""

    CPU_ONLY = dict(pods=1, cpu=2000, memory=1024, pod_gpus=0)
    GPU_POD = dict(pod_gpus=1, cpu=2000, memory=1024)

    def node_of(self, policy):
        p = self.c.place(place_policy=policy, **self.CPU_ONLY)
        self.assertTrue(p.ok, p.message)
        return p.nodes[0]

    def test_place_policy_values(self):
        self.assertIs(gpusched.PlacePolicy, PlacePolicy)
        self.assertEqual([(p.name, int(p)) for p in PlacePolicy],
                         [("DEFAULT", 0), ("FIRST_FIT", 1), ("BEST_FIT", 2), ("FRAG", 3)])

    @needs("gpusched_placer_workload_set")
    def test_best_fit_and_frag_pick_different_nodes(self):
        c = self.use(pod_topology(1, 1, 2, 2, cpu=tight_cpu))
        c.set_workload([self.GPU_POD], [10])
        # Best fit fills node 0 (least left), which strands its two GPUs;
        # the fragmentation policy takes node 1.
        self.assertEqual(self.node_of(PlacePolicy.BEST_FIT), 0)
        self.assertEqual(self.node_of(PlacePolicy.FRAG), 1)
        self.assertEqual(self.node_of(PlacePolicy.DEFAULT), 1, "the default is FRAG")
        self.assertEqual(self.node_of(PlacePolicy.FIRST_FIT), 0)
        # Ints and names, any case.
        self.assertEqual(self.node_of(2), 0)
        self.assertEqual(self.node_of("frag"), 1)
        self.assertEqual(self.node_of("Best_Fit"), 0)
        # Committed, the choice holds.
        p = c.place(place_policy="best_fit", commit=True, job_id=1, **self.CPU_ONLY)
        self.assertEqual(p.nodes, (0,))
        self.assertEqual(c.node_resource_free(0, "cpu"), 0)
        self.assertEqual(c.place(pods=1, **self.GPU_POD).nodes, (1,),
                         "node 0's GPUs are stranded now")

    @needs("gpusched_placer_workload_set")
    def test_set_workload_and_its_errors(self):
        c = self.use(pod_topology(1, 1, 2, 2, cpu=tight_cpu))
        # A workload of 2-GPU pods with 16000 cpu: node 0 can never hold
        # one, so FRAG keeps node 1 free and takes node 0.
        c.set_workload([dict(pod_gpus=2, cpu=16000)], [1])
        self.assertEqual(self.node_of("frag"), 0)
        bad = [
            (([dict(pod_gpus=1)], [-1]), InvalidArgument, "weight 0"),
            (([dict(pod_gpus=1)], [math.nan]), InvalidArgument, "weight 0"),
            (([dict(pod_gpus=1)], [math.inf]), InvalidArgument, "weight 0"),
            (([dict(pod_gpus=1)], ["1"]), TypeError, "weights[0]"),
            (([dict(pod_gpus=1)], [1, 2]), ValueError, "1 shapes but 2 weights"),
            (([dict(pod_gpus=1), 5], [1, 1]), TypeError, "shapes[1]"),
            (([dict(pod_gpus=1, required="rack")], [1]), TypeError, "'required'"),
            (([dict(gpu_milli=500, pod_gpus=2)], [1]), InvalidArgument, "shape 0"),
            (([dict(cpu=-1)], [1]), ValueError, "shapes[0]"),
            (([dict(resources={"disk": 1})], [1]), NotFound, "'disk'"),
            (([dict(pod_gpus=1)] * 1025, [1] * 1025), LimitExceeded, "1024"),
        ]
        for args, exc, needle in bad:
            with self.subTest(args=str(args)[:60]):
                with self.assertRaises(exc) as cm:
                    c.set_workload(*args)
                self.assertIn(needle, str(cm.exception))
                self.assertEqual(self.node_of("frag"), 0, "the workload changed")
        # The C test's workload: pods of 1 GPU and 2000 cpu.
        c.set_workload([self.GPU_POD, dict(gpu_milli=500, cpu=100)], [10, 0])
        self.assertEqual(self.node_of("frag"), 1)
        c.set_workload([dict(pod_gpus=2, cpu=16000)], [1.5])
        self.assertEqual(self.node_of("frag"), 0)
        # Back to learning: the cluster's placer has seen cpu-only pods.
        c.set_workload([], [])
        self.assertEqual(self.node_of("frag"), 1)
        c.set_workload((), iter(()))
        self.assertEqual(self.node_of("frag"), 1)


if __name__ == "__main__":
    unittest.main()
