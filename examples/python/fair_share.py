#!/usr/bin/env python3
"""Fair share: one tenant floods the queue, two others trickle in. Workers
poll under the memoryless policy (DES: 0.1 backlog + 0.9 wait), under the
stateful fair-share policy and under the lag-capped one (LAGCAP), and the
example prints which share of the work each tenant received while all
three compete (the first 150 s) and how long its tasks waited.

    GPUSCHED_LIBRARY=build/lib/libgpusched.so.0.2 PYTHONPATH=python \
        python3 examples/python/fair_share.py
"""
import array
import random

import gpusched

TENANTS = 3
WORKERS = 4
WINDOW = 150.0  # seconds of contention over which shares are reported


def workload(seed=7):
    """Columns for FairQueue.enqueue_many: tenant 0 submits a burst of 600
    tasks at once, tenants 1 and 2 one task per second each."""
    rnd = random.Random(seed)
    tasks = [(0.0, 0, rnd.uniform(0.5, 1.5)) for _ in range(600)]
    for t in range(300):
        tasks.append((float(t), 1, rnd.uniform(0.5, 1.5)))
        tasks.append((float(t) + 0.5, 2, rnd.uniform(0.5, 1.5)))
    tasks.sort(key=lambda x: x[0])
    return tasks


def run(policy):
    tasks = workload()
    durations = {}
    with gpusched.FairQueue(TENANTS, policy=policy, log=1) as q:
        # Tasks arrive over time: enqueue each second's arrivals in one bulk call.
        ids = array.array("Q", range(1, len(tasks) + 1))
        tenants = array.array("I", (t for _, t, _ in tasks))
        times = array.array("d", (a for a, _, _ in tasks))
        for i, (_, _, d) in enumerate(tasks):
            durations[i + 1] = d
        free_at = [0.0] * WORKERS
        busy = {}  # worker -> task id
        next_task, now = 0, 0.0
        service = [0.0] * TENANTS
        waits = [[] for _ in range(TENANTS)]
        while next_task < len(tasks) or len(q) or busy:
            end = next_task
            while end < len(tasks) and tasks[end][0] <= now:
                end += 1
            if end > next_task:
                q.enqueue_many(ids[next_task:end], tenants[next_task:end], times[next_task:end])
                next_task = end
            for w in range(WORKERS):
                if w in busy and free_at[w] <= now:
                    tid = busy.pop(w)
                    q.complete(tid, durations[tid])
                if w not in busy:
                    d = q.poll(now)
                    if d is None:
                        continue
                    busy[w] = d.task_id
                    free_at[w] = now + durations[d.task_id]
                    if now < WINDOW:
                        service[d.tenant] += durations[d.task_id]
                    waits[d.tenant].append(now - tasks[d.task_id - 1][0])
            now += 0.25
        stats = [q.tenant(t) for t in range(TENANTS)]
        decisions = len(q.decisions())
    return service, waits, stats, decisions


def main():
    for policy in ("des", "stateful", "lagcap"):
        service, waits, stats, decisions = run(policy)
        total = sum(service)
        print(f"policy {policy} ({decisions} decisions logged)")
        for t in range(TENANTS):
            w = sorted(waits[t])
            p50 = w[len(w) // 2] if w else 0.0
            print(f"  tenant {t}: {service[t] / total:6.1%} of the work in the first {WINDOW:.0f} s, "
                  f"median wait {p50:7.1f} s, max wait {max(w, default=0.0):7.1f} s, "
                  f"vtime {stats[t].vtime:8.1f}")


if __name__ == "__main__":
    main()
