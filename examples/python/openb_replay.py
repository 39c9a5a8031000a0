#!/usr/bin/env python3
"""Replays the real Alibaba GPU trace (openb, Weng et al., "Beware of
Fragmentation", USENIX ATC'23) through the library and prints cluster
utilization over time.

The cluster is the trace's 1,213 GPU nodes (openb_node_list_gpu_node.csv),
grouped by GPU model into pools and racks of 16 nodes; the workload is
openb_pod_list_default.csv: each pod with GPUs arrives at its creation time,
asks for num_gpu GPUs on one node (a pod of that size) and leaves at its
deletion time (--fill: they never leave). Pods sharing a fraction of a GPU (gpu_milli < 1000) take a
whole GPU here: the library allocates whole GPUs. Pods that do not fit
wait in FIFO order and are retried whenever GPUs are released.

Data: tests/data/openb in the repository, or GPUSCHED_DATA_DIR.

    GPUSCHED_LIBRARY=build/lib/libgpusched.so.0.2 PYTHONPATH=python \
        python3 examples/python/openb_replay.py [--every-days D] [--limit N]
"""
import argparse
import collections
import csv
import heapq
import os
import sys

import gpusched

RACK_NODES = 16
DAY = 86400


def data_dir():
    env = os.environ.get("GPUSCHED_DATA_DIR")
    if env:
        return env
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.path.join(root, "tests", "data")


def build_topology(nodes_csv):
    """Pools by GPU model, racks of RACK_NODES nodes, the trace's nodes."""
    by_model = collections.defaultdict(list)
    with open(nodes_csv, newline="") as f:
        for row in csv.DictReader(f):
            gpus = int(row["gpu"])
            if gpus > 0:
                by_model[row["model"]].append((row["sn"], gpus))
    with gpusched.TopologyBuilder(["pool", "rack"]) as b:
        for model, nodes in sorted(by_model.items()):
            for i, (sn, gpus) in enumerate(nodes):
                b.add_node([model, f"r{i // RACK_NODES}"], sn, gpus, gpu_class=model)
        return b.freeze()


def read_pods(pods_csv, limit=None):
    """(creation, deletion, name, gpus) of every pod that asks for GPUs."""
    pods = []
    with open(pods_csv, newline="") as f:
        for row in csv.DictReader(f):
            gpus = int(row["num_gpu"])
            if gpus == 0:
                continue
            start = int(row["creation_time"])
            end = int(row["deletion_time"]) if row["deletion_time"] else None
            pods.append((start, end, row["name"], gpus))
            if limit and len(pods) >= limit:
                break
    pods.sort(key=lambda p: p[0])
    return pods


class Meter:
    """Time-weighted average and peak utilization per report interval."""

    def __init__(self, cluster, total, every, start):
        self.cluster, self.total, self.every = cluster, total, every
        self.used = 0
        self.last = self.start = start
        self.next = start + every
        self.area = 0.0
        self.peak = 0

    def advance(self, t):
        while self.next <= t:
            self.area += self.used * (self.next - self.last)
            self.report(self.next)
            self.last, self.next = self.next, self.next + self.every
            self.area, self.peak = 0.0, self.used
        self.area += self.used * (t - self.last)
        self.last = t

    def changed(self):
        self.used = self.total - self.cluster.free_gpus()
        self.peak = max(self.peak, self.used)

    def report(self, t):
        c = self.cluster
        print(f"day {t / DAY:6.1f}  utilization avg {self.area / self.every / self.total:6.1%}"
              f"  peak {self.peak / self.total:6.1%}  now {self.used / self.total:6.1%}"
              f"  running {c.job_count:4d}  free 8-GPU nodes {c.nodes_with_free(8):4d}"
              f"  stranded GPUs {c.frag('node').stranded_gpus:5d}")


