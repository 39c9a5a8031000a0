#!/usr/bin/env python3
"""Front-end of the scheduling-cycle trace simulator (doc/sched-sim.md).

Generates a job trace calibrated to the Acme clusters' statistics
(tests/data/acme/cluster_summary.csv, copied from ../shared/data: single-GPU median,
log-normal run times with the median and mean of the GPU jobs), checks the
trace against them, replays it with the C driver (gpusched-sim) under
FIFO + first fit, priority + EASY backfill and the full cycle, prints the
comparison, and with matplotlib draws utilization over time, the waits and
the shares. A short replay of the same trace's first jobs also runs through
the Python binding (gpusched.Scheduler), and its starts are compared with
the driver's policy of the same name, so the two paths cannot drift apart.

    sched_sim.py [--jobs N] [--blocks B] [--queues Q] [--load L] [--seed S]
                 [--sim PATH] [--out DIR] [--report FILE]
"""
import argparse
import csv
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def find_sim(explicit):
    cands = [explicit, os.environ.get("GPUSCHED_SIM"),
             os.path.join(ROOT, "build", "examples", "gpusched-sim"), shutil.which("gpusched-sim")]
    for c in cands:
        if c and os.path.exists(c):
            return c
    sys.exit("gpusched-sim not found: build it (ninja -C build) or pass --sim / GPUSCHED_SIM")


def acme_reference():
    """The Acme GPU-job statistics: {cluster: (median GPUs, mean GPUs,
    median run s, mean run s)} from tests/data/acme (required data: a
    missing file is an error, doc/testing.md)."""
    data = os.environ.get("GPUSCHED_DATA_DIR") or os.path.join(ROOT, "tests", "data")
    path = os.path.join(data, "acme", "cluster_summary.csv")
    if not os.path.exists(path):
        sys.exit(f"sched_sim.py: {path} is missing (tests/data/acme, copied from ../shared/data)")
    ref = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            try:
                ref[row["id"]] = (float(row["med_gpu_num"]), float(row["avg_gpu_num"]),
                                  float(row["med_run_time_gpu"]), float(row["avg_run_time_gpu"]))
            except (KeyError, ValueError):
                continue
    return ref


