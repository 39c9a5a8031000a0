"""Discrete-event simulation of N workers polling a gpusched.FairQueue.

Events in time order; at one instant, completions first (the worker is
free and the predictor learns), then arrivals, then every free worker
polls. The simulation stops at the horizon (by default the last arrival):
tasks still queued then are reported with their wait so far (censored),
so a policy cannot look good by never serving some tasks.

A policy is a dict of FairQueue keyword arguments (policy=..., w_wait=...,
lag_cap=...); POLICIES names the ones the report compares. Standard
library only."""
import heapq
import math
from typing import Callable, Dict, List, NamedTuple, Optional

import gpusched

from workload import Trace

POLICIES: Dict[str, dict] = {
    # the model orchestrator's memoryless score
    "memoryless": {"policy": "des"},
    # the virtual-time preset as it is today
    "stateful": {"policy": "stateful"},
    # the preset this work adds (doc/fairq.md, doc/fairness-report.md): LAG_CAP 16
    "lagcap": {"policy": "lagcap"},
    # the same with a tighter cap: fairer in short windows, a longer tail at load 0.9
    "lagcap-4": {"policy": "lagcap", "lag_cap": 4.0},
}


class Result(NamedTuple):
    trace: Trace
    start: List[float]       # start time per task, nan if not started by the horizon
    horizon: float
    predicted: List[float]   # prediction the queue held for each started task (nan otherwise)
    decisions: list          # the decision log, when asked for


def make_queue(ntenants: int, policy: dict, weights=None) -> "gpusched.FairQueue":
    q = gpusched.FairQueue(ntenants, **policy)
    if weights:
        for t, w in enumerate(weights):
            if w != 1.0:
                q.set_tenant_weight(t, w)
    return q


def simulate(trace: Trace, policy: dict, horizon: Optional[float] = None,
             predict: Optional[Callable[[int, object], float]] = None,
             log: bool = False) -> Result:
    """Runs the trace. predict(i, task) gives the prediction passed at
    enqueue (None or 0: the library predicts from completions)."""
    tasks = trace.tasks
    n = len(tasks)
    if horizon is None:
        horizon = tasks[-1].arrival if tasks else 0.0
    start = [math.nan] * n
    pred = [math.nan] * n
    pol = dict(policy)
    if log:
        pol["log"] = 1
    q = make_queue(trace.ntenants, pol, trace.weights)
    enqueue, poll, complete = q.enqueue, q.poll, q.complete
    running: List[tuple] = []   # (finish time, task index)
    free = trace.workers
    queued = 0
    i = 0
    decisions = []
    try:
        while True:
            ta = tasks[i].arrival if i < n else math.inf
            tf = running[0][0] if running else math.inf
            now = ta if ta < tf else tf
            if now > horizon or now == math.inf:
                break
            while running and running[0][0] <= now:
                _, j = heapq.heappop(running)
                complete(j, tasks[j].duration)
                free += 1
            while i < n and tasks[i].arrival <= now:
                t = tasks[i]
                p = predict(i, t) if predict else 0.0
                enqueue(i, t.tenant, t.arrival, t.type, t.size, p or 0.0)
                queued += 1
                i += 1
            while free and queued:
                d = poll(now)
                j = d.task_id
                start[j] = now
                pred[j] = d.predicted
                heapq.heappush(running, (now + tasks[j].duration, j))
                free -= 1
                queued -= 1
        if log:
            decisions = q.decisions()
    finally:
        q.close()
    return Result(trace, start, horizon, pred, decisions)
