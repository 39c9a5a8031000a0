"""FairQueue and DecisionLog."""
import array
import math
import os
import tempfile
import unittest

import gpusched
from gpusched import FairQueue, Param, Policy, TenantValue, DecisionLog

try:
    import numpy
except ImportError:  # numpy is optional
    numpy = None


class TestConfiguration(unittest.TestCase):
    def test_defaults_and_policies(self):
        with FairQueue(8) as q:
            self.assertEqual(q.max_tenants, 8)
            self.assertEqual(q.weights, {"backlog": 0.1, "wait": 0.9, "vtime": 0.0, "pred": 0.0})
            q.set_policy(Policy.STATEFUL)
            self.assertEqual(q.weights["vtime"], 1.0)
            self.assertEqual(q.weights["wait"], 0.05)
            q.set_policy("des")
            self.assertEqual(q.weights["wait"], 0.9)
        q = FairQueue(2, policy="stateful", w_pred=0.5, log=1)
        self.assertEqual(q.get_param("w_pred"), 0.5)
        self.assertEqual(q.get_param(Param.LOG), 1.0)
        self.assertEqual(q.get_param(Param.W_VTIME), 1.0)

    def test_params_are_keyword_only_and_named_after_param(self):
        import inspect
        ps = inspect.signature(FairQueue.__init__).parameters.values()
        kw = [p.name for p in ps if p.kind is inspect.Parameter.KEYWORD_ONLY]
        self.assertEqual(kw, [p.name.lower() for p in Param])
        self.assertTrue(all(p.default is None for p in ps
                            if p.kind is inspect.Parameter.KEYWORD_ONLY))
        with self.assertRaises(TypeError) as cm:
            FairQueue(2, colour=1)
        self.assertIn("unexpected keyword argument 'colour'", str(cm.exception))
        with self.assertRaises(TypeError):
            FairQueue(2, LOG=1)  # the names are lower case
        with self.assertRaises(TypeError):
            FairQueue(2, "des", 0.5)  # parameters are keywords
        with self.assertRaises(gpusched.OutOfRange):
            FairQueue(2, w_wait=-1)
        with FairQueue(2, policy=Policy.STATEFUL, w_wait=0.25, seed=7, half_life=None) as q:
            self.assertEqual(q.weights, {"backlog": 0.0, "wait": 0.25, "vtime": 1.0, "pred": 0.0})
            self.assertEqual(q.get_param(Param.SEED), 7)
            self.assertEqual(q.get_param(Param.HALF_LIFE), FairQueue(1).get_param("half_life"))

    def test_params(self):
        q = FairQueue(2)
        for p in Param:
            lo, hi = FairQueue.param_bounds(p)
            self.assertLessEqual(lo, hi)
        self.assertEqual(FairQueue.param_bounds("w_wait"), (0.0, 1e6))
        q.set_param(Param.HALF_LIFE, 60)
        self.assertEqual(q.get_param("half_life"), 60.0)
        with self.assertRaises(gpusched.OutOfRange) as cm:
            q.set_param(Param.W_WAIT, -1)
        self.assertTrue(cm.exception.message)
        with self.assertRaises(gpusched.OutOfRange):
            q.set_param(Param.W_WAIT, float("nan"))
        self.assertEqual(q.get_param(Param.W_WAIT), 0.9)
        with self.assertRaises(ValueError):
            q.set_param("colour", 1)
        with self.assertRaises(ValueError):
            q.set_param(99, 1)
        with self.assertRaises(TypeError):
            q.set_param(Param.W_WAIT, "1")
        with self.assertRaises(ValueError):
            q.set_policy("fifo")
        with self.assertRaises(gpusched.InvalidArgument):
            q.set_policy(7)

    def test_set_weights_is_all_or_nothing(self):
        q = FairQueue(2)
        q.set_weights(backlog=0.3, vtime=0.2)
        self.assertEqual(q.weights, {"backlog": 0.3, "wait": 0.9, "vtime": 0.2, "pred": 0.0})
        with self.assertRaises(ValueError):
            q.set_weights(wait=0.5, pred=-1)
        self.assertEqual(q.weights["wait"], 0.9)

    def test_tenants(self):
        q = FairQueue(3)
        q.set_tenant_weight(2, 4.0)
        self.assertEqual(q.tenant_value(2, TenantValue.WEIGHT), 4.0)
        self.assertEqual(q.tenant(2).weight, 4.0)
        self.assertEqual(q.tenant(0), (1.0, 0.0, 0.0, 0.0, 0.0))
        with self.assertRaises(ValueError):
            q.set_tenant_weight(3, 1.0)
        with self.assertRaises(gpusched.OutOfRange):
            q.set_tenant_weight(0, 0.0)
        with self.assertRaises(ValueError):
            q.tenant_value(0, "height")

    def test_bad_construction(self):
        with self.assertRaises(ValueError):
            FairQueue(0)
        with self.assertRaises(ValueError):
            FairQueue((1 << 24) + 1)
        with self.assertRaises(TypeError):
            FairQueue("8")


