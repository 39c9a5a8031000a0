"""Preemption planning (preempt.h): which lower-priority jobs to evict so
that a gang fits, as a :class:`PreemptPlan` next to the gang's
:class:`~gpusched.Placement`."""
import ctypes

from . import _util as u
from ._lib import lib
from .placement import Placement, build_request, new_result

__all__ = ["PreemptPlan"]

_ENOSPC = -30
_COMMIT = 1  # GPUSCHED_PLACE_COMMIT


class PreemptPlan:
    """The victims of one preemption: a plain copy, valid whatever happens
    to the cluster later.

    Attributes:
        victims: the victims' job ids, ascending (a tuple; empty when the
            gang fits as the cluster is, or does not fit at all).
        cost: the sum of the victims' ``cost_hint``.
        gpus: the GPUs the victims hold.

    ``len(plan)`` is the number of victims and iterating gives their ids, so
    a plan is true when it evicts something.
    """

    __slots__ = ("victims", "cost", "gpus")

    def __init__(self, victims=(), cost=0, gpus=0):
        self.victims = tuple(victims)
        self.cost = cost
        self.gpus = gpus

    def __len__(self):
        return len(self.victims)

    def __iter__(self):
        return iter(self.victims)

    def __contains__(self, job_id):
        return job_id in self.victims

    def __eq__(self, other):
        if not isinstance(other, PreemptPlan):
            return NotImplemented
        return (self.victims, self.cost, self.gpus) == (other.victims, other.cost, other.gpus)

    def __hash__(self):
        return hash((self.victims, self.cost, self.gpus))

    def __repr__(self):
        return (f"<gpusched.PreemptPlan {len(self.victims)} victims, {self.gpus} GPUs, "
                f"cost {self.cost}>")


def new_plan():
    """A C plan (the cluster keeps one and reuses it from call to call)."""
    out = ctypes.c_void_p()
    lib.check(lib.preempt_plan_new(None, ctypes.byref(out)), function="gpusched_preempt_plan_new")
    return out.value


def _read_plan(plan):
    ids, n = ctypes.POINTER(ctypes.c_uint64)(), ctypes.c_uint32()
    lib.check(lib.preempt_plan_victims(plan, ctypes.byref(ids), ctypes.byref(n)),
              function="gpusched_preempt_plan_victims")
    cost, gpus = ctypes.c_uint64(), ctypes.c_uint64()
    lib.check(lib.preempt_plan_totals(plan, ctypes.byref(cost), ctypes.byref(gpus)),
              function="gpusched_preempt_plan_totals")
    return PreemptPlan(u.read_array(ids, ctypes.c_uint64, n.value), cost.value, gpus.value)


def preempt_one(cluster, gpus, kw):
    """Cluster.preempt(): one request through the cluster's placer and plan."""
    req, keep = build_request(cluster.topology, gpus, kw, "preempt")
    placer, plan = cluster._placer(), cluster._preempt_plan()
    res = new_result()
    try:
        rc = lib.placer_preempt(placer, ctypes.byref(req), res, plan)
        if rc != _ENOSPC:
            lib.check(rc, lib.placer_errmsg, placer, "gpusched_placer_preempt")
        victims = _read_plan(plan)
    except BaseException:
        lib.place_result_free(res)
        raise
    return Placement(cluster.topology, req.job_id, res, "gpusched_placer_preempt"), victims


def move_one(cluster, job_id, commit):
    """Cluster.move(): one running job placed again with its shape."""
    job_id = u.u64("job_id", job_id)
    if not isinstance(commit, bool):
        raise TypeError("commit must be a bool")
    placer = cluster._placer()
    res = new_result()
    try:
        rc = lib.placer_move(placer, job_id, _COMMIT if commit else 0, res)
        if rc != _ENOSPC:
            lib.check(rc, lib.placer_errmsg, placer, "gpusched_placer_move")
    except BaseException:
        lib.place_result_free(res)
        raise
    return Placement(cluster.topology, job_id, res, "gpusched_placer_move")
