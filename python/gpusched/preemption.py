"""Preemption planning (preempt.h): which lower-priority jobs to evict, or
which movable jobs to move (defragmentation), so that a gang fits, as a
:class:`PreemptPlan` next to the gang's :class:`~gpusched.Placement`."""
from __future__ import annotations

import ctypes
import enum
from typing import (TYPE_CHECKING, Any, Iterable, Iterator, List, NamedTuple, Optional,
                    Sequence, Tuple, Union, cast)

from . import _util as u
from ._errors import DoesNotFit
from ._lib import lib
from .placement import PLACE_FLAG_COMMIT, Placement, build_request, new_result

if TYPE_CHECKING:
    from .cluster import Cluster

__all__ = ["PreemptPlan", "Move", "PreemptPolicy", "EXACT_MAX"]

#: Domains with at most this many candidate victims are searched exactly
#: (GPUSCHED_PREEMPT_EXACT_MAX): a plan whose every domain that could hold
#: the gang has no more is optimal for its policy (:attr:`PreemptPlan.exact`).
EXACT_MAX = 24


class PreemptPolicy(enum.IntEnum):
    """How :meth:`~gpusched.Cluster.preempt` ranks plans (its ``policy``;
    ``GPUSCHED_PREEMPT_*``). It also takes the value as an int or a name
    such as ``"cost_first"``.

    PRIORITY_FIRST, the default: the highest priority among the victims as
    low as possible (a job of priority p is never evicted when the eligible
    jobs below p alone can make room), then the least total ``cost_hint``,
    the fewest GPUs evicted, the fewest victims.

    COST_FIRST: the least total ``cost_hint`` whatever the priorities
    (priority only decides who is eligible), then the fewest GPUs, the
    fewest victims; for cost hints that already weigh priority in.
    """
    PRIORITY_FIRST = 0
    COST_FIRST = 1


