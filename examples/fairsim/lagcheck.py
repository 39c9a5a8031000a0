"""The lag of every tenant against its cumulative weighted max-min fair
share, with the standard library only (the property tests run where numpy
is not installed; metrics.py computes the same with numpy for the report).

Service of a tenant by time T: durations of its tasks started by T.
Demand: durations of its tasks arrived by T. Fair share: the total service
by T divided by weighted water-filling over the demands. Lag = fair share
- service: positive when the tenant is behind, negative when ahead."""
import math
from typing import List, Sequence, Tuple


def waterfill(total: float, demand: Sequence[float], w: Sequence[float]) -> List[float]:
    if total >= sum(demand):
        return list(demand)
    order = sorted(range(len(demand)), key=lambda i: demand[i] / w[i])
    fair = [0.0] * len(demand)
    left, wleft = total, sum(w)
    for i in order:
        give = min(demand[i], left * w[i] / wleft)
        fair[i] = give
        left -= give
        wleft -= w[i]
    return fair


def lags(trace, start: Sequence[float], horizon: float, npoints: int = 200) -> List[Tuple[float, List[float]]]:
    """(time, lag per tenant) at npoints equally spaced times up to the horizon."""
    n = trace.ntenants
    arrivals = sorted((t.arrival, t.tenant, t.duration) for t in trace.tasks)
    starts = sorted((s, t.tenant, t.duration) for s, t in zip(start, trace.tasks) if not math.isnan(s))
    dem, srv = [0.0] * n, [0.0] * n
    ia = js = 0
    out = []
    for k in range(1, npoints + 1):
        tau = horizon * k / npoints
        while ia < len(arrivals) and arrivals[ia][0] <= tau:
            dem[arrivals[ia][1]] += arrivals[ia][2]
            ia += 1
        while js < len(starts) and starts[js][0] <= tau:
            srv[starts[js][1]] += starts[js][2]
            js += 1
        fair = waterfill(sum(srv), dem, trace.weights)
        out.append((tau, [f - s for f, s in zip(fair, srv)]))
    return out
