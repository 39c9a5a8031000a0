#!/usr/bin/env python3
"""Learns queue weights offline, two ways, over the binding.

1. From decision logs: every logged decision holds the chosen task's score
   and its four terms before their weights, so the weights that produced a
   log are the least-squares solution of score = sum_k W_k term_k
   (recover_weights; standard library only). Exploration does not disturb
   it: the score is logged before the softmax draw.
   The log does not hold the terms of the candidates that were not chosen,
   so an inverse-propensity (IPS) estimate of *other* weights cannot be
   formed from it: the target policy's probability of the logged choice
   needs every candidate's score. Hence 2.

2. By replaying traces (counterfactual simulation: arrivals and durations
   do not depend on the policy): a grid of candidate weights is scored on
   training traces; the best p99 wait whose mean Jain index is at least the
   baseline's (0.1 backlog / 0.9 wait) is validated on held-out traces
   (other seeds), with a paired bootstrap confidence interval of the
   change in p99 wait.

    GPUSCHED_LIBRARY=build/lib/libgpusched.so.0.2 PYTHONPATH=python \\
        /usr/bin/python3 examples/fairsim/learn.py --train 2 --test 6
"""
import argparse
import json
import random
import sys
from typing import Dict, List, Sequence

TERMS = ("term_backlog", "term_wait", "term_vtime", "term_pred")
NAMES = ("w_backlog", "w_wait", "w_vtime", "w_pred")


def _solve(a: List[List[float]], b: List[float]) -> List[float]:
    """Gaussian elimination with partial pivoting; a singular column (a
    term that never varied) gets weight 0."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        if abs(m[c][c]) < 1e-12:
            continue
        for r in range(n):
            if r != c and m[r][c] != 0.0:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c])]
    return [m[i][n] / m[i][i] if abs(m[i][i]) >= 1e-12 else 0.0 for i in range(n)]


def recover_weights(decisions: Sequence) -> Dict[str, float]:
    """Least-squares weights of the logged scores on the logged terms."""
    ata = [[0.0] * 4 for _ in range(4)]
    atb = [0.0] * 4
    for d in decisions:
        x = [getattr(d, t) for t in TERMS]
        for i in range(4):
            atb[i] += x[i] * d.score
            for j in range(4):
                ata[i][j] += x[i] * x[j]
    return dict(zip(NAMES, _solve(ata, atb)))


# Candidates of the replay search: the memoryless family (backlog and
# prediction terms against 0.9 wait) and the lag-cap family.
GRID = ([{"policy": "des", "w_backlog": b, "w_pred": p} for b in (0.0, 0.05, 0.1, 0.2)
         for p in (0.0, 0.1, 0.3, 1.0)] +
        [{"policy": "lagcap", "lag_cap": c, "w_pred": p} for c in (4.0, 16.0, 64.0)
         for p in (0.0, 0.3)])
BASELINE = {"policy": "des"}


def evaluate(policy, traces):
    import metrics
    import sim
    out = []
    for tr in traces:
        s = metrics.summary(sim.simulate(tr, policy))
        out.append((s["wait_p99"], s["jain_mean"], s["lag_max"]))
    return out


def bootstrap_ci(base: Sequence[float], new: Sequence[float], n: int = 2000, seed: int = 1):
    """Mean relative change of p99 (new / base - 1) over paired traces and
    its 95% bootstrap interval (traces resampled)."""
    rel = [b2 / b1 - 1.0 for b1, b2 in zip(base, new)]
    rnd = random.Random(seed)
    means = sorted(sum(rnd.choice(rel) for _ in rel) / len(rel) for _ in range(n))
    return sum(rel) / len(rel), means[int(0.025 * n)], means[int(0.975 * n) - 1]


def traces(seeds, loads, kinds=("zipf", "helios"), tenants=(10, 100), ntasks=30000):
    import workload
    return [workload.scenario(k, n, load, seed=s, ntasks=ntasks)
            for s in seeds for k in kinds for n in tenants for load in loads]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", type=int, default=2, help="training seeds per scenario")
    ap.add_argument("--test", type=int, default=6, help="held-out seeds per scenario")
    ap.add_argument("--load", type=float, action="append", help="loads (default 0.9)")
    ap.add_argument("--tasks", type=int, default=30000)
    ap.add_argument("--json", help="write the grid and the validation here")
    a = ap.parse_args(argv)
    loads = a.load or [0.9]
    train = traces(range(101, 101 + a.train), loads, ntasks=a.tasks)
    base_train = evaluate(BASELINE, train)
    bp99 = sum(x[0] for x in base_train) / len(train)
    bjain = sum(x[1] for x in base_train) / len(train)
    print(f"baseline on {len(train)} training traces: p99 {bp99:.3f}, Jain {bjain:.4f}", file=sys.stderr)
    grid = []
    for cand in GRID:
        r = evaluate(cand, train)
        p99 = sum(x[0] for x in r) / len(r)
        jain = sum(x[1] for x in r) / len(r)
        grid.append({"policy": cand, "p99": p99, "jain": jain})
        print(f"  {json.dumps(cand)}: p99 {p99:.3f} Jain {jain:.4f}", file=sys.stderr, flush=True)
    ok = [g for g in grid if g["jain"] >= bjain - 1e-9]
    best = min(ok, key=lambda g: g["p99"])
    print(f"chosen: {json.dumps(best['policy'])}", file=sys.stderr)
    test = traces(range(201, 201 + a.test), loads, ntasks=a.tasks)
    base = evaluate(BASELINE, test)
    new = evaluate(best["policy"], test)
    mean, lo, hi = bootstrap_ci([x[0] for x in base], [x[0] for x in new])
    jb = sum(x[1] for x in base) / len(base)
    jn = sum(x[1] for x in new) / len(new)
    summary = {
        "loads": loads, "chosen": best["policy"], "train_traces": len(train), "test_traces": len(test),
        "test_p99_baseline": sum(x[0] for x in base) / len(base),
        "test_p99_chosen": sum(x[0] for x in new) / len(new),
        "p99_change": mean, "p99_change_ci95": [lo, hi],
        "test_jain_baseline": jb, "test_jain_chosen": jn,
        "test_lag_max_baseline": max(x[2] for x in base), "test_lag_max_chosen": max(x[2] for x in new),
    }
    print(json.dumps(summary, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"grid": grid, "validation": summary}, f, indent=1)


if __name__ == "__main__":
    main()