def preempt_policy(policy: Union[PreemptPolicy, int, str]) -> PreemptPolicy:
    """A :class:`PreemptPolicy` from the enum, its int or its name (any
    case); TypeError or ValueError naming ``policy`` otherwise."""
    if isinstance(policy, str):
        try:
            return PreemptPolicy[policy.upper()]
        except KeyError:
            raise ValueError(f"unknown preemption policy {policy!r} (one of "
                             f"{', '.join(p.name.lower() for p in PreemptPolicy)})") from None
    return PreemptPolicy(u.u32("policy", policy, len(PreemptPolicy) - 1))


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
        exact: True when the preemption plan is proven optimal for its
            policy: no victim was needed, or every domain that could hold
            the gang had at most :data:`EXACT_MAX` candidate victims and
            was searched exactly. False when it comes from the heuristic,
            when no plan was found, for a gang of pods with resources or
            GPU fractions that needed victims, and for a defragmentation.
        cost_lower_bound: no plan evicting the same highest priority (any
            plan, under :attr:`PreemptPolicy.COST_FIRST`) costs less than
            this; equal to ``cost`` when ``exact``, so ``cost -
            cost_lower_bound`` bounds how far a heuristic plan can be from
            the least cost. 0 when no plan was found and for a
            defragmentation.
        protected_jobs, protected_gpus: the jobs that would have been
            eligible victims but for their ``protected_until`` (the
            request's ``now`` is before it), and their GPUs: a gang that
            waits because of protection, not for want of victims, has
            them. Reported also when no plan was found; 0 for a
            defragmentation.
        protected_until: the earliest time one of them stops being
            protected (0 when there is none): when to ask again.

    ``len(plan)`` is the number of victims and iterating gives their ids, so
    a preemption plan is true when it evicts something; a defragmentation
    plan has no victims, look at :attr:`moves`. Plans compare equal when
    every attribute is equal.
    """

    __slots__ = ("victims", "cost", "gpus", "moves", "exact", "cost_lower_bound",
                 "protected_jobs", "protected_gpus", "protected_until")

    victims: Tuple[int, ...]
    cost: int
    gpus: int
    moves: Tuple[Move, ...]
    exact: bool
    cost_lower_bound: int
    protected_jobs: int
    protected_gpus: int
    protected_until: int

    def __init__(self, victims: Iterable[int] = (), cost: int = 0, gpus: int = 0,
                 moves: Iterable[Tuple[int, Sequence[int], Sequence[int]]] = (), *,
                 exact: bool = False, cost_lower_bound: int = 0, protected_jobs: int = 0,
                 protected_gpus: int = 0, protected_until: int = 0) -> None:
        self.victims = tuple(victims)
        self.cost = cost
        self.gpus = gpus
        self.moves = tuple(Move(m[0], tuple(m[1]), tuple(m[2])) for m in moves)
        self.exact = exact
        self.cost_lower_bound = cost_lower_bound
        self.protected_jobs = protected_jobs
        self.protected_gpus = protected_gpus
        self.protected_until = protected_until

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
        return (self.victims, self.cost, self.gpus, self.moves, self.exact,
                self.cost_lower_bound, self.protected_jobs, self.protected_gpus,
                self.protected_until)

    def __repr__(self) -> str:
        moves = f"{len(self.moves)} moves, " if self.moves else ""
        if self.exact:
            bound = " (optimal)"
        elif self.victims:
            bound = f" (at least {self.cost_lower_bound})"
        else:
            bound = ""
        protected = (f", {self.protected_jobs} protected ({self.protected_gpus} GPUs) until "
                     f"{self.protected_until}" if self.protected_jobs else "")
        return (f"<gpusched.PreemptPlan {len(self.victims)} victims, {moves}{self.gpus} GPUs, "
                f"cost {self.cost}{bound}{protected}>")


def new_plan() -> int:
    """A C plan (the cluster keeps one and reuses it from call to call)."""
    out = ctypes.c_void_p()
    lib.check(lib.preempt_plan_new(None, ctypes.byref(out)), function="gpusched_preempt_plan_new")
    return cast(int, out.value)


def _read_plan(plan: int, preemption: bool) -> PreemptPlan:
    ids, n = ctypes.POINTER(ctypes.c_uint64)(), ctypes.c_uint32()
    lib.check(lib.preempt_plan_victims(plan, ctypes.byref(ids), ctypes.byref(n)),
              function="gpusched_preempt_plan_victims")
    cost, gpus = ctypes.c_uint64(), ctypes.c_uint64()
    lib.check(lib.preempt_plan_totals(plan, ctypes.byref(cost), ctypes.byref(gpus)),
              function="gpusched_preempt_plan_totals")
    result = PreemptPlan(u.read_array(ids, ctypes.c_uint64, n.value), cost.value, gpus.value,
                         _read_moves(plan))
    if preemption:
        # Only a preemption sets these: a defragmentation leaves what the
        # last preemption through the same C plan left, so its plan keeps
        # the defaults.
        exact, bound = ctypes.c_uint32(), ctypes.c_uint64()
        lib.check(lib.preempt_plan_optimality(plan, ctypes.byref(exact), ctypes.byref(bound)),
                  function="gpusched_preempt_plan_optimality")
        jobs, held, until = ctypes.c_uint32(), ctypes.c_uint64(), ctypes.c_int64()
        lib.check(lib.preempt_plan_protected(plan, ctypes.byref(jobs), ctypes.byref(held),
                                             ctypes.byref(until)),
                  function="gpusched_preempt_plan_protected")
        result.exact = bool(exact.value)
        result.cost_lower_bound = bound.value
        result.protected_jobs = jobs.value
        result.protected_gpus = held.value
        result.protected_until = until.value
    return result


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


def _plan_one(cluster: Cluster, preemption: bool, gpus: Optional[int], policy: PreemptPolicy,
              now: int, options: Any) -> Tuple[Placement, PreemptPlan]:
    """One request through the cluster's placer and plan: preempt or defrag."""
    fn, name = ((lib.placer_preempt, "gpusched_placer_preempt") if preemption else
                (lib.placer_defrag, "gpusched_placer_defrag"))
    req, keep = build_request(cluster.topology, gpus, **options)
    req.preempt_policy = policy
    req.now = now
    placer, plan = cluster._placer(), cluster._preempt_plan()
    res = new_result()
    try:
        rc = fn(placer, ctypes.byref(req), res, plan)
        if rc != DoesNotFit.code:
            lib.check(rc, lib.placer_errmsg, placer, name)
        result = _read_plan(plan, preemption)
    except BaseException:
        lib.place_result_free(res)
        raise
    return Placement(cluster.topology, keep[0].id, res, name), result


def preempt_one(cluster: Cluster, gpus: Optional[int], *, policy: Union[PreemptPolicy, int, str],
                now: int, **options: Any) -> Tuple[Placement, PreemptPlan]:
    """Cluster.preempt(): victims to evict."""
    return _plan_one(cluster, True, gpus, preempt_policy(policy), u.i64("now", now), options)


def defrag_one(cluster: Cluster, gpus: Optional[int], *, now: int,
               **options: Any) -> Tuple[Placement, PreemptPlan]:
    """Cluster.defrag(): movable jobs to move."""
    return _plan_one(cluster, False, gpus, PreemptPolicy.PRIORITY_FIRST, u.i64("now", now),
                     options)


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
