"""The scheduling cycle (sched.h): a tree of queues with quotas, borrowing
and fair share over a :class:`~gpusched.Cluster`; one call to
:meth:`Scheduler.cycle` decides which gangs start, which jobs are evicted,
which gangs hold reservations and why every other gang waits
(doc/sched.md)."""
from __future__ import annotations

import ctypes
import enum
from typing import TYPE_CHECKING, Iterable, List, Mapping, NamedTuple, Optional, Tuple, Union, cast

from . import _util as u
from ._lib import SchedJob, SchedQueue, SchedWait, lib
from .placement import PlacePolicy, build_request
from .topology import Name

if TYPE_CHECKING:
    from .cluster import Cluster

__all__ = ["Scheduler", "SchedParam", "SchedOrder", "WaitReason", "JobStatus", "Wait", "Start",
           "Reservation", "Decisions", "QueueUsage", "ROOT", "UNLIMITED", "MAX_QUEUES", "MAX_DEPTH",
           "QUOTA_MAX", "RES_GPUS", "PRIORITY_MAX", "NAME_MAX"]

#: The root queue's id (GPUSCHED_SCHED_ROOT).
ROOT = 0
#: A borrowing or lending limit that does not limit.
UNLIMITED = 0xffffffffffffffff
#: Most queues, the root included.
MAX_QUEUES = 65536
#: Deepest queue tree (the root is depth 0).
MAX_DEPTH = 16
#: Largest quota or limit, and largest sum of nominal quotas in a subtree.
QUOTA_MAX = 1 << 62
#: Resource 0: every GPU.
RES_GPUS = 0
#: Job priorities lie in [-PRIORITY_MAX, PRIORITY_MAX].
PRIORITY_MAX = (1 << 29) - 1
#: Longest queue name.
NAME_MAX = 63


class SchedParam(enum.IntEnum):
    """Scheduler parameters (``GPUSCHED_SCHED_PARAM_*``)."""
    HALF_LIFE = 1
    RESV_DEPTH = 2
    ORDER = 3
    STRICT = 4
    QUOTAS = 5
    PREEMPT = 6
    MIN_RUNTIME = 7
    AGE_LIMIT = 8
    PREEMPT_MAX_GPUS = 9
    LARGE_GPUS = 10
    KEEP_RESV = 11


class SchedOrder(enum.IntEnum):
    """The order of pending gangs (``GPUSCHED_SCHED_ORDER_*``)."""
    FAIR = 0
    PRIORITY = 1
    FIFO = 2


class WaitReason(enum.IntEnum):
    """Why a gang waits (``GPUSCHED_SCHED_WAIT_*``)."""
    NONE = 0
    QUOTA = 1
    FIT = 2
    RESERVATION = 3
    SHARE = 4
    ORDER = 5


class JobStatus(enum.IntEnum):
    """A job's state in the scheduler."""
    PENDING = 1
    RUNNING = 2


class Wait(NamedTuple):
    """Why one gang waits, with the numbers (see gpusched_sched_wait)."""
    job_id: int
    reason: WaitReason
    seq: int
    queue: int
    resource: int
    place_reason: int
    used: int
    requested: int
    limit: int
    free_gpus: int
    taken_gpus: int
    blocking_job: int
    time: int
    share: float
    message: str


class Start(NamedTuple):
    """A gang started by a cycle: its id, its position among the cycle's
    evaluations, its nodes and GPU masks (tuples)."""
    job_id: int
    seq: int
    nodes: Tuple[int, ...]
    masks: Tuple[int, ...]


class Reservation(NamedTuple):
    """A reservation: the gang, when it is expected to fit, the smallest
    domain holding its nodes (level ``None`` for the whole cluster) and
    the nodes."""
    job_id: int
    time: int
    level: Optional[int]
    domain: int
    nodes: Tuple[int, ...]


class QueueUsage(NamedTuple):
    """A queue's usage of one resource and its standing."""
    used: int
    quota: int
    decayed: float
    share: float
    pending: int


class Decisions(NamedTuple):
    """What one cycle decided (plain copies)."""
    quiet: bool
    starts: Tuple[Start, ...]
    evictions: Tuple[Tuple[int, int], ...]
    reservations: Tuple[Reservation, ...]
    waits: Tuple[Wait, ...]


