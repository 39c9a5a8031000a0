#!/usr/bin/env python3
"""Drives the fairq API from Python through ctypes, as a Python caller
would: bulk enqueue from arrays (one boundary crossing), polls with
decision details, completion, and the error path.

usage: fairq_ctypes.py path/to/libgpusched.so
"""
import ctypes as C
import sys


class Decision(C.Structure):
    _fields_ = [("size", C.c_uint32), ("tenant", C.c_uint32), ("task_id", C.c_uint64),
                ("time", C.c_double), ("type", C.c_uint32), ("tenants_backlogged", C.c_uint32),
                ("score", C.c_double), ("term_backlog", C.c_double), ("term_wait", C.c_double),
                ("term_vtime", C.c_double), ("term_pred", C.c_double), ("predicted", C.c_double),
                ("probability", C.c_double), ("candidates", C.c_uint64), ("queued", C.c_uint64),
                ("max_wait", C.c_double)]


def main():
    lib = C.CDLL(sys.argv[1])
    lib.gpusched_fairq_errmsg.restype = C.c_char_p
    lib.gpusched_strerror.restype = C.c_char_p
    lib.gpusched_fairq_poll.argtypes = [C.c_void_p, C.c_double, C.c_uint64,
                                        C.POINTER(C.c_uint64), C.POINTER(Decision)]
    lib.gpusched_fairq_complete.argtypes = [C.c_void_p, C.c_uint64, C.c_double]
    q = C.c_void_p()
    assert lib.gpusched_fairq_new(2, None, C.byref(q)) == 0
    n = 4
    ids = (C.c_uint64 * n)(100, 101, 102, 104)
    tenants = (C.c_uint32 * n)(0, 1, 0, 0)
    times = (C.c_double * n)(0.0, 1.0, 2.0, 4.0)
    assert lib.gpusched_fairq_enqueue_batch(q, n, ids, tenants, None, times, None) == 0
    # The hand table of tests/test-fairq-basic.c: 100, 101, 102, 104.
    got = []
    for _ in range(n):
        d = Decision(size=C.sizeof(Decision))
        tid = C.c_uint64()
        assert lib.gpusched_fairq_poll(q, 10.0, 2**64 - 1, C.byref(tid), C.byref(d)) == 0
        assert d.task_id == tid.value
        got.append((tid.value, round(d.score, 12)))
        assert lib.gpusched_fairq_complete(q, tid, 0.5) == 0
    assert got == [(100, 1.0), (101, 0.95), (102, 1.0), (104, 1.0)], got
    tid = C.c_uint64()
    rc = lib.gpusched_fairq_poll(q, 10.0, 2**64 - 1, C.byref(tid), None)
    assert rc == -24, rc  # GPUSCHED_EEMPTY
    assert b"no queued task" in lib.gpusched_fairq_errmsg(q)
    lib.gpusched_fairq_free(q)
    print("ok: fairq through ctypes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