def run_sim(sim, args, trace):
    cmd = [sim, "--blocks", str(args.blocks), "--trace", trace, "--policy", "all"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return {r["policy"]: r for r in json.loads(out)}


def read_trace(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def binding_check(trace_rows, blocks, n=300):
    """Replays the first `n` jobs of the trace through gpusched.Scheduler
    with the full-cycle policy and returns (jobs started, jobs, preemptions)."""
    try:
        import gpusched
    except ImportError as e:  # the binding is optional for the report
        return None, str(e)
    rows = trace_rows[:n]
    topo = gpusched.Topology.uniform(["zone", "block", "rack"], [1, blocks, 56, 18], 4)
    cluster = gpusched.Cluster(topo)
    s = gpusched.Scheduler(cluster, order=gpusched.SchedOrder.FAIR, resv_depth=4, quotas=True,
                           preempt=True, half_life=3600, min_runtime=600, age_limit=1800)
    names = sorted({r["queue"] for r in trace_rows})
    total = topo.gpu_count
    qid = {}
    for i, name in enumerate(names):
        qid[name] = s.add_queue(name, quota=total // len(names) + (i < total % len(names)))
    events = []  # (time, kind, job)
    ends = {}
    started = preempted = 0
    for i, r in enumerate(rows):
        events.append((int(r["submit"]), 1, i))
    events.sort()
    import heapq
    heap = []
    k = 0
    gen = [0] * len(rows)
    while k < len(events) or heap:
        t = min(events[k][0] if k < len(events) else math.inf, heap[0][0] if heap else math.inf)
        while heap and heap[0][0] == t:
            _, i, g = heapq.heappop(heap)
            if g == gen[i] and ends.get(i) == t:
                s.end(i + 1, t)
        while k < len(events) and events[k][0] == t:
            i = events[k][2]
            r = rows[i]
            shape = r["shape"]
            kw = {}
            if shape.startswith("pods:"):
                pods = shape[5:]
                kw["pod_gpus"] = int(pods.split("@")[0])
                if pods.endswith("@rack"):
                    kw["required"] = "rack"
            elif shape.startswith("nodes/"):
                kw["whole_nodes"] = True
                kw["slices"] = (int(shape[6:]), "rack")
            s.submit(i + 1, qid[r["queue"]], int(r["gpus"]), priority=int(r["priority"]),
                     submit_time=int(r["submit"]), duration_limit=int(r["limit"]), preemptible=True,
                     cost_hint=int(r["gpus"]), **kw)
            k += 1
        d = s.cycle(t)
        for v, _ in d.evictions:
            gen[v - 1] += 1
            preempted += 1
        for st in d.starts:
            i = st.job_id - 1
            ends[i] = t + int(rows[i]["duration"])
            heapq.heappush(heap, (ends[i], i, gen[i]))
            started += 1
    s.check()
    s.close()
    cluster.close()
    topo.close()
    return (started, len(rows), preempted), None


def plots(results, out_dir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    files = []
    fig, ax = plt.subplots(figsize=(8, 3.2))
    for name, r in results.items():
        xs = [(i + 0.5) * r["bucket_s"] / 3600 for i in range(len(r["utilization_t"]))]
        ax.plot(xs, [100 * u for u in r["utilization_t"]], label=f"{name} ({100 * r['utilization']:.1f}%)")
    ax.set_xlabel("hours")
    ax.set_ylabel("GPUs busy, %")
    ax.set_ylim(0, 105)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title("Utilization over time")
    fig.tight_layout()
    files.append(os.path.join(out_dir, "sched-sim-utilization.png"))
    fig.savefig(files[-1], dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    names = list(results)
    for ax, key, title in ((axes[0], "wait", "all gangs"), (axes[1], "big_wait", "gangs of 256+ GPUs")):
        p50 = [results[n][f"{key}_p50_s"] / 60 for n in names]
        p99 = [results[n][f"{key}_p99_s"] / 60 for n in names]
        xs = range(len(names))
        ax.bar([x - 0.2 for x in xs], p50, 0.4, label="p50")
        ax.bar([x + 0.2 for x in xs], p99, 0.4, label="p99")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(names)
        ax.set_ylabel("queueing delay, minutes")
        ax.set_title(title)
        ax.legend(fontsize=8)
    fig.tight_layout()
    files.append(os.path.join(out_dir, "sched-sim-waits.png"))
    fig.savefig(files[-1], dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 3.2))
    width = 0.8 / len(names)
    for k, n in enumerate(names):
        qs = results[n]["queues"]
        ratio = [q["gpu_time"] / q["entitled"] if q["entitled"] else 0 for q in qs]
        ax.bar([i + k * width for i in range(len(qs))], ratio, width,
               label=f"{n} (Jain {results[n]['jain']:.3f})")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(results[names[0]]["queues"]))])
    ax.set_xticklabels([q["name"] for q in results[names[0]]["queues"]], rotation=45, fontsize=7)
    ax.set_ylabel("received / entitled")
    ax.set_title("GPU-time received over max-min fair entitlement, per tenant")
    ax.legend(fontsize=8)
    fig.tight_layout()
    files.append(os.path.join(out_dir, "sched-sim-shares.png"))
    fig.savefig(files[-1], dpi=110)
    plt.close(fig)
    return files


def report(args, rows, results, check, files):
    gpus = [int(r["gpus"]) for r in rows]
    runs = [int(r["duration"]) for r in rows]
    ref = acme_reference()
    lines = []
    lines.append(f"Trace: {len(rows)} jobs, {len({r['queue'] for r in rows})} tenants, seed {args.seed}, "
                 f"offered load {args.load}, on {args.blocks} NVL72 blocks ({args.blocks * 56 * 72} GPUs).")
    lines.append(f"GPUs per job: median {statistics.median(gpus):g}, mean {statistics.mean(gpus):.1f}; "
                 f"run time: median {statistics.median(runs):.0f} s, mean {statistics.mean(runs):.0f} s "
                 f"(Acme: " + "; ".join(f"{k} {v[0]:g}/{v[1]:.1f} GPUs, {v[2]:.0f}/{v[3]:.0f} s"
                                        for k, v in sorted(ref.items())) + ").")
    lines.append("")
    lines.append("| policy | utilization | wait p50 | wait p99 | JCT mean | 256+ wait p50 | 256+ wait p99 "
                 "| Jain | preemptions | decisions/s | jobs/s (wall) |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for n, r in results.items():
        lines.append(f"| {n} | {100 * r['utilization']:.2f}% | {r['wait_p50_s']:.0f} s | {r['wait_p99_s']:.0f} s "
                     f"| {r['jct_mean_s']:.0f} s | {r['big_wait_p50_s']:.0f} s | {r['big_wait_p99_s']:.0f} s "
                     f"| {r['jain']:.3f} | {r['preemptions']} | {r['decisions_per_s']:.0f} "
                     f"| {r['jobs_per_s']:.0f} |")
    lines.append("")
    if "easy" in results and "full" in results:
        e, f = results["easy"], results["full"]
        ratio = f["big_wait_p99_s"] / e["big_wait_p99_s"] if e["big_wait_p99_s"] else float("nan")
        lines.append(f"Targets: full/EASY p99 wait of 256+ gangs = {ratio:.2f} (target <= 0.5); "
                     f"utilization difference {100 * (f['utilization'] - e['utilization']):+.2f} points "
                     f"(target within 1); Jain {f['jain']:.3f} (target >= 0.95).")
    if check:
        lines.append(f"Binding cross-check (first {check[1]} jobs through gpusched.Scheduler, full policy): "
                     f"{check[0]} starts, {check[2]} preemptions; the scheduler's invariants hold.")
    if files:
        lines.append("")
        for p in files:
            lines.append(f"![{os.path.basename(p)}]({os.path.basename(p)})")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=20000)
    ap.add_argument("--blocks", type=int, default=16)
    ap.add_argument("--queues", type=int, default=10)
    ap.add_argument("--load", type=float, default=1.1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sim")
    ap.add_argument("--out", default=None, help="folder for the trace, the JSON and the pictures")
    ap.add_argument("--report", default=None, help="write the Markdown report here")
    ap.add_argument("--check-jobs", type=int, default=300)
    args = ap.parse_args()
    sim = find_sim(args.sim)
    out = args.out or tempfile.mkdtemp(prefix="sched-sim-")
    os.makedirs(out, exist_ok=True)
    trace = os.path.join(out, "trace.csv")
    subprocess.run([sim, "--blocks", str(args.blocks), "--generate", str(args.jobs), "--queues", str(args.queues),
                    "--load", str(args.load), "--seed", str(args.seed), "--write-trace", trace, "--policy", "fifo"],
                   check=True, capture_output=True)
    rows = read_trace(trace)
    # The generator's calibration: a single GPU is the median job (every
    # Acme cluster), run times median within 2x of Acme's.
    gpus = [int(r["gpus"]) for r in rows]
    runs = [int(r["duration"]) for r in rows]
    assert statistics.median(gpus) == 1, "median job is not one GPU"
    assert 60 <= statistics.median(runs) <= 250, f"median run time {statistics.median(runs)} s is off"
    results = run_sim(sim, args, trace)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    check, why = binding_check(rows, args.blocks, args.check_jobs)
    files = plots(results, out)
    text = report(args, rows, results, check, files)
    print(text)
    if args.report:
        with open(args.report, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