class TestQueue(unittest.TestCase):
    def setUp(self):
        self.q = FairQueue(4, log=1)

    def tearDown(self):
        self.q.close()

    def test_poll_oldest_first_under_des(self):
        q = self.q
        q.enqueue(10, tenant=0, enqueue_time=0.0)
        q.enqueue(11, tenant=1, enqueue_time=1.0)
        q.enqueue(12, tenant=1, enqueue_time=2.0, type=3, work_size=100)
        self.assertEqual(len(q), 3)
        peek = q.peek(5.0)
        self.assertEqual(len(q), 3)
        d = q.poll(5.0)
        self.assertEqual(d.task_id, peek.task_id)
        self.assertEqual(d.time, 5.0)
        self.assertEqual(d.queued, 3)
        self.assertEqual(d.candidates, 3)
        self.assertAlmostEqual(d.score, 0.1 * d.term_backlog + 0.9 * d.term_wait)
        self.assertEqual(q.counts(), (2, 1))
        self.assertEqual((q.queued, q.running), (2, 1))
        self.assertEqual(q.tenant(d.tenant).running, 1.0)
        # a worker that runs only type 3
        d3 = q.poll(6.0, types=[3])
        self.assertEqual(d3.task_id, 12)
        self.assertIsNone(q.poll(6.0, type_mask=1 << 3))
        self.assertIsNone(q.peek(6.0, types=[5]))
        q.complete(d.task_id, 2.5)
        q.complete(12, 1.0)
        with self.assertRaises(gpusched.NotFound):
            q.complete(12, 1.0)
        self.assertEqual(q.running, 0)
        log = q.decisions()
        self.assertEqual([r.task_id for r in log], [d.task_id, 12])
        q.clear_log()
        self.assertEqual(q.decisions(), [])

    def test_enqueue_errors(self):
        q = self.q
        q.enqueue(1, 0, 10.0)
        with self.assertRaises(gpusched.AlreadyExists) as cm:
            q.enqueue(1, 0, 11.0)
        self.assertTrue(cm.exception.message)
        with self.assertRaises(gpusched.OutOfRange):
            q.enqueue(2, 0, 9.0)
        with self.assertRaises(ValueError):
            q.enqueue(2, 4, 11.0)
        with self.assertRaises(ValueError):
            q.enqueue(2, 0, 11.0, type=64)
        with self.assertRaises(ValueError):
            q.enqueue(2, 0, float("inf"))
        with self.assertRaises(ValueError):
            q.enqueue(2, 0, 11.0, work_size=-1)
        with self.assertRaises(ValueError):
            q.enqueue(-2, 0, 11.0)
        with self.assertRaises(TypeError):
            q.enqueue(2, "a", 11.0)
        self.assertEqual(q.counts(), (1, 0))
        with self.assertRaises(gpusched.OutOfRange):
            q.poll(5.0)
        with self.assertRaises(TypeError):
            q.poll(11.0, types=[1], type_mask=2)
        with self.assertRaises(TypeError):
            q.poll(11.0, types=3)
        with self.assertRaises(ValueError):
            q.poll(11.0, types=[64])
        with self.assertRaises(ValueError):
            q.poll(11.0, type_mask=-1)
        q.cancel(1)
        with self.assertRaises(gpusched.NotFound):
            q.cancel(1)
        self.assertEqual(len(q), 0)

    def test_enqueue_many_from_lists_and_arrays(self):
        q = self.q
        self.assertEqual(q.enqueue_many([], [], []), 0)
        n = q.enqueue_many([1, 2, 3], [0, 1, 2], [0.0, 1.0, 2.0], types=[0, 1, 1],
                           work_sizes=[1.0, 2.0, 3.0])
        self.assertEqual(n, 3)
        n = q.enqueue_many(array.array("Q", [4, 5]), array.array("I", [3, 3]),
                           array.array("d", [3.0, 4.0]), types=bytes([2, 2]))
        self.assertEqual(len(q), 5)
        ids = q.poll_many(10.0, [1 << 2, 1 << 2, 1 << 2, 1 << 9])
        self.assertEqual(ids[:2], [4, 5])
        self.assertEqual(ids[2:], [None, None])

    def test_enqueue_many_errors_change_nothing(self):
        q = self.q
        with self.assertRaisesRegex(ValueError, "tenants has 2 values, expected 3"):
            q.enqueue_many([1, 2, 3], [0, 1], [0, 0, 0])
        # ranges the C type cannot hold: caught in Python
        with self.assertRaises(ValueError):
            q.enqueue_many([1, -2], [0, 0], [0, 0])
        with self.assertRaises(ValueError):
            q.enqueue_many([1, 2], [0, 0], [0, 0], types=[0, 256])
        # ranges of the queue: the library names the index
        for cols in (([1, 2], [0, 9], [0, 0], None), ([1, 2], [0, 0], [0, float("nan")], None),
                     ([1, 2], [0, 0], [0, 0], [0, 64])):
            with self.assertRaises(gpusched.OutOfRange) as cm:
                q.enqueue_many(*cols[:3], types=cols[3])
            self.assertIn("1", cm.exception.message)
        with self.assertRaises(TypeError):
            q.enqueue_many(["a"], [0], [0])
        with self.assertRaises(gpusched.AlreadyExists) as cm:
            q.enqueue_many([1, 1], [0, 0], [0, 0])
        self.assertTrue(cm.exception.message)
        with self.assertRaises(gpusched.OutOfRange) as cm:
            q.enqueue_many([1, 2], [0, 0], [5, 4])
        self.assertIn("1", cm.exception.message)
        self.assertEqual(len(q), 0)

    def test_columns_of_the_right_type_are_not_copied(self):
        from gpusched import _util
        import ctypes
        ids = array.array("Q", [7, 8, 9])
        arr, n, _ = _util.column("ids", ids, ctypes.c_uint64)
        self.assertEqual(n, 3)
        self.assertEqual(ctypes.addressof(arr), ids.buffer_info()[0])
        # other element types are converted, with a range check
        arr, n, _ = _util.column("ids", array.array("q", [1, 2]), ctypes.c_uint64)
        self.assertEqual(list(arr), [1, 2])
        with self.assertRaises(ValueError):
            _util.column("ids", array.array("q", [1, -2]), ctypes.c_uint64)
        with self.assertRaises(ValueError):
            _util.column("ids", memoryview(bytes(16)).cast("B", (4, 4)), ctypes.c_uint8)
        # a read-only buffer is copied once
        arr, n, _ = _util.column("types", bytes([1, 2, 3]), ctypes.c_uint8)
        self.assertEqual(list(arr), [1, 2, 3])

    @unittest.skipIf(numpy is None, "numpy is not installed (optional)")
    def test_numpy_columns(self):
        n = 1000
        ids = numpy.arange(1, n + 1, dtype=numpy.uint64)
        tenants = (numpy.arange(n) % 4).astype(numpy.uint32)
        times = numpy.linspace(0, 10, n)
        self.assertEqual(self.q.enqueue_many(ids, tenants, times,
                                             types=numpy.zeros(n, numpy.uint8)), n)
        self.assertEqual(len(self.q), n)
        # other dtypes are converted with a range check
        self.assertEqual(self.q.enqueue_many(numpy.array([n + 1], numpy.int64),
                                             numpy.array([1], numpy.int64),
                                             numpy.array([11.0])), 1)
        with self.assertRaises(ValueError):
            self.q.enqueue_many(numpy.array([-5], numpy.int64), [0], [12.0])
        # read-only and strided arrays
        ro = numpy.arange(n + 2, n + 6, dtype=numpy.uint64)
        ro.flags.writeable = False
        self.assertEqual(self.q.enqueue_many(ro, numpy.zeros(4, numpy.uint32),
                                             numpy.full(4, 12.0)), 4)
        strided = numpy.arange(n + 10, n + 30, dtype=numpy.uint64)[::2]
        self.assertEqual(self.q.enqueue_many(strided, numpy.zeros(10, numpy.uint32),
                                             numpy.full(10, 13.0)), 10)
        self.assertEqual(len(self.q), n + 15)

    def test_predict(self):
        q = self.q
        p = q.predict(0, type=1, work_size=10)
        self.assertGreater(p, 0)
        self.assertEqual(p, q.get_param(Param.PRED_DEFAULT))
        with self.assertRaises(ValueError):
            q.predict(9)
        with self.assertRaises(gpusched.OutOfRange):
            q.predict(0, work_size=-1)

    def test_predictor_learns_from_completions(self):
        q = self.q
        q.set_param("pred_alpha", 1.0)
        for i in range(5):
            q.enqueue(i, 1, float(i), type=2)
            d = q.poll(float(i))
            q.complete(d.task_id, 10.0)
        self.assertTrue(math.isclose(q.predict(1, 2), 10.0, rel_tol=0.5), q.predict(1, 2))
        self.assertGreater(q.tenant(1).service, 0)

    def test_simd(self):
        self.assertIn(self.q.simd, gpusched.simd_compiled())

    def test_log_file_roundtrip(self):
        q = self.q
        for i in range(20):
            q.enqueue(i, i % 4, float(i))
        for i in range(10):
            q.poll(20.0 + i)
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "decisions.log")
            q.save_log(p)
            log = DecisionLog.read(p)
            self.assertEqual(len(log), 10)
            self.assertEqual(log.decisions(), q.decisions())
            self.assertEqual(log[0], q.decisions()[0])
            self.assertEqual(list(log), q.decisions())
            log.close()
            with open(p, "r+b") as f:
                f.seek(40)
                b = f.read(1)
                f.seek(40)
                f.write(bytes([b[0] ^ 0xff]))
            with self.assertRaises(gpusched.CorruptData) as cm:
                DecisionLog.read(p)
            self.assertTrue(cm.exception.message)
            with open(p, "r+b") as f:  # format version (offset 8, doc/fairq.md)
                f.seek(8)
                version = int.from_bytes(f.read(4), "little")
                f.seek(8)
                f.write((version + 1).to_bytes(4, "little"))
            with self.assertRaises(gpusched.UnsupportedVersion) as cm:
                DecisionLog.read(p)
            self.assertIn("version", cm.exception.message)
            with self.assertRaises(gpusched.IOFailure):
                DecisionLog.read(os.path.join(d, "missing.log"))
            with self.assertRaises(gpusched.IOFailure):
                q.save_log(os.path.join(d, "no", "such", "dir.log"))
        with self.assertRaises(TypeError):
            DecisionLog()

    def test_closed(self):
        q = FairQueue(1)
        q.close()
        with self.assertRaises(ValueError):
            q.enqueue(1, 0, 0.0)
        self.assertIn("closed", repr(q))


