"""Fair-share task queue (fairq.h)."""
from __future__ import annotations

import ctypes
import enum
import os
from typing import Any, Dict, Iterable, Iterator, List, NamedTuple, Optional, Tuple, Union, overload

from . import _util as u
from ._errors import Empty, OutOfRange
from ._lib import lib, FairqTask as _CTask, FairqDecision as _CDecision
from .core import simd_name

__all__ = ["FairQueue", "Param", "Policy", "TenantValue", "Decision", "DecisionLog",
           "TenantStats", "MAX_TASK_TYPES", "MAX_TENANTS", "ALL_TYPES"]

#: Task types are 0 to MAX_TASK_TYPES - 1 (GPUSCHED_MAX_TASK_TYPES).
MAX_TASK_TYPES = 64
#: The 0.1 name of :data:`MAX_TASK_TYPES` (``GPUSCHED_FAIRQ_MAX_TYPES``), kept as an alias.
MAX_TYPES = MAX_TASK_TYPES
#: Most tenants a queue may have (GPUSCHED_MAX_TENANTS).
MAX_TENANTS = 1 << 24
#: The type mask of a worker that runs every type (GPUSCHED_FAIRQ_ALL_TYPES).
ALL_TYPES = u.U64_MAX
_ERRBUF = 512


class Param(enum.IntEnum):
    """Queue parameters (all values are floats); see :meth:`FairQueue.set_param`."""
    W_BACKLOG = 1
    W_WAIT = 2
    W_VTIME = 3
    W_PRED = 4
    HALF_LIFE = 5
    PRED_ALPHA = 6
    PRED_DEFAULT = 7
    SCAN = 8
    LOG = 9
    EXPLORE = 10
    SEED = 11
    LAG_CAP = 12


class Policy(enum.IntEnum):
    """Weight presets: DES (memoryless: 0.1 backlog, 0.9 wait), STATEFUL
    (fair share: 1 virtual time, 0.05 wait) and LAGCAP (oldest task first
    among the tenants within 16 typical task costs of their max-min share:
    2 virtual time, 0.9 wait, lag_cap 16)."""
    DES = 1
    STATEFUL = 2
    LAGCAP = 3


class TenantValue(enum.IntEnum):
    """Per-tenant values read by :meth:`FairQueue.tenant`."""
    WEIGHT = 1
    BACKLOG = 2
    RUNNING = 3
    VTIME = 4
    SERVICE = 5


class Decision(NamedTuple):
    """What a poll chose and why (one record of the decision log): the
    chosen task, its tenant and type, the poll's time, the total score and
    each score term before its weight, the prediction, the probability of
    the choice, and the queue's shape before the poll. The fields are those
    of ``gpusched_fairq_decision`` after ``size``, in its order."""
    tenant: int
    task_id: int
    time: float
    type: int
    tenants_backlogged: int
    score: float
    term_backlog: float
    term_wait: float
    term_vtime: float
    term_pred: float
    predicted: float
    probability: float
    candidates: int
    queued: int
    max_wait: float


_DECISION_FIELDS = [f for f, _ in _CDecision._fields_ if f != "size"]
if list(Decision._fields) != _DECISION_FIELDS:  # the ctypes mirror grew: add the field above
    raise ImportError(f"gpusched.Decision fields {Decision._fields} differ from "
                      f"gpusched_fairq_decision's {_DECISION_FIELDS}")


class TenantStats(NamedTuple):
    """A tenant's values (see :class:`TenantValue`)."""
    weight: float
    backlog: float
    running: float
    vtime: float
    service: float


def _decision(d: _CDecision) -> Decision:
    return Decision(*(getattr(d, f) for f in _DECISION_FIELDS))


def _decisions(ptr: Any, count: int) -> List[Decision]:
    """Copies `count` C records into Decision tuples (one memmove)."""
    if not count:
        return []
    arr = (_CDecision * count)()
    ctypes.memmove(arr, ptr, ctypes.sizeof(arr))
    return [_decision(d) for d in arr]


def _param(param: Union[Param, int, str]) -> Param:
    if isinstance(param, str):
        try:
            return Param[param.upper()]
        except KeyError:
            raise ValueError(f"unknown parameter {param!r}") from None
    if isinstance(param, bool):
        raise TypeError("param must be a Param or its name")
    return Param(u.u32("param", param))


