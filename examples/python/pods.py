#!/usr/bin/env python3
"""Pods with resources: a small cluster whose nodes have cpu and memory
besides GPUs, inference pods holding half a GPU each, cpu-only pods, a gang
of whole-GPU pods in one rack, and the placement policies side by side.

Run from the repository (after `ninja -C build`):
    GPUSCHED_LIBRARY=build/lib/libgpusched.so.0.2 PYTHONPATH=python \\
        python3 examples/python/pods.py
"""
import gpusched
from gpusched import GpuState, PlacePolicy

# Two racks of two nodes; cpu in milli-cores, memory in MiB (the usual
# units; the library never interprets them). Node n1 has little cpu.
TOPOLOGY = """\
levels block rack
resources cpu memory
node b0/r0 n0 gpus=4 cpu=32000 memory=131072
node b0/r0 n1 gpus=4 cpu=8000 memory=65536
node b0/r1 n2 gpus=4 cpu=32000 memory=131072
node b0/r1 n3 gpus=4 cpu=32000 memory=131072
"""


# The workload the fragmentation policy expects (Cluster.set_workload):
# as many whole-GPU pods with 8 cores as half-GPU inference pods.
WORKLOAD = [dict(pod_gpus=1, cpu=8000, memory=16384), dict(gpu_milli=500, cpu=4000, memory=16384)]


def show(cluster, topo):
    """Free cpu, memory and milli-GPU of every node."""
    for n in range(topo.node_count):
        res = {r: cluster.node_resource_free(n, r) for r in topo.resources}
        milli = [cluster.gpu_milli_free(n, g) for g in range(topo.node_gpus(n))]
        shared = [g for g in range(topo.node_gpus(n))
                  if cluster.gpu_state(n, g)[0] == GpuState.SHARED]
        print(f"  {topo.node_name(n)}: cpu {res['cpu']:>5}, memory {res['memory']:>6}, "
              f"milli-GPU free {milli}, shared GPUs {shared}")


def run(cluster, policy, verbose):
    """Places the same pods under one policy; returns where they went."""
    where = []
    # Four inference pods of half a GPU, 4 cores and 16 GiB each, one job
    # per pod: two fractions fit on one GPU.
    for job in range(1, 5):
        p = cluster.place(pods=1, gpu_milli=500, cpu=4000, memory=16384, place_policy=policy,
                          commit=True, job_id=job).raise_if_failed()
        where.append(p.node_names()[0])
        if verbose:
            print(f"inference pod {job}: {p.by_name()}")
    # Three cpu-only pods: no pod_gpus (or pod_gpus=0), no GPU.
    p = cluster.place(pods=3, cpu=6000, memory=8192, place_policy=policy, commit=True,
                      job_id=10).raise_if_failed()
    where.append(p.pods_by_name())
    if verbose:
        print(f"cpu-only pods: {p.pods_by_name()} ({p.gpus} GPUs)")
    # A gang of 2 pods of 2 GPUs and 8 cores inside one rack.
    p = cluster.place(pods=2, pod_gpus=2, cpu=8000, memory=32768, required="rack",
                      place_policy=policy, commit=True, job_id=20).raise_if_failed()
    where.append(p.pods_by_name())
    if verbose:
        print(f"training gang: {p.pods_by_name()} in rack {p.domain_names('rack')}")
    return where


def main():
    with gpusched.Topology.parse(TOPOLOGY) as topo:
        print(f"{topo.node_count} nodes, {topo.gpu_count} GPUs, resources {topo.resources}")
        with gpusched.Cluster(topo) as cluster:
            cluster.set_workload(WORKLOAD, [1, 1])
            run(cluster, PlacePolicy.DEFAULT, verbose=True)
            # Too many pods for one rack: the placement says why.
            p = cluster.place(pods=9, pod_gpus=1, cpu=4000, required="rack")
            print(f"9 more pods in one rack: fits={p.ok}: {p.message}")
            print("\nfree after placing:")
            show(cluster, topo)
            for job in cluster.jobs():
                cluster.release(job)
            cluster.check()
            print(f"after releasing every job: {cluster.free_gpus()} GPUs free, cpu free "
                  f"{[cluster.node_resource_free(n, 'cpu') for n in range(topo.node_count)]}")

        # The same pods on an empty cluster under each policy. A free GPU on
        # a node without 4 free cores is stranded: no pod of the workload
        # can use it.
        print("\nthe same pods by policy (inference pods, cpu-only pods, gang):")
        for policy in PlacePolicy:
            with gpusched.Cluster(topo) as cluster:
                cluster.set_workload(WORKLOAD, [1, 1])
                where = run(cluster, policy, verbose=False)
                short = [n for n in range(topo.node_count)
                         if cluster.node_resource_free(n, "cpu") < 4000]
                stranded = sum(cluster.gpu_milli_free(n, g) == 1000
                               for n in short for g in range(topo.node_gpus(n)))
                print(f"  {policy.name:<9} {where[:4]} {where[4]} {where[5]}: "
                      f"{stranded} GPUs stranded")


if __name__ == "__main__":
    main()
