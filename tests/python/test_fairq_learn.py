"""The offline learner of examples/fairsim/learn.py recovers the weights
that generated a decision log (with exploration on, through a saved and
re-read log file), and its bootstrap interval is deterministic."""
import os
import random
import sys
import tempfile
import unittest

from gpusched import DecisionLog, FairQueue

import gstest

sys.path.insert(0, os.path.join(gstest.source_root(), "examples", "fairsim"))
import learn  # noqa: E402

WEIGHTS = [
    {"w_backlog": 0.1, "w_wait": 0.9, "w_vtime": 0.0, "w_pred": 0.0},
    {"w_backlog": 0.3, "w_wait": 0.5, "w_vtime": 0.7, "w_pred": 0.2},
    {"w_backlog": 0.0, "w_wait": 0.9, "w_vtime": 2.0, "w_pred": 0.0, "lag_cap": 4.0},
]


def logged_run(weights, seed=3):
    """600 polls of 5 tenants with random arrivals, sizes and durations,
    exploring (softmax temperature 0.05); returns the saved log's path."""
    rnd = random.Random(seed)
    fd, path = tempfile.mkstemp(suffix=".gsdlog")
    os.close(fd)
    with FairQueue(5, log=1, explore=0.05, seed=7, **weights) as q:
        i, t, running = 0, 0.0, []
        for _ in range(600):
            t += rnd.expovariate(1.0)
            for _ in range(rnd.randint(0, 3)):
                q.enqueue(i, rnd.randrange(5), t, work_size=rnd.uniform(1, 100))
                i += 1
            if len(q):
                running.append(q.poll(t).task_id)
            if len(running) > 3:
                q.complete(running.pop(0), rnd.uniform(0.5, 5))
        q.save_log(path)
    return path


class TestLearner(unittest.TestCase):
    def test_recovers_the_weights_of_a_log(self):
        for w in WEIGHTS:
            path = logged_run(w)
            try:
                with DecisionLog.read(path) as log:
                    decisions = log.decisions()
                self.assertGreater(len(decisions), 500)
                self.assertLess(min(d.probability for d in decisions), 1.0)  # it explored
                got = learn.recover_weights(decisions)
                for k in learn.NAMES:
                    self.assertAlmostEqual(got[k], w[k], places=6, msg=f"{k} of {w}")
            finally:
                os.unlink(path)

    def test_bootstrap_interval(self):
        base, new = [2.0, 4.0, 3.0, 5.0], [1.0, 3.0, 3.0, 4.0]
        m, lo, hi = learn.bootstrap_ci(base, new)
        self.assertAlmostEqual(m, (-0.5 - 0.25 + 0.0 - 0.2) / 4)
        self.assertLessEqual(lo, m)
        self.assertLessEqual(m, hi)
        self.assertEqual((m, lo, hi), learn.bootstrap_ci(base, new))


if __name__ == "__main__":
    unittest.main()