def _type_mask(types: Optional[Iterable[int]], type_mask: Optional[int]) -> int:
    if types is not None and type_mask is not None:
        raise TypeError("give types or type_mask, not both")
    if type_mask is not None:
        return u.u64("type_mask", type_mask)
    if types is None:
        return ALL_TYPES
    if hasattr(types, "__index__"):
        raise TypeError("types is an iterable of type numbers; give a bit mask as type_mask=")
    return u.bits("types", types, MAX_TASK_TYPES, what="task type")


class FairQueue(u.Handle):
    """A multi-tenant task queue that workers poll: every poll scores the
    queued tasks and hands over the best one (score formula in fairq.h and
    doc/fairq.md).

    Tenants are numbered ``0 .. max_tenants-1``; a task has a caller-chosen
    64-bit id, a tenant, a type (0 to 63), an enqueue time (seconds on the
    caller's clock: the library never reads one), a work size and an
    optional predicted duration. Used by one thread at a time; free it with
    :meth:`close`, a ``with`` block, or the garbage collector.
    """

    def __init__(self, max_tenants: int, policy: Union[Policy, int, str, None] = None, *,
                 w_backlog: Optional[float] = None, w_wait: Optional[float] = None,
                 w_vtime: Optional[float] = None, w_pred: Optional[float] = None,
                 half_life: Optional[float] = None, pred_alpha: Optional[float] = None,
                 pred_default: Optional[float] = None, scan: Optional[float] = None,
                 log: Optional[float] = None, explore: Optional[float] = None,
                 seed: Optional[float] = None, lag_cap: Optional[float] = None) -> None:
        """Creates an empty queue for `max_tenants` tenants with the DES
        policy, then applies `policy` (a :class:`Policy` or its name), then
        each keyword parameter given (not None), named after :class:`Param`
        and set in its order, as :meth:`set_param` does; for example
        ``FairQueue(100, policy="stateful", log=1)``."""
        params = {Param.W_BACKLOG: w_backlog, Param.W_WAIT: w_wait, Param.W_VTIME: w_vtime,
                  Param.W_PRED: w_pred, Param.HALF_LIFE: half_life,
                  Param.PRED_ALPHA: pred_alpha, Param.PRED_DEFAULT: pred_default,
                  Param.SCAN: scan, Param.LOG: log, Param.EXPLORE: explore, Param.SEED: seed,
                  Param.LAG_CAP: lag_cap}
        out = ctypes.c_void_p()
        lib.check(lib.fairq_new(u.integer("max_tenants", max_tenants, 1, MAX_TENANTS), None,
                                ctypes.byref(out)), function="gpusched_fairq_new")
        self._own(out.value, lib.fairq_free)
        self._max_tenants = max_tenants
        if policy is not None:
            self.set_policy(policy)
        for param, value in params.items():
            if value is not None:
                self.set_param(param, value)

    def _check(self, rc: int, fn: str) -> int:
        return lib.check(rc, lib.fairq_errmsg, self._h, fn)

    def _tenant(self, tenant: int) -> int:
        return u.u32("tenant", tenant, self._max_tenants - 1)

    @property
    def max_tenants(self) -> int:
        """Number of tenants the queue was created for. Raises ValueError
        once the queue is closed, like every other property and method."""
        self._h
        return self._max_tenants

    # ---- configuration ----------------------------------------------------

    def set_param(self, param: Union[Param, int, str], value: float) -> None:
        """Sets a :class:`Param` (or its name, case-insensitive). Raises
        OutOfRange outside :meth:`param_bounds`."""
        p = _param(param)
        self._check(lib.fairq_param_set(self._h, p, u.real("value", value, finite=False)),
                    "gpusched_fairq_param_set")

    def get_param(self, param: Union[Param, int, str]) -> float:
        """Reads a :class:`Param`."""
        v = ctypes.c_double()
        self._check(lib.fairq_param_get(self._h, _param(param), ctypes.byref(v)),
                    "gpusched_fairq_param_get")
        return v.value

    @staticmethod
    def param_bounds(param: Union[Param, int, str]) -> Tuple[float, float]:
        """``(lo, hi)``: the accepted range of a :class:`Param`."""
        lo, hi = ctypes.c_double(), ctypes.c_double()
        lib.check(lib.fairq_param_bounds(_param(param), ctypes.byref(lo), ctypes.byref(hi)),
                  function="gpusched_fairq_param_bounds")
        return lo.value, hi.value

    def set_policy(self, policy: Union[Policy, int, str]) -> None:
        """Sets the four weights to a :class:`Policy` preset (or its name)."""
        if isinstance(policy, str):
            try:
                policy = Policy[policy.upper()]
            except KeyError:
                raise ValueError(f"unknown policy {policy!r}") from None
        self._check(lib.fairq_policy_set(self._h, u.u32("policy", policy)),
                    "gpusched_fairq_policy_set")

    @property
    def weights(self) -> Dict[str, float]:
        """The four score weights as a dict: backlog, wait, vtime, pred."""
        return {"backlog": self.get_param(Param.W_BACKLOG), "wait": self.get_param(Param.W_WAIT),
                "vtime": self.get_param(Param.W_VTIME), "pred": self.get_param(Param.W_PRED)}

    def set_weights(self, backlog: Optional[float] = None, wait: Optional[float] = None,
                    vtime: Optional[float] = None, pred: Optional[float] = None) -> None:
        """Sets the given score weights (the others keep their values). The
        values are checked first, so a bad one changes none."""
        self._h
        given = {Param.W_BACKLOG: backlog, Param.W_WAIT: wait, Param.W_VTIME: vtime,
                 Param.W_PRED: pred}
        new = {p: u.real(p.name.lower(), v) for p, v in given.items() if v is not None}
        for p, v in new.items():
            lo, hi = self.param_bounds(p)
            if not lo <= v <= hi:
                raise ValueError(f"{p.name.lower()} = {v} is out of range [{lo}, {hi}]")
        for p, v in new.items():
            self.set_param(p, v)

    def set_tenant_weight(self, tenant: int, weight: float) -> None:
        """Sets a tenant's share weight (its virtual time grows by cost /
        weight), in [1e-6, 1e6]."""
        self._check(lib.fairq_tenant_weight_set(self._h, self._tenant(tenant),
                                                u.real("weight", weight)),
                    "gpusched_fairq_tenant_weight_set")

    def tenant_value(self, tenant: int, what: Union[TenantValue, int, str]) -> float:
        """One :class:`TenantValue` (or its name) of a tenant."""
        if isinstance(what, str):
            try:
                what = TenantValue[what.upper()]
            except KeyError:
                raise ValueError(f"unknown tenant value {what!r}") from None
        v = ctypes.c_double()
        self._check(lib.fairq_tenant_get(self._h, self._tenant(tenant), u.u32("what", what),
                                         ctypes.byref(v)), "gpusched_fairq_tenant_get")
        return v.value

    def tenant(self, tenant: int) -> TenantStats:
        """All values of a tenant: weight, backlog, running, vtime, service."""
        return TenantStats(*(self.tenant_value(tenant, w) for w in TenantValue))

    # ---- tasks ------------------------------------------------------------

    def enqueue(self, id: int, tenant: int, enqueue_time: float, type: int = 0,
                work_size: float = 0.0, predicted: float = 0.0) -> None:
        """Enqueues one task. `predicted` 0 lets the library predict its
        duration. Raises AlreadyExists for an id queued or running, and
        OutOfRange for a time earlier than the previous enqueue."""
        t = _CTask()
        t.size = ctypes.sizeof(_CTask)
        t.id = u.u64("id", id)
        t.tenant = self._tenant(tenant)
        t.type = u.u32("type", type, MAX_TASK_TYPES - 1)
        t.enqueue_time = u.real("enqueue_time", enqueue_time)
        t.work_size = u.real("work_size", work_size)
        t.predicted = u.real("predicted", predicted)
        if t.work_size < 0 or t.predicted < 0:
            raise ValueError("work_size and predicted must not be negative")
        self._check(lib.fairq_enqueue(self._h, ctypes.byref(t)), "gpusched_fairq_enqueue")

    def enqueue_many(self, ids: Iterable[int], tenants: Iterable[int],
                     enqueue_times: Iterable[float], types: Optional[Iterable[int]] = None,
                     work_sizes: Optional[Iterable[float]] = None) -> int:
        """Enqueues many tasks from columns in one call, all or none.

        Each column is a sequence, an ``array.array`` or any buffer (a numpy
        array of uint64 ids, uint32 tenants, uint8 types, float64 times and
        sizes is passed without a copy). Enqueue times must not decrease.
        Returns the number of tasks enqueued."""
        idc, n, k1 = u.column("ids", ids, ctypes.c_uint64)
        if n > u.U32_MAX:
            raise ValueError("too many tasks for one call")
        tc, _, k2 = u.column("tenants", tenants, ctypes.c_uint32, n)
        ec, _, k3 = u.column("enqueue_times", enqueue_times, ctypes.c_double, n)
        yc = ws = None
        if types is not None:
            yc, _, k4 = u.column("types", types, ctypes.c_uint8, n)
        if work_sizes is not None:
            ws, _, k5 = u.column("work_sizes", work_sizes, ctypes.c_double, n)
        if n == 0:
            return 0
        self._check(lib.fairq_enqueue_batch(self._h, n, idc, tc, yc, ec, ws),
                    "gpusched_fairq_enqueue_batch")
        return n

    def cancel(self, id: int) -> None:
        """Removes a queued task without running it. Raises NotFound."""
        self._check(lib.fairq_cancel(self._h, u.u64("id", id)), "gpusched_fairq_cancel")

    def _choose(self, fn: Any, now: float, types: Optional[Iterable[int]],
                type_mask: Optional[int]) -> Optional[Decision]:
        tid = ctypes.c_uint64()
        d = _CDecision()
        d.size = ctypes.sizeof(_CDecision)
        rc = fn(self._h, u.real("now", now), _type_mask(types, type_mask), ctypes.byref(tid),
                ctypes.byref(d))
        if rc == Empty.code:
            return None
        self._check(rc, fn.__name__)
        return _decision(d)

    def poll(self, now: float, types: Optional[Iterable[int]] = None, *,
             type_mask: Optional[int] = None) -> Optional[Decision]:
        """Hands the best task a worker can run to that worker: removes it
        from the queue, charges its tenant and records it as running.

        Args:
            now: the current time in seconds (not earlier than any enqueue
                or earlier poll).
            types: the task types the worker runs (iterable of 0..63); all
                by default. ``type_mask`` gives them as a bit mask instead.

        Returns the :class:`Decision` (``.task_id`` is the task), or None
        when no queued task matches."""
        return self._choose(lib.fairq_poll, now, types, type_mask)

    def peek(self, now: float, types: Optional[Iterable[int]] = None, *,
             type_mask: Optional[int] = None) -> Optional[Decision]:
        """Like :meth:`poll` but changes nothing: the :class:`Decision` a
        poll would make now (without exploration), or None."""
        return self._choose(lib.fairq_peek, now, types, type_mask)

    def poll_many(self, now: float, type_masks: Iterable[int]) -> List[Optional[int]]:
        """Polls for several workers in order, in one call. `type_masks`
        has one bit mask per worker. Returns one task id per worker, None
        for a worker that got nothing."""
        masks, k, _keep = u.column("type_masks", type_masks, ctypes.c_uint64)
        if k > u.U32_MAX:
            raise ValueError("too many workers for one call")
        ids, got = (ctypes.c_uint64 * max(k, 1))(), (ctypes.c_uint8 * max(k, 1))()
        self._check(lib.fairq_poll_batch(self._h, u.real("now", now), k, masks, ids, got, None),
                    "gpusched_fairq_poll_batch")
        return [ids[i] if got[i] else None for i in range(k)]

    def complete(self, id: int, actual_duration: float) -> None:
        """Reports that a polled task finished after `actual_duration`
        seconds: corrects its tenant's charge and trains the predictor."""
        self._check(lib.fairq_complete(self._h, u.u64("id", id),
                                       u.real("actual_duration", actual_duration)),
                    "gpusched_fairq_complete")

    def predict(self, tenant: int, type: int = 0, work_size: float = 0.0) -> float:
        """The duration in seconds the queue predicts for such a task (the
        value enqueue would store). Raises OutOfRange for a negative
        `work_size` (ValueError for one that is not finite)."""
        h = self._h
        tenant, type = self._tenant(tenant), u.u32("type", type, MAX_TASK_TYPES - 1)
        work_size = u.real("work_size", work_size)
        if work_size < 0:
            # gpusched_fairq_predict() takes a const queue and so leaves no
            # message: the binding says which argument and why.
            lib.raise_error(OutOfRange.code, f"work_size = {work_size:g}: a work size is >= 0 "
                            "(0: unknown)", "gpusched_fairq_predict")
        v = ctypes.c_double()
        self._check(lib.fairq_predict(h, tenant, type, work_size, ctypes.byref(v)),
                    "gpusched_fairq_predict")
        return v.value

    def counts(self) -> Tuple[int, int]:
        """``(queued, running)`` task counts."""
        q, r = ctypes.c_uint64(), ctypes.c_uint64()
        self._check(lib.fairq_count(self._h, ctypes.byref(q), ctypes.byref(r)),
                    "gpusched_fairq_count")
        return q.value, r.value

    @property
    def queued(self) -> int:
        """Number of queued tasks."""
        return self.counts()[0]

    @property
    def running(self) -> int:
        """Number of polled, not yet completed tasks."""
        return self.counts()[1]

    def __len__(self) -> int:
        return self.queued

    @property
    def simd(self) -> str:
        """The name of the SIMD path the queue's full rescore uses."""
        s = ctypes.c_uint32()
        self._check(lib.fairq_simd(self._h, ctypes.byref(s)), "gpusched_fairq_simd")
        return simd_name(s.value)

    # ---- decision log -----------------------------------------------------

    def decisions(self) -> List[Decision]:
        """The decisions logged so far (with the ``log`` parameter set to 1),
        copied out in one step, as a list of :class:`Decision`."""
        ptr, n = ctypes.POINTER(_CDecision)(), ctypes.c_uint64()
        self._check(lib.fairq_log_records(self._h, ctypes.byref(ptr), ctypes.byref(n)),
                    "gpusched_fairq_log_records")
        return _decisions(ptr, n.value)

    def clear_log(self) -> None:
        """Forgets the decisions logged so far."""
        self._check(lib.fairq_log_clear(self._h), "gpusched_fairq_log_clear")

    def save_log(self, path: Union[str, os.PathLike]) -> None:
        """Writes the logged decisions to a file (read back with
        :meth:`DecisionLog.read`). Raises IOFailure if it cannot."""
        self._check(lib.fairq_log_save(self._h, os.fsencode(path)), "gpusched_fairq_log_save")

    def __repr__(self) -> str:
        if self.closed:
            return "<gpusched.FairQueue closed>"
        q, r = self.counts()
        return f"<gpusched.FairQueue tenants={self._max_tenants} queued={q} running={r}>"


