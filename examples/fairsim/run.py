#!/usr/bin/env python3
"""The fairness report's table and pictures: every scenario of issue 18
(Zipf or Helios-quota rates, 10 or 100 tenants, load 0.9 or 1.3, 32 workers,
30,000 tasks) under each policy, averaged over seeds.

    GPUSCHED_LIBRARY=build/lib/libgpusched.so.0.2 PYTHONPATH=python \\
        /usr/bin/python3 examples/fairsim/run.py --seeds 3 --pictures doc/pictures

Prints a markdown table (times in mean task durations); --json writes the
per-seed figures. Needs numpy (and matplotlib for --pictures)."""
import argparse
import json
import os
import sys

import numpy as np

import metrics
import sim
import workload

SCENARIOS = [(k, n, load) for k in ("zipf", "helios") for n in (10, 100) for load in (0.9, 1.3)]
COLUMNS = ["jain_mean", "jain_min", "jain5_mean", "lag_T4", "lag_T2", "lag_T", "lag_max", "wait_p50", "wait_p99",
           "slowdown_p99", "throughput"]


def run_all(scenarios, policies, seeds, ntasks):
    rows = []
    for kind, n, load in scenarios:
        for seed in range(1, seeds + 1):
            tr = workload.scenario(kind, n, load, seed=seed, ntasks=ntasks)
            for name in policies:
                s = metrics.summary(sim.simulate(tr, sim.POLICIES[name]))
                rows.append({"scenario": f"{kind}-n{n}-load{load}", "policy": name, "seed": seed, **s})
                print(f"  {kind} n={n} load={load} seed={seed} {name}: jain {s['jain_mean']:.3f} "
                      f"lag max {s['lag_max']:.1f} p99 {s['wait_p99']:.2f}", file=sys.stderr, flush=True)
    return rows


def table(rows, policies):
    out = ["| scenario | policy | Jain, 20 windows: mean (min) | Jain, 5 windows | max lag at T/4, T/2, T (max) "
           "| wait p50 / p99 | slowdown p99 |",
           "|---|---|---|---|---|---|---|"]
    for sc in dict.fromkeys(r["scenario"] for r in rows):
        for p in policies:
            rs = [r for r in rows if r["scenario"] == sc and r["policy"] == p]
            m = {c: float(np.mean([r[c] for r in rs])) for c in COLUMNS}
            jmin = min(r["jain_min"] for r in rs)
            out.append(f"| {sc} | {p} | {m['jain_mean']:.3f} ({jmin:.2f}) | {m['jain5_mean']:.3f} | "
                       f"{m['lag_T4']:.1f} / {m['lag_T2']:.1f} / {m['lag_T']:.1f} ({m['lag_max']:.1f}) | "
                       f"{m['wait_p50']:.2f} / {m['wait_p99']:.1f} | {m['slowdown_p99']:.0f} |")
    return "\n".join(out)


def pictures(outdir, kind="zipf", n=10, load=1.3, policies=("memoryless", "stateful", "lagcap")):
    """Share over time per tenant, max lag over time, wait CDFs."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    tr = workload.scenario(kind, n, load)
    unit = float(np.mean([t.duration for t in tr.tasks]))
    res = {p: sim.simulate(tr, sim.POLICIES[p]) for p in policies}
    tag = f"{kind}-n{n}-load{load}"
    meta = {"Date": None}

    fig, axes = plt.subplots(1, len(policies), figsize=(4.2 * len(policies), 3.4), sharey=True)
    for ax, p in zip(axes, policies):
        edges, served, fair, _ = metrics.window_shares(res[p], 30)
        mid = (edges[:-1] + edges[1:]) / 2 / unit
        for t in range(min(n, 10)):
            ratio = np.where(fair[:, t] > 0, served[:, t] / np.maximum(fair[:, t], 1e-12), np.nan)
            ax.plot(mid, ratio, lw=1, label=f"tenant {t}")
        ax.set_title(p)
        ax.set_xlabel("time (mean task durations)")
        ax.axhline(1.0, color="k", lw=0.5)
    axes[0].set_ylabel("service / max-min fair share (window)")
    axes[-1].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, f"fairness-share-{tag}.svg"), metadata=meta)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    for p in policies:
        taus, lag = metrics.lag_series(res[p], 200)
        ax.plot(taus / unit, lag.max(axis=1) / unit, label=p)
    ax.set_yscale("symlog", linthresh=1)
    ax.set_xlabel("time (mean task durations)")
    ax.set_ylabel("max lag (mean task durations)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, f"fairness-lag-{tag}.svg"), metadata=meta)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    for p in policies:
        w = np.sort(metrics.waits(res[p])[0] / unit)
        ax.plot(np.maximum(w, 1e-3), np.arange(1, len(w) + 1) / len(w), label=p)
    ax.set_xscale("log")
    ax.set_xlabel("wait (mean task durations; censored at the horizon)")
    ax.set_ylabel("share of tasks")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, f"fairness-wait-cdf-{tag}.svg"), metadata=meta)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--tasks", type=int, default=30000)
    ap.add_argument("--policies", default="memoryless,stateful,lagcap,lagcap-4")
    ap.add_argument("--scenario", action="append", help="kind,tenants,load (repeatable); default: all")
    ap.add_argument("--json", help="write the per-seed figures here")
    ap.add_argument("--pictures", help="write the pictures of zipf,10,1.3 and zipf,100,0.9 here")
    ap.add_argument("--from-json", help="print the table of an earlier --json run (no simulation)")
    a = ap.parse_args(argv)
    pols = a.policies.split(",")
    scen = SCENARIOS
    if a.scenario:
        scen = [(s.split(",")[0], int(s.split(",")[1]), float(s.split(",")[2])) for s in a.scenario]
    if a.from_json:
        with open(a.from_json) as f:
            rows = json.load(f)
        print(table(rows, list(dict.fromkeys(r["policy"] for r in rows))))
        return
    rows = run_all(scen, pols, a.seeds, a.tasks)
    print(table(rows, pols))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    if a.pictures:
        pictures(a.pictures, "zipf", 10, 1.3)
        pictures(a.pictures, "zipf", 100, 0.9)


if __name__ == "__main__":
    main()
