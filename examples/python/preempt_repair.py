#!/usr/bin/env python3
"""Preemption, repair and defragmentation on a small full cluster: a
high-priority gang evicts the cheapest low-priority jobs, a job whose node
fails is moved off it with its shape kept, and a gang that needs a whole
rack gets one by moving a job instead of evicting it.

Run from the repository (after `ninja -C build`):
    GPUSCHED_LIBRARY=build/lib/libgpusched.so.0.2 PYTHONPATH=python \\
        python3 examples/python/preempt_repair.py
"""
import gpusched
from gpusched import NodeHealth


def main():
    # 2 zones x 4 racks x 4 nodes x 8 GPUs: 256 GPUs.
    with gpusched.Topology.uniform(["zone", "rack"], [2, 4, 4], 8) as topo, \
            gpusched.Cluster(topo) as cluster:
        # Every node busy with a one-node job: priority 0, a cost of
        # preemption (GPU-hours since the last checkpoint), preemptible,
        # and the jobs on each rack's first node movable too.
        for n in range(topo.node_count):
            cluster.allocate(100 + n, {n: "all"}, priority=0, cost_hint=(n * 7) % 11 + 1,
                             preemptible=True, movable=n % 4 == 0)
        print(f"{cluster.job_count} jobs, {cluster.free_gpus()} GPUs free")

        # A priority-5 gang of 16 GPUs in pods of 8 inside one rack.
        p, plan = cluster.preempt(16, pod_gpus=8, required="rack", priority=5, job_id=1, commit=True)
        print(f"\npreempt for job 1: evict {list(plan.victims)} (cost {plan.cost}, {plan.gpus} GPUs)")
        print(f"  job 1 runs on {p.node_names()}")

        # Two jobs end; then the node of job 1's first pod fails: move job 1
        # off it, two pods of 8 in one rack as before.
        cluster.release(120)
        cluster.release(121)
        failed = p.nodes[0]
        cluster.set_node_health(failed, NodeHealth.DOWN)
        m = cluster.move(1, commit=True)
        if not m.ok:
            print(f"\nnode {failed} fails: job 1 cannot move: {m.message}")
            return 1
        print(f"\nnode {failed} fails: job 1 moves to {m.node_names()}")

        # Three jobs of rack 3 end; then a gang asks for a whole rack. No rack
        # is free, but moving rack 3's movable job makes one.
        for j in (113, 114, 115):
            cluster.release(j)
        p, plan = cluster.defrag(32, whole_nodes=True, required="rack", priority=5, job_id=2)
        if not p.ok:
            print(f"\ndefrag for job 2: {p.message}")
            return 1
        for mv in plan.moves:
            print(f"\ndefrag for job 2: move job {mv.job_id} to nodes {list(mv.nodes)}")
        p, plan = cluster.defrag(32, whole_nodes=True, required="rack", priority=5, job_id=2, commit=True)
        print(f"  job 2 runs on {p.node_names()}; {cluster.job_count} jobs, {cluster.free_gpus()} GPUs free")
        cluster.check()
        print("invariants: ok")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
