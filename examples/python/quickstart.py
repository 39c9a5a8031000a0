#!/usr/bin/env python3
"""Quickstart: build a topology, place a gang, print where it went, and why a
second gang does not fit.

Run from the repository (after `ninja -C build`):
    GPUSCHED_LIBRARY=build/lib/libgpusched.so.0.2 PYTHONPATH=python \
        python3 examples/python/quickstart.py
"""
import gpusched


def build_topology():
    """Two blocks of two racks of four 8-GPU nodes, built node by node (the
    preset "tiny" has the same shape)."""
    with gpusched.TopologyBuilder(["block", "rack"]) as b:
        for block in range(2):
            for rack in range(2):
                for node in range(4):
                    name = f"node-{block}{rack}{node}"
                    labels = ["ib"] if block == 0 else []
                    b.add_node([f"b{block}", f"r{rack}"], name, 8, gpu_class="h100",
                               labels=labels)
        return b.freeze()


def main():
    print(f"libgpusched {gpusched.version_string()} from {gpusched.library_path()}")
    with build_topology() as topo, gpusched.Cluster(topo) as cluster:
        print(f"topology: levels {list(topo.levels)}, {topo.node_count} nodes, "
              f"{topo.gpu_count} GPUs, classes {list(topo.classes)}, labels {list(topo.labels)}")

        # A training gang: 24 GPUs as 3 pods of 8, all in one rack, on
        # InfiniBand nodes; commit it as job 1.
        p = cluster.place(24, pod_gpus=8, required="rack", labels=["ib"], commit=True, job_id=1)
        print(f"\njob 1: {p.message}")
        for name, gpus in p.by_name().items():
            print(f"  {name}: GPUs {gpus}")
        print(f"  racks used: {p.domain_names('rack')}, locality {p.locality}")
        print(f"  cluster: {cluster.free_gpus()} of {topo.gpu_count} GPUs free, "
              f"rack fragmentation {cluster.frag('rack')}")

        # A second gang of 40 GPUs in one rack cannot fit: a rack has 32.
        p = cluster.place(40, required="rack", job_id=2)
        print(f"\njob 2 (40 GPUs in one rack): fits={p.ok}, reason {p.reason.name}")
        print(f"  why: {p.message}")

        # Without the rack constraint it fits, spread as little as possible.
        p = cluster.place(40, job_id=2, commit=True)
        print(f"\njob 2 (40 GPUs anywhere): {p.message}")
        print(f"  blocks {p.domain_names('block')}, racks {p.domain_names('rack')}")

        cluster.release(1)
        cluster.check()
        print(f"\nafter releasing job 1: {cluster.free_gpus()} GPUs free, jobs {cluster.jobs()}")


if __name__ == "__main__":
    main()