def _free_sched(ptr: int, decisions: int) -> None:
    lib.sched_decisions_free(decisions)
    lib.sched_free(ptr)


def _param(param: Union[SchedParam, int, str]) -> SchedParam:
    if isinstance(param, str):
        try:
            return SchedParam[param.upper()]
        except KeyError:
            raise ValueError(f"unknown scheduler parameter {param!r} (one of "
                             f"{', '.join(p.name.lower() for p in SchedParam)})") from None
    return SchedParam(u.u32("param", param))


class Scheduler(u.Handle):
    """A scheduler over one :class:`~gpusched.Cluster`: queues, pending
    gangs, and the cycle. It starts gangs as jobs of the cluster (with
    their ids) and releases them when they end.

    Queues and resources are accepted by name or id; resource 0 (or
    ``"gpus"``) counts every GPU, a GPU class name (or ``1 + class index``)
    the GPUs of that class. Times are the caller's integers (any unit).
    """

    def __init__(self, cluster: Cluster, *, half_life: Optional[int] = None,
                 resv_depth: Optional[int] = None, order: Union[SchedOrder, int, None] = None,
                 strict: Optional[bool] = None, quotas: Optional[bool] = None,
                 preempt: Optional[bool] = None, min_runtime: Optional[int] = None,
                 age_limit: Optional[int] = None, preempt_max_gpus: Optional[int] = None,
                 large_gpus: Optional[int] = None, keep_resv: Optional[bool] = None) -> None:
        """Creates a scheduler with only the root queue; the keywords set
        parameters (None keeps the library's default)."""
        from .cluster import Cluster
        if not isinstance(cluster, Cluster):
            raise TypeError(f"cluster must be a Cluster, not {type(cluster).__name__}")
        out = ctypes.c_void_p()
        lib.check(lib.sched_new(cluster._h, None, ctypes.byref(out)), function="gpusched_sched_new")
        d = ctypes.c_void_p()
        rc = lib.sched_decisions_new(None, ctypes.byref(d))
        if rc:
            lib.sched_free(out.value)
            lib.check(rc, function="gpusched_sched_decisions_new")
        self._own(out.value, _free_sched, d.value)
        self._d = cast(int, d.value)
        self.cluster = cluster
        params = {SchedParam.HALF_LIFE: half_life, SchedParam.RESV_DEPTH: resv_depth,
                  SchedParam.ORDER: order, SchedParam.STRICT: strict, SchedParam.QUOTAS: quotas,
                  SchedParam.PREEMPT: preempt, SchedParam.MIN_RUNTIME: min_runtime,
                  SchedParam.AGE_LIMIT: age_limit, SchedParam.PREEMPT_MAX_GPUS: preempt_max_gpus,
                  SchedParam.LARGE_GPUS: large_gpus, SchedParam.KEEP_RESV: keep_resv}
        for p, value in params.items():
            if value is not None:
                self.set_param(p, int(value))

    def _check(self, rc: int, function: str) -> int:
        return lib.check(rc, lib.sched_errmsg, self._h, function)

    # ---- parameters -------------------------------------------------------

    def set_param(self, param: Union[SchedParam, int, str], value: int) -> None:
        """Sets a parameter (:class:`SchedParam`, its int or its name)."""
        p = _param(param)
        self._check(lib.sched_param_set(self._h, p, u.i64("value", value)), "gpusched_sched_param_set")

    def get_param(self, param: Union[SchedParam, int, str]) -> int:
        """Reads a parameter."""
        v = ctypes.c_int64()
        self._check(lib.sched_param_get(self._h, _param(param), ctypes.byref(v)),
                    "gpusched_sched_param_get")
        return v.value

    @staticmethod
    def param_bounds(param: Union[SchedParam, int, str]) -> Tuple[int, int]:
        """The accepted range of a parameter."""
        lo, hi = ctypes.c_int64(), ctypes.c_int64()
        lib.check(lib.sched_param_bounds(_param(param), ctypes.byref(lo), ctypes.byref(hi)),
                  function="gpusched_sched_param_bounds")
        return lo.value, hi.value

    # ---- queues -----------------------------------------------------------

    def queue(self, queue: Union[int, str]) -> int:
        """A queue's id, from its name or id."""
        if isinstance(queue, str):
            out = ctypes.c_uint32()
            self._check(lib.sched_queue_find(self._h, u.text("queue", queue), ctypes.byref(out)),
                        "gpusched_sched_queue_find")
            return out.value
        q = u.u32("queue", queue)
        if q >= lib.sched_queue_count(self._h):
            raise ValueError(f"queue {q} does not exist")
        return q

    @property
    def queues(self) -> List[str]:
        """Every queue's name, by id (the root first)."""
        return [lib.sched_queue_name(self._h, i).decode() for i in range(lib.sched_queue_count(self._h))]

    def resource(self, resource: Union[int, str]) -> int:
        """A resource index: 0 or ``"gpus"``, a GPU class name (1 + its
        class), a topology resource name such as ``"cpu"`` or ``"memory"``
        (1 + the class count + its resource index), or an index."""
        if isinstance(resource, str):
            if resource == "gpus":
                return 0
            topo = self.cluster.topology
            if resource in topo.resources:
                if resource in topo.classes:
                    raise ValueError(f"resource {resource!r} names both a GPU class and a topology resource: "
                                     "give its index")
                return 1 + len(topo.classes) + topo.resource(resource)
            return 1 + topo.gpu_class(resource)
        return u.u32("resource", resource)

    def add_queue(self, name: str, parent: Union[int, str] = ROOT, *, priority: int = 0, weight: int = 1,
                  quota: Optional[int] = None, borrowing_limit: Optional[int] = None,
                  lending_limit: Optional[int] = None) -> int:
        """Adds a queue; with ``quota`` sets its nominal GPU quota (and the
        limits, None: unlimited). Returns its id."""
        q = SchedQueue()
        q.size = ctypes.sizeof(SchedQueue)
        q.parent = self.queue(parent)
        name_b = u.text("name", name)
        q.name = name_b
        q.priority = u.i32("priority", priority)
        q.weight = u.u32("weight", weight)
        out = ctypes.c_uint32()
        self._check(lib.sched_queue_add(self._h, ctypes.byref(q), ctypes.byref(out)), "gpusched_sched_queue_add")
        if quota is not None:
            self.set_quota(out.value, quota, borrowing_limit=borrowing_limit, lending_limit=lending_limit)
        return out.value

    def set_quota(self, queue: Union[int, str], nominal: int, *, resource: Union[int, str] = 0,
                  borrowing_limit: Optional[int] = None, lending_limit: Optional[int] = None) -> None:
        """Sets a queue's nominal quota and limits for one resource (None: unlimited)."""
        b = UNLIMITED if borrowing_limit is None else u.u64("borrowing_limit", borrowing_limit)
        lend = UNLIMITED if lending_limit is None else u.u64("lending_limit", lending_limit)
        self._check(lib.sched_queue_quota_set(self._h, self.queue(queue), self.resource(resource),
                                              u.u64("nominal", nominal), b, lend),
                    "gpusched_sched_queue_quota_set")

    def move_queue(self, queue: Union[int, str], parent: Union[int, str]) -> None:
        """Moves a queue (with its subtree) under another parent."""
        self._check(lib.sched_queue_parent_set(self._h, self.queue(queue), self.queue(parent)),
                    "gpusched_sched_queue_parent_set")

    def usage(self, queue: Union[int, str], resource: Union[int, str] = 0) -> QueueUsage:
        """A queue's usage of one resource, its subtree quota, decayed
        usage, share and pending gangs."""
        used, quota = ctypes.c_uint64(), ctypes.c_uint64()
        decayed, share = ctypes.c_double(), ctypes.c_double()
        pending = ctypes.c_uint32()
        self._check(lib.sched_queue_usage(self._h, self.queue(queue), self.resource(resource),
                                          ctypes.byref(used), ctypes.byref(quota), ctypes.byref(decayed),
                                          ctypes.byref(share), ctypes.byref(pending)),
                    "gpusched_sched_queue_usage")
        return QueueUsage(used.value, quota.value, decayed.value, share.value, pending.value)

    # ---- jobs -------------------------------------------------------------

    def submit(self, job_id: int, queue: Union[int, str], gpus: Optional[int] = None, *, priority: int = 0,
               submit_time: int = 0, duration_limit: int = 0, duration_predicted: int = 0,
               preemptible: bool = False, cost_hint: int = 0, pod_gpus: Optional[int] = None,
               whole_nodes: bool = False, required: Optional[Name] = None,
               preferred: Optional[Name] = None,
               slices: Union[Tuple[int, Name], Iterable[Tuple[int, Name]], None] = (),
               gpu_class: Optional[Name] = None, labels: Union[str, Iterable[Name], None] = (),
               avoid_labels: Union[str, Iterable[Name], None] = (),
               avoid_nodes: Union[Name, Iterable[Name], None] = (), pods: Optional[int] = None,
               gpu_milli: int = 0, cpu: Optional[int] = None, memory: Optional[int] = None,
               resources: Optional[Mapping[str, int]] = None, gpu_classes: Iterable[Name] = (),
               place_policy: Union[PlacePolicy, int, str] = PlacePolicy.DEFAULT) -> None:
        """Submits a gang of `gpus` GPUs, or of `pods` pods with resources;
        the shape keywords are those of :meth:`Cluster.place`
        (``pod_gpus``, ``whole_nodes``, ``required``, ``preferred``,
        ``slices``, ``gpu_class``, ``labels``, ``avoid_labels``,
        ``avoid_nodes``, and for pods ``pods``, ``gpu_milli``, ``cpu``,
        ``memory``, ``resources``, ``gpu_classes``, ``place_policy``). A pod
        gang uses its pods' sum of each topology resource (quotas by
        :meth:`resource` name, e.g. ``set_quota(q, 64000, resource="cpu")``),
        and of GPUs its whole GPUs, fractions charged by their milli summed
        and rounded up; it preempts and is reserved for like a whole-GPU
        gang (sched.h)."""
        req, keep = build_request(self.cluster.topology, gpus, pod_gpus=pod_gpus,
                                  whole_nodes=whole_nodes, required=required, preferred=preferred,
                                  slices=slices, gpu_class=gpu_class, labels=labels,
                                  avoid_labels=avoid_labels, avoid_nodes=avoid_nodes, pods=pods,
                                  gpu_milli=gpu_milli, cpu=cpu, memory=memory, resources=resources,
                                  gpu_classes=gpu_classes, place_policy=place_policy)
        req.job = None
        req.flags = 0
        j = SchedJob()
        j.size = ctypes.sizeof(SchedJob)
        j.queue = self.queue(queue)
        j.id = u.u64("job_id", job_id)
        j.priority = u.i32("priority", priority)
        if not isinstance(preemptible, bool):
            raise TypeError("preemptible must be a bool")
        j.flags = 1 if preemptible else 0
        j.submit_time = u.i64("submit_time", submit_time)
        j.duration_limit = u.i64("duration_limit", duration_limit)
        j.duration_predicted = u.i64("duration_predicted", duration_predicted)
        j.cost_hint = u.u64("cost_hint", cost_hint)
        j.request = ctypes.pointer(req)
        self._check(lib.sched_submit(self._h, ctypes.byref(j)), "gpusched_sched_submit")
        del keep

    def cancel(self, job_id: int) -> None:
        """Withdraws a pending gang."""
        self._check(lib.sched_cancel(self._h, u.u64("job_id", job_id)), "gpusched_sched_cancel")

    def end(self, job_id: int, now: int) -> None:
        """A running job ended at `now`: its GPUs are released."""
        self._check(lib.sched_job_end(self._h, u.u64("job_id", job_id), u.i64("now", now)),
                    "gpusched_sched_job_end")

    def node_health(self, node: Union[int, str], health: int, now: int) -> None:
        """Changes a node's health; going down, the scheduler's jobs on it
        go back to their queues (evictions of the next cycle)."""
        self._check(lib.sched_node_health_set(self._h, self.cluster.topology.node(node),
                                              u.u32("health", health), u.i64("now", now)),
                    "gpusched_sched_node_health_set")

    def job_state(self, job_id: int) -> Tuple[JobStatus, Wait]:
        """A job's status and, for a pending gang, why it waited in the
        last cycle that evaluated it (the message is empty here)."""
        st = ctypes.c_uint32()
        w = SchedWait()
        w.size = ctypes.sizeof(SchedWait)
        self._check(lib.sched_job_state(self._h, u.u64("job_id", job_id), ctypes.byref(st), ctypes.byref(w)),
                    "gpusched_sched_job_state")
        return JobStatus(st.value), _wait(w, "")

    def counts(self) -> Tuple[int, int]:
        """(pending gangs, running jobs)."""
        p, r = ctypes.c_uint32(), ctypes.c_uint32()
        self._check(lib.sched_counts(self._h, ctypes.byref(p), ctypes.byref(r)), "gpusched_sched_counts")
        return p.value, r.value

    def check(self) -> None:
        """Checks the scheduler's invariants; raises CorruptData if broken."""
        self._check(lib.sched_check(self._h), "gpusched_sched_check")

    # ---- the cycle --------------------------------------------------------

    def cycle(self, now: int) -> Decisions:
        """Runs one scheduling cycle at `now` and returns its decisions."""
        self._check(lib.sched_cycle(self._h, u.i64("now", now), self._d), "gpusched_sched_cycle")
        return _read_decisions(self._d)