class DecisionLog(u.Handle):
    """A decision log read from a file written by :meth:`FairQueue.save_log`.
    Behaves as a read-only sequence of :class:`Decision`."""

    _records: List[Decision]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("use DecisionLog.read(path)")

    @classmethod
    def read(cls, path: Union[str, os.PathLike]) -> DecisionLog:
        """Reads a log file. Raises IOFailure, CorruptData or
        UnsupportedVersion."""
        out = ctypes.c_void_p()
        err = ctypes.create_string_buffer(_ERRBUF)
        rc = lib.fairq_log_read(os.fsencode(path), None, ctypes.byref(out), err, _ERRBUF)
        lib.check(rc, lambda _: err.value, None, "gpusched_fairq_log_read")
        self = object.__new__(cls)
        self._own(out.value, lib.fairq_log_free)
        ptr, n = ctypes.POINTER(_CDecision)(), ctypes.c_uint64()
        lib.check(lib.fairq_log_view(self._h, ctypes.byref(ptr), ctypes.byref(n)),
                  function="gpusched_fairq_log_view")
        self._records = _decisions(ptr, n.value)
        return self

    def decisions(self) -> List[Decision]:
        """The records as a list of :class:`Decision`."""
        self._h
        return list(self._records)

    def __len__(self) -> int:
        self._h
        return len(self._records)

    @overload
    def __getitem__(self, i: int) -> Decision: ...

    @overload
    def __getitem__(self, i: slice) -> List[Decision]: ...

    def __getitem__(self, i: Union[int, slice]) -> Union[Decision, List[Decision]]:
        self._h
        return self._records[i]

    def __iter__(self) -> Iterator[Decision]:
        self._h
        return iter(self._records)
