#!/usr/bin/python3
"""The fairq full rescore in numpy, the baseline for fairq.poll.scan.vs_numpy.

Same computation as the library's memoryless (DES) rescore over N queued
tasks of T tenants: the per-tenant backlog term, the per-task wait term,
argmax. The backlog counts and the oldest enqueue time are given (the
library maintains them incrementally too). Prints one line:
"us <median microseconds>", or "skip <reason>" if numpy is missing.

usage: fairq_numpy.py N TENANTS REPS
"""
import sys
import time


def main():
    n, tenants, reps = (int(a) for a in sys.argv[1:4])
    try:
        import numpy as np
    except ImportError:
        print("skip numpy is not installed for %s (apt install python3-numpy)" % sys.executable)
        return 0
    rng = np.random.default_rng(1)
    tenant = rng.integers(0, tenants, n).astype(np.int32)
    enq = np.sort(rng.random(n) * 1000.0)
    backlog = np.bincount(tenant, minlength=tenants).astype(np.float64)
    now = 1001.0
    times = []
    pick = -1
    for _ in range(reps):
        t0 = time.perf_counter()
        tterm = 0.1 * (backlog / backlog.max())
        wscale = 0.9 / (now - enq[0])
        score = tterm[tenant] + (now - enq) * wscale
        pick = int(np.argmax(score))
        times.append((time.perf_counter() - t0) * 1e6)
    times.sort()
    print("us %.3f pick %d" % (times[len(times) // 2], pick))
    return 0


if __name__ == "__main__":
    sys.exit(main())
