"""Fairness and waiting metrics of a simulation (numpy).

Service of tenant t by time T: the durations of its tasks started by T
(charged whole at dispatch, as the queue charges its tenants: work a
worker has begun is not owed). Demand by T: the durations of its tasks
that arrived by T.

- Cumulative max-min fair share at T: the service done by all tenants by
  T, divided by weighted water-filling over the demands (no tenant gets
  more than it asked for; the rest is split in proportion to the weights).
  Lag of t = fair share - service (positive: t is behind). Reported in
  mean task durations.
- Windows: the horizon cut into equal windows; in each, the service done
  is divided by water-filling over what each tenant had available (its
  unserved work at the window's start plus its arrivals in it). Jain's
  index over the tenants with a fair share of 2 mean task durations or
  more of x = service / fair.
- Waits: start - arrival for started tasks; tasks not started by the
  horizon count with horizon - arrival (censored, never left out).
  Slowdown = (wait + duration) / duration.
"""
from typing import Dict, Sequence

import numpy as np


def columns(res):
    tr = res.trace
    arr = np.array([t.arrival for t in tr.tasks])
    ten = np.array([t.tenant for t in tr.tasks], dtype=np.int64)
    dur = np.array([t.duration for t in tr.tasks])
    start = np.array(res.start, dtype=float)
    return arr, ten, dur, start


def _cumulative(res, taus, when) -> np.ndarray:
    """[len(taus), ntenants]: durations of the tasks whose `when` is <= each time."""
    _, ten, dur, _ = columns(res)
    n = res.trace.ntenants
    out = np.zeros((len(taus), n))
    for k, tau in enumerate(taus):
        m = when <= tau
        out[k] = np.bincount(ten[m], weights=dur[m], minlength=n)
    return out


def service_at(res, taus: Sequence[float]) -> np.ndarray:
    """Work started by each time (worker-seconds), per tenant."""
    start = columns(res)[3]
    return _cumulative(res, taus, np.where(np.isnan(start), np.inf, start))


def demand_at(res, taus: Sequence[float]) -> np.ndarray:
    """Work arrived by each time, per tenant."""
    return _cumulative(res, taus, columns(res)[0])


def waterfill(total: float, demand: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted max-min division of `total` among demands."""
    demand = np.maximum(demand, 0.0)
    if total >= demand.sum():
        return demand.copy()
    order = np.argsort(demand / w)
    fair = np.zeros_like(demand)
    left, wleft = total, w.sum()
    for idx in order:
        share = left * w[idx] / wleft if wleft > 0 else 0.0
        give = min(demand[idx], share)
        fair[idx] = give
        left -= give
        wleft -= w[idx]
    return fair


def lag_series(res, npoints: int = 100):
    """Times, and [npoints, ntenants] lag (worker-seconds)."""
    taus = np.linspace(res.horizon / npoints, res.horizon, npoints)
    s = service_at(res, taus)
    d = demand_at(res, taus)
    w = np.array(res.trace.weights, dtype=float)
    lag = np.array([waterfill(s[k].sum(), d[k], w) - s[k] for k in range(npoints)])
    return taus, lag


def window_shares(res, nwin: int = 20, min_fair: float = None):
    """Window edges, served [nwin, n], fair [nwin, n], Jain per window over
    the tenants whose fair share in the window is at least min_fair
    (default: 2 mean task durations; below, one task more or less swings
    the ratio by 50% or more, and Jain would measure the granularity)."""
    if min_fair is None:
        min_fair = 2.0 * float(columns(res)[2].mean())
    edges = np.linspace(0.0, res.horizon, nwin + 1)
    s = service_at(res, edges)
    d = demand_at(res, edges)
    w = np.array(res.trace.weights, dtype=float)
    served = np.diff(s, axis=0)
    fair = np.zeros_like(served)
    jain = np.zeros(nwin)
    for k in range(nwin):
        avail = d[k + 1] - s[k]
        fair[k] = waterfill(served[k].sum(), avail, w)
        m = fair[k] >= min_fair
        x = served[k][m] / fair[k][m]
        jain[k] = x.sum() ** 2 / (len(x) * (x * x).sum()) if len(x) and (x * x).sum() > 0 else 1.0
    return edges, served, fair, jain


def waits(res):
    arr, ten, dur, start = columns(res)
    started = ~np.isnan(start)
    # tasks that arrived after the horizon (none when it is the last arrival) do not count
    m = arr <= res.horizon
    w = np.where(started, start - arr, res.horizon - arr)
    return w[m], ten[m], dur[m], started[m]


def summary(res, nwin: int = 20) -> Dict[str, float]:
    arr, ten, dur, start = columns(res)
    unit = float(dur.mean())
    _, lag = lag_series(res, 100)
    _, _, _, jain = window_shares(res, nwin)
    _, _, _, jain5 = window_shares(res, 5)
    w, wt, wd, started = waits(res)
    slow = (w + wd) / wd
    q = len(lag)
    return {
        "jain_min": float(jain.min()),
        "jain_mean": float(jain.mean()),
        "jain5_mean": float(jain5.mean()),
        "lag_max": float(lag.max() / unit),
        "lag_T4": float(lag[q // 4 - 1].max() / unit),
        "lag_T2": float(lag[q // 2 - 1].max() / unit),
        "lag_T": float(lag[-1].max() / unit),
        "wait_p50": float(np.percentile(w, 50) / unit),
        "wait_p99": float(np.percentile(w, 99) / unit),
        "wait_p99_started": float(np.percentile(w[started], 99) / unit) if started.any() else 0.0,
        "slowdown_p50": float(np.percentile(slow, 50)),
        "slowdown_p99": float(np.percentile(slow, 99)),
        "throughput": float(started.sum() / res.horizon * unit),
        "unstarted": int((~started).sum()),
    }
