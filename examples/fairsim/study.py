#!/usr/bin/env python3
"""Two studies of the fairness report (doc/fairness-report.md).

predict: how accurate the queue's duration predictor is on the traces
(share of predictions within 2x of the actual duration, by work-size
quartile and by task type), and what the prediction term does to wait and
fairness, with the library's predictions, exact ones, and adversarially
wrong ones (10x over for tenant 0, 10x under for the others).

halflife: tenant 0 alone for a third of the trace, then ten tenants at
equal rates (workload.come_and_go): with the lag cap and no half-life the
newcomers are served until their service catches up with tenant 0's past
service; HALF_LIFE forgets that past.

    GPUSCHED_LIBRARY=build/lib/libgpusched.so.0.2 PYTHONPATH=python \\
        /usr/bin/python3 examples/fairsim/study.py predict halflife
"""
import math
import sys

import numpy as np

import metrics
import sim
import workload

TYPES = ["Seren", "Kalos", "Philly", "Helios", "PAI"]


def within2(pred, actual):
    r = pred / actual
    return float(np.mean((r >= 0.5) & (r <= 2.0)))


def accuracy(kind="zipf", n=10, load=0.9):
    tr = workload.scenario(kind, n, load)
    res = sim.simulate(tr, sim.POLICIES["lagcap"])
    ok = ~np.isnan(np.array(res.predicted))
    pred = np.array(res.predicted)[ok]
    act = np.array([t.duration for t in tr.tasks])[ok]
    size = np.array([t.size for t in tr.tasks])[ok]
    typ = np.array([t.type for t in tr.tasks])[ok]
    half = len(pred) // 2  # the second half: the predictor has warmed up
    lines = [f"### Predictor accuracy, {tr.name} (lagcap), {len(pred)} dispatched tasks", "",
             "| slice | tasks | within 2x (all) | within 2x (second half) | median pred/actual |",
             "|---|---|---|---|---|"]

    def row(name, m):
        m2 = m.copy()
        m2[:half] = False
        lines.append(f"| {name} | {int(m.sum())} | {within2(pred[m], act[m]):.2f} | "
                     f"{within2(pred[m2], act[m2]) if m2.any() else math.nan:.2f} | "
                     f"{float(np.median(pred[m] / act[m])):.2f} |")
    row("all", np.ones(len(pred), bool))
    q = np.quantile(size, [0.25, 0.5, 0.75])
    edges = [0.0, *q, np.inf]
    for i in range(4):
        row(f"size quartile {i + 1}", (size >= edges[i]) & (size < edges[i + 1]))
    for t in range(len(TYPES)):
        row(f"type {t} ({TYPES[t]})", typ == t)
    # what an ideal predictor of this model could reach: the noise alone
    rnd = np.random.default_rng(1)
    lines += ["", f"Floor set by the trace's own noise (log-normal, sigma {workload.NOISE}): "
              f"{float(np.mean(np.abs(rnd.normal(0, workload.NOISE, 100000)) <= math.log(2))):.2f} within 2x "
              f"for a predictor that knows the model exactly.", ""]
    return "\n".join(lines)


def effect(kind="zipf", n=10, loads=(0.9, 1.3), seeds=(1, 2, 3)):
    exact = lambda i, t: t.duration  # noqa: E731
    adversary = lambda i, t: t.duration * (10.0 if t.tenant == 0 else 0.1)  # noqa: E731
    cases = [("memoryless", sim.POLICIES["memoryless"], None),
             ("memoryless + pred 0.3", {"policy": "des", "w_pred": 0.3}, None),
             ("lagcap", sim.POLICIES["lagcap"], None),
             ("lagcap + pred 0.3", {"policy": "lagcap", "w_pred": 0.3}, None),
             ("lagcap + pred 0.3, exact predictions", {"policy": "lagcap", "w_pred": 0.3}, exact),
             ("lagcap, adversarial predictions", sim.POLICIES["lagcap"], adversary),
             ("lagcap + pred 0.3, adversarial predictions", {"policy": "lagcap", "w_pred": 0.3}, adversary)]
    lines = [f"### Effect of the prediction term, {kind}, {n} tenants (mean of {len(seeds)} seeds)", "",
             "| load | policy | Jain mean | max lag | wait p50 / p99 | slowdown p50 / p99 |",
             "|---|---|---|---|---|---|"]
    for load in loads:
        trs = [workload.scenario(kind, n, load, seed=s) for s in seeds]
        for name, pol, pred in cases:
            ss = [metrics.summary(sim.simulate(tr, pol, predict=pred)) for tr in trs]
            m = {k: float(np.mean([s[k] for s in ss])) for k in ss[0]}
            lines.append(f"| {load} | {name} | {m['jain_mean']:.3f} | {m['lag_max']:.1f} | "
                         f"{m['wait_p50']:.2f} / {m['wait_p99']:.1f} | "
                         f"{m['slowdown_p50']:.1f} / {m['slowdown_p99']:.0f} |")
            print(f"  {load} {name}", file=sys.stderr, flush=True)
    return "\n".join(lines) + "\n"


def halflife(n=10, load=1.3):
    tr = workload.come_and_go(n, load)
    unit = float(np.mean([t.duration for t in tr.tasks]))
    cases = [("memoryless", sim.POLICIES["memoryless"]), ("stateful", sim.POLICIES["stateful"]),
             ("stateful, half-life 20 mean durations", {"policy": "stateful", "half_life": 20 * unit})]
    for h in (0, 20, 100):
        pol = {"policy": "lagcap"}
        if h:
            pol["half_life"] = h * unit
        cases.append((f"lagcap, half-life {h or 'off'}" + (" mean durations" if h else ""), pol))
    lines = [f"### Tenants that come and go: {tr.name}", "",
             "Tenant 0 alone for the first third of the tasks, then ten tenants at equal rates.", "",
             "| policy | Jain mean (min) | max lag (cumulative) | tenant 0 wait p99 | others wait p99 | all p50 / p99 |",
             "|---|---|---|---|---|---|"]
    for name, pol in cases:
        res = sim.simulate(tr, pol)
        s = metrics.summary(res)
        w, ten, _, _ = metrics.waits(res)
        w0 = float(np.percentile(w[ten == 0], 99) / unit)
        wo = float(np.percentile(w[ten != 0], 99) / unit)
        lines.append(f"| {name} | {s['jain_mean']:.3f} ({s['jain_min']:.2f}) | {s['lag_max']:.0f} | "
                     f"{w0:.0f} | {wo:.0f} | {s['wait_p50']:.1f} / {s['wait_p99']:.0f} |")
        print(f"  {name}", file=sys.stderr, flush=True)
    return "\n".join(lines) + "\n"


def main(argv):
    for what in argv or ["predict", "halflife"]:
        if what == "predict":
            print(accuracy("zipf", 10, 0.9))
            print(accuracy("helios", 100, 1.3))
            print(effect())
        elif what == "halflife":
            print(halflife())
        else:
            raise SystemExit(f"unknown study {what!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