class TestMessages(unittest.TestCase):
    """Errors say which argument and why (issue 12)."""

    def test_predict_negative_work_size_names_the_argument(self):
        with FairQueue(2) as q:
            with self.assertRaises(gpusched.OutOfRange) as cm:
                q.predict(0, work_size=-1)
            self.assertIn("work_size = -1", cm.exception.message)
            self.assertIn(">= 0", cm.exception.message)
            self.assertEqual(cm.exception.function, "gpusched_fairq_predict")
            with self.assertRaisesRegex(ValueError, "work_size must be finite"):
                q.predict(0, work_size=float("nan"))

    def test_poll_types_speak_of_task_types(self):
        with FairQueue(2) as q:
            q.enqueue(1, 0, 1.0)
            for call in (q.poll, q.peek):
                with self.assertRaises(ValueError) as cm:
                    call(2.0, types=[64])
                msg = str(cm.exception)
                self.assertIn("task type", msg)
                self.assertIn("64", msg)
                self.assertNotIn("GPU", msg)
            with self.assertRaisesRegex(ValueError, "types lists task type 3 twice"):
                q.poll(2.0, types=[3, 3])
            self.assertEqual(q.queued, 1, "a rejected poll took nothing")

    def test_enqueue_nan_time_says_not_a_number(self):
        with FairQueue(2) as q:
            ids, tenants, times = [1, 2], [0, 1], [0.0, float("nan")]
            with self.assertRaises(gpusched.OutOfRange) as cm:
                q.enqueue_many(ids, tenants, times)
            self.assertEqual(cm.exception.message, "task 1: enqueue time is not a number (NaN)")
            self.assertEqual(q.queued, 0)

    def test_closed_queue_raises_everywhere(self):
        """Every public property and method of a closed FairQueue raises
        ValueError (doc/python.md); the list below must name them all."""
        calls = {
            "max_tenants": None, "weights": None, "queued": None, "running": None, "simd": None,
            "set_param": ("w_wait", 0.5), "get_param": ("w_wait",), "set_policy": ("des",),
            "set_weights": (), "set_tenant_weight": (0, 1.0), "tenant_value": (0, "weight"),
            "tenant": (0,), "enqueue": (1, 0, 0.0), "enqueue_many": ([1], [0], [0.0]),
            "cancel": (1,), "poll": (1.0,), "peek": (1.0,), "poll_many": (1.0, [1]),
            "complete": (1, 1.0), "predict": (0,), "counts": (), "decisions": (),
            "clear_log": (), "save_log": (os.devnull,),
        }
        exempt = {"close", "closed", "param_bounds"}  # param_bounds is static
        public = {n for n in dir(FairQueue) if not n.startswith("_")} - exempt
        self.assertEqual(public, set(calls), "a public name is missing from this test")
        q = FairQueue(3)
        q.close()
        for name, args in sorted(calls.items()):
            with self.subTest(name=name):
                with self.assertRaisesRegex(ValueError, "closed FairQueue"):
                    attr = getattr(q, name)
                    if args is not None:
                        attr(*args)
        with self.assertRaisesRegex(ValueError, "closed FairQueue"):
            len(q)
        self.assertEqual(repr(q), "<gpusched.FairQueue closed>")
        self.assertTrue(q.closed)
        q.close()  # closing twice does nothing

    def test_closed_log_raises(self):
        with FairQueue(2, log=1) as q, tempfile.TemporaryDirectory() as d:
            q.enqueue(1, 0, 0.0)
            q.poll(1.0)
            p = os.path.join(d, "x.log")
            q.save_log(p)
            log = DecisionLog.read(p)
            self.assertEqual(len(log), 1)
            log.close()
            for op in (len, list, lambda x: x[0], lambda x: x.decisions()):
                with self.assertRaisesRegex(ValueError, "closed DecisionLog"):
                    op(log)

    def test_log_read_of_a_directory_is_an_io_failure(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(gpusched.IOFailure) as cm:
                DecisionLog.read(d)
            self.assertIn("is a directory", cm.exception.message)
            self.assertNotIn("memory", cm.exception.message)


class TestExploration(unittest.TestCase):
    def test_seeded_exploration_is_deterministic(self):
        def run():
            q = FairQueue(4, explore=0.5, seed=42)
            q.enqueue_many(list(range(50)), [i % 4 for i in range(50)], [float(i) for i in range(50)])
            return [q.poll(100.0).task_id for _ in range(20)]
        self.assertEqual(run(), run())


if __name__ == "__main__":
    unittest.main()
