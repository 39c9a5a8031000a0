"""Preemption planning (preempt.h): which lower-priority jobs to evict, or
which movable jobs to move (defragmentation), so that a gang fits, as a
:class:`PreemptPlan` next to the gang's :class:`~gpusched.Placement`."""
import collections
import ctypes

from . import _util as u
from ._lib import lib
from .placement import Placement, build_request, new_result

__all__ = ["PreemptPlan", "Move"]

_ENOSPC = -30
_COMMIT = 1  # GPUSCHED_PLACE_FLAG_COMMIT


#: One move of a defragmentation plan: the job and the GPUs it moves to
#: (node indices ascending, one GPU bit mask per node; tuples).
Move = collections.namedtuple("Move", "job_id nodes masks")


class PreemptPlan:
    """The victims of one preemption, or the moves of one defragmentation:
    a plain copy, valid whatever happens to the cluster later.

    Attributes:
        victims: the victims' job ids, ascending (a tuple; empty when the
            gang fits as the cluster is, or does not fit at all, and for a
            defragmentation).
        moves: the moves of a defragmentation, a tuple of :class:`Move`
            (empty for a preemption).
        cost: the sum of the victims' (or movers') ``cost_hint``.
        gpus: the GPUs the victims (or movers) hold.

    ``len(plan)`` is the number of victims and iterating gives their ids, so
    a preemption plan is true when it evicts something; a defragmentation
    plan has no victims, look at :attr:`moves`.
    """

    __slots__ = ("victims", "cost", "gpus", "moves")

    def __init__(self, victims=(), cost=0, gpus=0, moves=()):
        self.victims = tuple(victims)
        self.cost = cost
        self.gpus = gpus
        self.moves = tuple(Move(m[0], tuple(m[1]), tuple(m[2])) for m in moves)

    def __len__(self):
        return len(self.victims)

    def __iter__(self):
        return iter(self.victims)

    def __contains__(self, job_id):
        return job_id in self.victims

    def __eq__(self, other):
        if not isinstance(other, PreemptPlan):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def _key(self):
        return self.victims, self.cost, self.gpus, self.moves

    def __repr__(self):
        moves = f"{len(self.moves)} moves, " if self.moves else ""
        return (f"<gpusched.PreemptPlan {len(self.victims)} victims, {moves}{self.gpus} GPUs, "
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
    return PreemptPlan(u.read_array(ids, ctypes.c_uint64, n.value), cost.value, gpus.value,
                       _read_moves(plan))


def _read_moves(plan):
    moves = []
    job = ctypes.c_uint64()
    nodes, masks = ctypes.POINTER(ctypes.c_uint32)(), ctypes.POINTER(ctypes.c_uint64)()
    n = ctypes.c_uint32()
    for i in range(lib.preempt_plan_move_count(plan)):
        lib.check(lib.preempt_plan_move(plan, i, ctypes.byref(job), ctypes.byref(nodes),
                                        ctypes.byref(masks), ctypes.byref(n)),
                  function="gpusched_preempt_plan_move")
        moves.append((job.value, u.read_array(nodes, ctypes.c_uint32, n.value),
                      u.read_array(masks, ctypes.c_uint64, n.value)))
    return moves


def _plan_one(cluster, gpus, kw, caller, fn, name):
    """One request through the cluster's placer and plan: preempt or defrag."""
    req, keep = build_request(cluster.topology, gpus, kw, caller)
    placer, plan = cluster._placer(), cluster._preempt_plan()
    res = new_result()
    try:
        rc = fn(placer, ctypes.byref(req), res, plan)
        if rc != _ENOSPC:
            lib.check(rc, lib.placer_errmsg, placer, name)
        result = _read_plan(plan)
    except BaseException:
        lib.place_result_free(res)
        raise
    return Placement(cluster.topology, keep[0].id, res, name), result


def preempt_one(cluster, gpus, kw):
    """Cluster.preempt(): victims to evict."""
    return _plan_one(cluster, gpus, kw, "preempt", lib.placer_preempt, "gpusched_placer_preempt")


def defrag_one(cluster, gpus, kw):
    """Cluster.defrag(): movable jobs to move."""
    return _plan_one(cluster, gpus, kw, "defrag", lib.placer_defrag, "gpusched_placer_defrag")


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
