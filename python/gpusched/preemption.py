"""Preemption planning (preempt.h): which lower-priority jobs to evict, or
which movable jobs to move (defragmentation), so that a gang fits, as a
:class:`PreemptPlan` next to the gang's :class:`~gpusched.Placement`."""
from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any, Iterable, Iterator, List, NamedTuple, Sequence, Tuple, cast

from . import _util as u
from ._errors import DoesNotFit
from ._lib import lib
from .placement import PLACE_FLAG_COMMIT, Placement, build_request, new_result

if TYPE_CHECKING:
    from .cluster import Cluster

__all__ = ["PreemptPlan", "Move"]


class Move(NamedTuple):
    """One move of a defragmentation plan: the job and the GPUs it moves to
    (node indices ascending, one GPU bit mask per node; tuples)."""
    job_id: int
    nodes: Tuple[int, ...]
    masks: Tuple[int, ...]


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

    victims: Tuple[int, ...]
    cost: int
    gpus: int
    moves: Tuple[Move, ...]

    def __init__(self, victims: Iterable[int] = (), cost: int = 0, gpus: int = 0,
                 moves: Iterable[Tuple[int, Sequence[int], Sequence[int]]] = ()) -> None:
        self.victims = tuple(victims)
        self.cost = cost
        self.gpus = gpus
        self.moves = tuple(Move(m[0], tuple(m[1]), tuple(m[2])) for m in moves)

    def __len__(self) -> int:
        return len(self.victims)

    def __iter__(self) -> Iterator[int]:
        return iter(self.victims)

    def __contains__(self, job_id: object) -> bool:
        return job_id in self.victims

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PreemptPlan):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> Tuple[Any, ...]:
        return self.victims, self.cost, self.gpus, self.moves

    def __repr__(self) -> str:
        moves = f"{len(self.moves)} moves, " if self.moves else ""
        return (f"<gpusched.PreemptPlan {len(self.victims)} victims, {moves}{self.gpus} GPUs, "
                f"cost {self.cost}>")


def new_plan() -> int:
    """A C plan (the cluster keeps one and reuses it from call to call)."""
    out = ctypes.c_void_p()
    lib.check(lib.preempt_plan_new(None, ctypes.byref(out)), function="gpusched_preempt_plan_new")
    return cast(int, out.value)


def _read_plan(plan: int) -> PreemptPlan:
    ids, n = ctypes.POINTER(ctypes.c_uint64)(), ctypes.c_uint32()
    lib.check(lib.preempt_plan_victims(plan, ctypes.byref(ids), ctypes.byref(n)),
              function="gpusched_preempt_plan_victims")
    cost, gpus = ctypes.c_uint64(), ctypes.c_uint64()
    lib.check(lib.preempt_plan_totals(plan, ctypes.byref(cost), ctypes.byref(gpus)),
              function="gpusched_preempt_plan_totals")
    return PreemptPlan(u.read_array(ids, ctypes.c_uint64, n.value), cost.value, gpus.value,
                       _read_moves(plan))


def _read_moves(plan: int) -> List[Tuple[int, List[int], List[int]]]:
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


def _plan_one(cluster: Cluster, fn: Any, name: str, gpus: int,
              options: Any) -> Tuple[Placement, PreemptPlan]:
    """One request through the cluster's placer and plan: preempt or defrag."""
    req, keep = build_request(cluster.topology, gpus, **options)
    placer, plan = cluster._placer(), cluster._preempt_plan()
    res = new_result()
    try:
        rc = fn(placer, ctypes.byref(req), res, plan)
        if rc != DoesNotFit.code:
            lib.check(rc, lib.placer_errmsg, placer, name)
        result = _read_plan(plan)
    except BaseException:
        lib.place_result_free(res)
        raise
    return Placement(cluster.topology, keep[0].id, res, name), result


def preempt_one(cluster: Cluster, gpus: int, **options: Any) -> Tuple[Placement, PreemptPlan]:
    """Cluster.preempt(): victims to evict."""
    return _plan_one(cluster, lib.placer_preempt, "gpusched_placer_preempt", gpus, options)


def defrag_one(cluster: Cluster, gpus: int, **options: Any) -> Tuple[Placement, PreemptPlan]:
    """Cluster.defrag(): movable jobs to move."""
    return _plan_one(cluster, lib.placer_defrag, "gpusched_placer_defrag", gpus, options)


def move_one(cluster: Cluster, job_id: int, commit: bool) -> Placement:
    """Cluster.move(): one running job placed again with its shape."""
    job_id = u.u64("job_id", job_id)
    if not isinstance(commit, bool):
        raise TypeError("commit must be a bool")
    placer = cluster._placer()
    res = new_result()
    try:
        rc = lib.placer_move(placer, job_id, PLACE_FLAG_COMMIT if commit else 0, res)
        if rc != DoesNotFit.code:
            lib.check(rc, lib.placer_errmsg, placer, "gpusched_placer_move")
    except BaseException:
        lib.place_result_free(res)
        raise
    return Placement(cluster.topology, job_id, res, "gpusched_placer_move")