def _wait(w: SchedWait, message: str) -> Wait:
    return Wait(w.job_id, WaitReason(w.reason), w.seq, w.queue, w.resource, w.place_reason, w.used,
                w.requested, w.limit, w.free_gpus, w.taken_gpus, w.blocking_job, w.time, w.share, message)


def _read_decisions(d: int) -> Decisions:
    quiet = bool(lib.sched_decisions_quiet(d))
    ids, n = ctypes.POINTER(ctypes.c_uint64)(), ctypes.c_uint32()
    lib.check(lib.sched_decisions_starts(d, ctypes.byref(ids), ctypes.byref(n)),
              function="gpusched_sched_decisions_starts")
    starts = []
    job, seq = ctypes.c_uint64(), ctypes.c_uint32()
    nodes, masks = ctypes.POINTER(ctypes.c_uint32)(), ctypes.POINTER(ctypes.c_uint64)()
    npairs = ctypes.c_uint32()
    for i in range(n.value):
        lib.check(lib.sched_decisions_start(d, i, ctypes.byref(job), ctypes.byref(seq), ctypes.byref(nodes),
                                            ctypes.byref(masks), ctypes.byref(npairs)),
                  function="gpusched_sched_decisions_start")
        starts.append(Start(job.value, seq.value, tuple(u.read_array(nodes, ctypes.c_uint32, npairs.value)),
                            tuple(u.read_array(masks, ctypes.c_uint64, npairs.value))))
    victims, fors = ctypes.POINTER(ctypes.c_uint64)(), ctypes.POINTER(ctypes.c_uint64)()
    lib.check(lib.sched_decisions_evictions(d, ctypes.byref(victims), ctypes.byref(fors), ctypes.byref(n)),
              function="gpusched_sched_decisions_evictions")
    evictions = tuple(zip(u.read_array(victims, ctypes.c_uint64, n.value),
                          u.read_array(fors, ctypes.c_uint64, n.value)))
    resvs = []
    t, level, dom = ctypes.c_int64(), ctypes.c_uint32(), ctypes.c_uint32()
    for i in range(lib.sched_decisions_reservation_count(d)):
        lib.check(lib.sched_decisions_reservation(d, i, ctypes.byref(job), ctypes.byref(t), ctypes.byref(level),
                                                  ctypes.byref(dom), ctypes.byref(nodes), ctypes.byref(npairs)),
                  function="gpusched_sched_decisions_reservation")
        resvs.append(Reservation(job.value, t.value, None if level.value == 0xffffffff else level.value,
                                 dom.value, tuple(u.read_array(nodes, ctypes.c_uint32, npairs.value))))
    waits = []
    w = SchedWait()
    for i in range(lib.sched_decisions_wait_count(d)):
        w.size = ctypes.sizeof(SchedWait)
        lib.check(lib.sched_decisions_wait(d, i, ctypes.byref(w)), function="gpusched_sched_decisions_wait")
        waits.append(_wait(w, lib.sched_decisions_wait_message(d, i).decode("utf-8", "replace")))
    return Decisions(quiet, tuple(starts), evictions, tuple(resvs), tuple(waits))


