"""Arrival traces for the fair-share queue simulator: a trace is a list of
tasks (arrival time, tenant, type, work size, duration), sorted by arrival,
read from or written to CSV, or generated with tenant rates from a Zipf law
or the Helios virtual clusters' quotas and durations calibrated to the Acme
clusters' median GPU job run times (tests/data/fairsim/README.md).

Standard library only, so that the tests and the learner run anywhere the
binding does."""
import csv
import math
import os
import random
from typing import List, NamedTuple, Optional, Sequence

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                    "tests", "data", "fairsim")
ACME_CSV = os.path.join(DATA, "acme_cluster_summary.csv")
HELIOS_CSV = os.path.join(DATA, "helios_Earth_gpu_number.csv")

# Duration model: log duration = log(median of the type) + SIZE_EXP * log(size)
# + noise. With log size ~ N(0, 1) and noise ~ N(0, NOISE) the log duration
# has standard deviation sqrt(0.8^2 + 0.6^2) = 1 around the type's median,
# and the work size explains 64% of its variance (what a predictor can learn).
SIZE_EXP = 0.8
NOISE = 0.6


class Task(NamedTuple):
    arrival: float
    tenant: int
    type: int
    size: float
    duration: float


class Trace(NamedTuple):
    tasks: List[Task]
    ntenants: int
    weights: List[float]     # entitlement of each tenant (share weight)
    workers: int
    name: str


def acme_medians(path: str = ACME_CSV) -> List[float]:
    """Median GPU job run time (seconds) of each Acme cluster, in file order
    (Seren, Kalos, Philly, Helios, PAI): one task type each."""
    with open(path, newline="") as f:
        return [float(r["med_run_time_gpu"]) for r in csv.DictReader(f)]


def helios_quotas(date: str = "2020-06-01", path: str = HELIOS_CSV) -> List[float]:
    """GPU quotas of the Helios Earth virtual clusters on one day, largest
    first, zero quotas left out."""
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["date"] == date:
                q = [float(v) for k, v in r.items() if k not in ("date", "total") and float(v) > 0]
                return sorted(q, reverse=True)
    raise ValueError(f"no Helios quota row for {date}")


def zipf_rates(n: int, s: float = 1.0) -> List[float]:
    return [1.0 / (k + 1) ** s for k in range(n)]


def helios_rates(n: int, date: str = "2020-06-01") -> List[float]:
    """n rates proportional to the Helios quotas; beyond the number of
    virtual clusters the quotas repeat (each copy a separate tenant)."""
    q = helios_quotas(date)
    return [q[k % len(q)] for k in range(n)]


def generate(ntenants: int, rates: Sequence[float], load: float, ntasks: int = 30000,
             workers: int = 32, seed: int = 1, weights: Optional[Sequence[float]] = None,
             medians: Optional[Sequence[float]] = None, name: str = "",
             onoff: float = 0.0) -> Trace:
    """A Poisson trace: total arrival rate load * workers / mean duration,
    tenant k chosen with probability rates[k] / sum(rates). Each tenant has
    a main task type (k mod types) for 70% of its tasks. With onoff > 0,
    tenants come and go: each tenant is active only in alternate periods of
    onoff * ntasks / total rate seconds, half of them starting idle."""
    rnd = random.Random(seed)
    med = list(medians) if medians else acme_medians()
    ntypes = len(med)
    cum, acc = [], 0.0
    for r in rates:
        acc += r
        cum.append(acc)
    proto = []
    for _ in range(ntasks):
        u = rnd.random() * acc
        lo, hi = 0, ntenants - 1
        while lo < hi:  # first k with cum[k] > u
            mid = (lo + hi) // 2
            if cum[mid] > u:
                hi = mid
            else:
                lo = mid + 1
        typ = lo % ntypes if rnd.random() < 0.7 else rnd.randrange(ntypes)
        size = math.exp(rnd.gauss(0.0, 1.0))
        dur = med[typ] * size ** SIZE_EXP * math.exp(rnd.gauss(0.0, NOISE))
        proto.append((lo, typ, size, dur))
    mean = sum(p[3] for p in proto) / ntasks
    rate = load * workers / mean
    t = 0.0
    tasks = []
    period = onoff * ntasks / rate if onoff > 0 else 0.0
    for tenant, typ, size, dur in proto:
        t += rnd.expovariate(rate)
        if period > 0 and (int(t / period) + tenant) % 2:
            continue  # this tenant is away in this period
        tasks.append(Task(t, tenant, typ, size, dur))
    w = list(weights) if weights else [1.0] * ntenants
    return Trace(tasks, ntenants, w, workers, name or f"n{ntenants}-load{load}")


def scenario(kind: str, ntenants: int, load: float, seed: int = 1, ntasks: int = 30000,
             workers: int = 32, onoff: float = 0.0) -> Trace:
    """The issue's scenarios: kind 'zipf' (equal weights, Zipf rates) or
    'helios' (rates and weights proportional to the Helios quotas, so each
    tenant is entitled to what it asks for on average)."""
    if kind == "zipf":
        rates, weights = zipf_rates(ntenants), None
    elif kind == "helios":
        rates = helios_rates(ntenants)
        weights = rates
    else:
        raise ValueError(f"unknown scenario kind {kind!r}")
    return generate(ntenants, rates, load, ntasks, workers, seed, weights,
                    name=f"{kind}-n{ntenants}-load{load}", onoff=onoff)


def write_csv(trace: Trace, path: str) -> None:
    """arrival,tenant,type,size,duration per task; a first comment line keeps
    the workers and the weights."""
    with open(path, "w", newline="") as f:
        f.write(f"# workers={trace.workers} weights={' '.join(repr(x) for x in trace.weights)}\n")
        w = csv.writer(f)
        w.writerow(Task._fields)
        for t in trace.tasks:
            w.writerow([repr(t.arrival), t.tenant, t.type, repr(t.size), repr(t.duration)])


def read_csv(path: str, workers: int = 32) -> Trace:
    weights: List[float] = []
    with open(path, newline="") as f:
        first = f.readline()
        if first.startswith("#"):
            for part in first[1:].split():
                if part.startswith("workers="):
                    workers = int(part.split("=", 1)[1])
            if "weights=" in first:
                weights = [float(x) for x in first.split("weights=", 1)[1].split()]
        else:
            f.seek(0)
        tasks = [Task(float(r["arrival"]), int(r["tenant"]), int(r["type"]), float(r["size"]),
                      float(r["duration"])) for r in csv.DictReader(f)]
    tasks.sort(key=lambda t: t.arrival)
    n = max((t.tenant for t in tasks), default=-1) + 1
    n = max(n, len(weights))
    if not weights:
        weights = [1.0] * n
    return Trace(tasks, n, weights, workers, os.path.basename(path))


def come_and_go(ntenants: int = 10, load: float = 1.3, ntasks: int = 30000, workers: int = 32,
                seed: int = 1) -> Trace:
    """Tenant 0 alone for the first third of the tasks, then every tenant
    at equal rates: the case where memory of old service matters (the
    newcomers are owed nothing, tenant 0 is not owed its past either)."""
    first = generate(1, [1.0], load, ntasks // 3, workers, seed, name="alone")
    end = first.tasks[-1].arrival
    rest = generate(ntenants, [1.0] * ntenants, load, ntasks - ntasks // 3, workers, seed + 1)
    tasks = first.tasks + [t._replace(arrival=t.arrival + end) for t in rest.tasks]
    return Trace(tasks, ntenants, [1.0] * ntenants, workers, f"come-and-go-n{ntenants}-load{load}")