def replay(topo, pods, every, start):
    """Pods arrive and leave at their trace times; waiting pods are retried
    (FIFO, bounded backfill) whenever GPUs are released."""
    cluster = gpusched.Cluster(topo)
    meter = Meter(cluster, topo.gpu_count, every, start)
    biggest = max(topo.node_gpus(n) for n in range(topo.node_count))
    releases = []            # heap of (deletion time, job id)
    waiting = collections.deque()
    placed = too_big = 0

    def try_start(job, gpus, end, now):
        p = cluster.place(gpus, pod_gpus=gpus, job_id=job, commit=True, start_time=now)
        if p.ok and end is not None:
            heapq.heappush(releases, (end, job))
        return p.ok

    print(f"cluster: {topo.node_count} nodes, {topo.gpu_count} GPUs, "
          f"pools {topo.domain_names('pool')}")
    print(f"trace: {len(pods)} GPU pods, reported from day {start / DAY:.0f}\n")
    for job, (t, end, _name, gpus) in enumerate(pods, 1):
        freed = False
        while releases and releases[0][0] <= t:
            rt, rjob = heapq.heappop(releases)
            meter.advance(max(rt, meter.last))
            cluster.release(rjob)
            meter.changed()
            freed = True
        meter.advance(max(t, meter.last))
        for _ in range(min(len(waiting), 64) if freed else 0):
            wjob, wgpus, wend = waiting[0]
            if (wend is not None and wend <= t) or try_start(wjob, wgpus, wend, t):
                waiting.popleft()
                placed += wend is None or wend > t
            else:
                waiting.rotate(-1)
        if gpus > biggest:
            too_big += 1
        elif try_start(job, gpus, end, t):
            placed += 1
        else:
            waiting.append((job, gpus, end))
        meter.changed()
    meter.advance(meter.next)
    cluster.check()
    print(f"\nplaced {placed} of {len(pods)} pods, {too_big} larger than any node, "
          f"{len(waiting)} still waiting at the end")
    cluster.close()


def fill(topo, pods, every_pods):
    """The fragmentation experiment of the paper: pods arrive in trace order
    and never leave, until the first one does not fit."""
    with gpusched.Cluster(topo) as cluster:
        total = topo.gpu_count
        for job, (_t, _end, _name, gpus) in enumerate(pods, 1):
            p = cluster.place(gpus, pod_gpus=gpus, job_id=job, commit=True)
            if job % every_pods == 0 or not p.ok:
                used = total - cluster.free_gpus()
                print(f"pods {job:5d}  utilization {used / total:6.1%}  "
                      f"stranded GPUs {cluster.frag('node').stranded_gpus:5d}  "
                      f"free 8-GPU nodes {cluster.nodes_with_free(8):4d}")
            if not p.ok:
                print(f"\npod {job} ({gpus} GPUs) does not fit: {p.message}")
                return


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--every-days", type=float, default=2.0, help="report interval")
    ap.add_argument("--from-day", type=float, default=118.0,
                    help="first reported day (most of the trace's pods arrive after day 118)")
    ap.add_argument("--limit", type=int, default=None, help="replay only the first N GPU pods")
    ap.add_argument("--fill", action="store_true",
                    help="pods never leave: fill the cluster until a pod does not fit")
    args = ap.parse_args()
    d = os.path.join(data_dir(), "openb")
    nodes_csv = os.path.join(d, "openb_node_list_gpu_node.csv")
    pods_csv = os.path.join(d, "openb_pod_list_default.csv")
    if not (os.path.exists(nodes_csv) and os.path.exists(pods_csv)):
        # The files are in the repository (tests/data/openb): missing means a
        # broken checkout, a failure, not a skip (doc/testing.md).
        print(f"openb data not found in {d}: the repository's tests/data/openb "
              "is missing or GPUSCHED_DATA_DIR points elsewhere", file=sys.stderr)
        return 1
    with build_topology(nodes_csv) as topo:
        pods = read_pods(pods_csv, args.limit)
        if args.fill:
            fill(topo, pods, 500)
        else:
            replay(topo, pods, int(args.every_days * DAY), int(args.from_day * DAY))
    return 0


if __name__ == "__main__":
    sys.exit(main())
