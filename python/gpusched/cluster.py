"""Cluster state: free GPUs, node health, aggregates, jobs, reservations,
fragmentation metrics and snapshots (cluster.h)."""
from __future__ import annotations

import array
import collections.abc
import ctypes
import enum
import os
from typing import (TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Mapping, NamedTuple,
                    Optional, Sequence, Tuple, Union, cast)

from . import _util as u
from ._errors import IOFailure, NotFound, OutOfRange
from ._lib import lib, Job as _CJob, PlaceRequest as _CRequest
from .topology import Topology, NONE, Name

if TYPE_CHECKING:
    from .placement import Placement
    from .preemption import PreemptPlan

__all__ = ["Cluster", "Job", "NodeHealth", "GpuState", "Allocation", "NodeState", "NodesState",
           "Frag", "JOB_FLAG_PREEMPTIBLE", "JOB_FLAG_MOVABLE", "JOB_FLAG_ALL", "GpuSet"]

_ERRBUF = 512
# The job flags of cluster.h (GPUSCHED_JOB_FLAG_*). The binding takes and
# gives them as the bools ``preemptible`` and ``movable``.
JOB_FLAG_PREEMPTIBLE = 1 << 0
JOB_FLAG_MOVABLE = 1 << 1
JOB_FLAG_ALL = JOB_FLAG_PREEMPTIBLE | JOB_FLAG_MOVABLE


class NodeHealth(enum.IntEnum):
    """Health of a node; only UP nodes take new work."""
    UP = 0
    CORDONED = 1
    DRAINING = 2
    DOWN = 3


class GpuState(enum.IntEnum):
    """State of one GPU. SHARED: fractions of it are held by one or more
    pods (``gpu_milli``); :meth:`Cluster.gpu_milli_free` says how much is
    left, and no single job is reported."""
    FREE = 0
    RESERVED = 1
    ALLOCATED = 2
    SHARED = 3


class NodeState(NamedTuple):
    """A node's state: GPU bit masks (bit i: GPU i) and its :class:`NodeHealth`."""
    free: int
    reserved: int
    allocated: int
    health: NodeHealth


class NodesState(NamedTuple):
    """The state of a range of nodes, one ``array.array`` column each: free,
    reserved and allocated GPU masks, and health values (plain integers, see
    :class:`NodeHealth`)."""
    free: array.array
    reserved: array.array
    allocated: array.array
    health: array.array


class Frag(NamedTuple):
    """Fragmentation metrics of one level (see :meth:`Cluster.frag`)."""
    free_domains: int
    stranded_gpus: int
    gang_gpus: int


class Job(NamedTuple):
    """A running job's descriptor as :meth:`Cluster.job` returns it.
    ``movable`` and ``protected_until`` came last and default to False and
    0, so positional construction of the older fields keeps working.
    ``protected_until``: the job is not a victim of :meth:`Cluster.preempt`
    (nor moved by :meth:`Cluster.defrag`) while the request's ``now`` is
    before it; 0: never protected (for any ``now`` >= 0)."""
    id: int
    priority: int
    tenant: int
    start_time: int
    cost_hint: int
    preemptible: bool
    movable: bool = False
    protected_until: int = 0


def job_flags(preemptible: bool, movable: bool) -> int:
    """The C job flags of the two bool keywords (TypeError for non-bools:
    a truthy int would hide a mistaken argument)."""
    flags = 0
    for name, value, bit in (("preemptible", preemptible, JOB_FLAG_PREEMPTIBLE),
                             ("movable", movable, JOB_FLAG_MOVABLE)):
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
        if value:
            flags |= bit
    return flags


def job_struct(job_id: int, priority: int = 0, tenant: int = 0, start_time: int = 0,
               cost_hint: int = 0, preemptible: bool = False, movable: bool = False,
               protected_until: int = 0) -> _CJob:
    """A C gpusched_job from the keyword values, each checked (TypeError or
    ValueError naming the argument)."""
    j = _CJob()
    j.size = ctypes.sizeof(_CJob)
    j.id = u.u64("job_id", job_id)
    j.priority = u.i32("priority", priority)
    j.tenant = u.u32("tenant", tenant)
    j.start_time = u.i64("start_time", start_time)
    j.cost_hint = u.u64("cost_hint", cost_hint)
    j.flags = job_flags(preemptible, movable)
    j.protected_until = u.i64("protected_until", protected_until)
    return j


class Allocation:
    """GPUs held by a job or a reservation (or chosen by a placement): node
    indices ascending, with one GPU bit mask per node.

    Iterating gives ``(node index, [GPU indices])`` pairs; :meth:`by_name`
    gives node names instead. Allocations compare equal when they hold the
    same GPUs.
    """

    __slots__ = ("nodes", "masks", "_topo")

    def __init__(self, nodes: Iterable[int], masks: Iterable[int],
                 topology: Optional[Topology] = None) -> None:
        """`nodes` and `masks` are parallel sequences of ints."""
        self.nodes = tuple(nodes)
        self.masks = tuple(masks)
        self._topo = topology

    @property
    def gpus(self) -> int:
        """Total number of GPUs."""
        return sum(bin(m).count("1") for m in self.masks)

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[Tuple[int, List[int]]]:
        for n, m in zip(self.nodes, self.masks):
            yield n, u.mask_to_gpus(m)

    def items(self) -> List[Tuple[int, int]]:
        """``(node index, GPU mask)`` pairs, as the C API takes them."""
        return list(zip(self.nodes, self.masks))

    def by_name(self) -> Dict[str, List[int]]:
        """``{node name: [GPU indices]}`` (needs the topology)."""
        if self._topo is None:
            raise ValueError("this allocation has no topology to name its nodes")
        return {self._topo.node_name(n): u.mask_to_gpus(m) for n, m in zip(self.nodes, self.masks)}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Allocation):
            return NotImplemented
        return self.nodes == other.nodes and self.masks == other.masks

    def __hash__(self) -> int:
        return hash((self.nodes, self.masks))

    def __repr__(self) -> str:
        return f"<gpusched.Allocation {self.gpus} GPUs on {len(self.nodes)} nodes>"


#: GPUs of one node: a bit mask (int), GPU indices, or ``"all"``.
GpuSpec = Union[int, Iterable[int], str]
#: A set of GPUs: ``{node: gpus}`` (node names or indices as keys), ``(node,
#: gpus)`` pairs, or an :class:`Allocation`. (Any iterable of pairs works; the
#: alias says Sequence, and Any for the keys, so that type checkers infer
#: dict and list literals such as ``{0: [0, 1], 5: "all"}`` against it.)
GpuSet = Union[Allocation, Mapping[Any, GpuSpec], Sequence[Tuple[Name, GpuSpec]]]


# preempt.h's policy, the default of Cluster.preempt(). Imported here, not at
# the top: preemption.py imports placement.py, which imports Allocation and
# job_struct from this module, so they must exist first.
from .preemption import PreemptPolicy  # noqa: E402
from .placement import PlacePolicy  # noqa: E402


# The place() keywords a workload shape takes (Cluster.set_workload).
_SHAPE_KEYWORDS = ("pods", "gpus", "pod_gpus", "gpu_milli", "cpu", "memory", "resources",
                   "gpu_classes", "gpu_class")


def _free_cluster(ptr: int, engine: List[Optional[int]]) -> None:
    # The placer holds its own reference on the cluster (place.h), so the
    # order does not matter; the preemption plan depends on neither.
    if engine[0]:
        lib.placer_free(engine[0])
    if engine[1]:
        lib.preempt_plan_free(engine[1])
    lib.cluster_unref(ptr)


def _read_alloc(fn: Any, handle: int, job_id: int, topology: Topology) -> Allocation:
    nodes, masks = ctypes.POINTER(ctypes.c_uint32)(), ctypes.POINTER(ctypes.c_uint64)()
    n = ctypes.c_uint32()
    lib.check(fn(handle, job_id, ctypes.byref(nodes), ctypes.byref(masks), ctypes.byref(n), None),
              lib.cluster_errmsg, handle, fn.__name__)
    return Allocation(u.read_array(nodes, ctypes.c_uint32, n.value),
                      u.read_array(masks, ctypes.c_uint64, n.value), topology)


class Cluster(u.Handle):
    """The mutable state of a cluster on an immutable :class:`Topology`.

    Every GPU is free, reserved (kept for a job not running yet) or
    allocated (held by a running job); every node has a :class:`NodeHealth`.
    Every mutating call is atomic: it succeeds fully or changes nothing and
    raises. Job ids are the caller's 64-bit integers.

    Nodes, levels and domains are accepted by name or index. A set of GPUs
    (``gpus`` arguments) is a mapping ``{node: gpus}`` or an iterable of
    ``(node, gpus)`` pairs or an :class:`Allocation`, where ``gpus`` is a
    bit mask (int), an iterable of GPU indices, or ``"all"`` for every GPU
    of the node.

    A cluster is used by one thread at a time. Free it with :meth:`close`
    (or a ``with`` block), or leave it to the garbage collector.
    """

    def __init__(self, topology: Topology) -> None:
        """Creates an empty cluster on `topology`: every GPU free, every
        node up, no jobs, no reservations."""
        if not isinstance(topology, Topology):
            raise TypeError(f"topology must be a Topology, not {type(topology).__name__}")
        out = ctypes.c_void_p()
        lib.check(lib.cluster_new(topology._h, None, ctypes.byref(out)),
                  function="gpusched_cluster_new")
        # The placer and the preemption plan, created by the first place()
        # and preempt() or defrag().
        self._engine: List[Optional[int]] = [None, None]
        self._own(out.value, _free_cluster, self._engine)
        # A reference of its own: closing the caller's Topology must not
        # break the cluster's name lookups.
        self._topo = Topology._adopt(lib.topo_ref(topology._h))

    @classmethod
    def restore(cls, data: Any) -> Cluster:
        """Restores a cluster (with a topology of its own) from a snapshot
        made by :meth:`snapshot`. Raises CorruptData or UnsupportedVersion
        for a bad image; nothing is created then."""
        try:
            mv = memoryview(data)
        except TypeError:
            raise TypeError(f"data must be bytes-like, not {type(data).__name__}") from None
        buf = bytes(mv) if not isinstance(data, bytes) else data
        out = ctypes.c_void_p()
        err = ctypes.create_string_buffer(_ERRBUF)
        rc = lib.cluster_restore(buf, len(buf), None, ctypes.byref(out), err, _ERRBUF)
        lib.check(rc, lambda _: err.value, None, "gpusched_cluster_restore")
        self = object.__new__(cls)
        self._engine = [None, None]
        self._own(out.value, _free_cluster, self._engine)
        self._topo = Topology._adopt(lib.topo_ref(lib.cluster_topo(out.value)))
        return self

    @classmethod
    def replay(cls, snapshot: Any, journal: Any) -> Cluster:
        """Rebuilds a cluster from a snapshot and the journal written after
        it (see :meth:`journal_start`); the result snapshots to the same
        bytes as the cluster that wrote both. Raises CorruptData for a bad
        snapshot or record; nothing is created then."""
        snap, jr = bytes(memoryview(snapshot)), bytes(memoryview(journal))
        out = ctypes.c_void_p()
        err = ctypes.create_string_buffer(_ERRBUF)
        rc = lib.cluster_replay(snap, len(snap), jr, len(jr), None, ctypes.byref(out), err, _ERRBUF)
        lib.check(rc, lambda _: err.value, None, "gpusched_cluster_replay")
        self = object.__new__(cls)
        self._engine = [None, None]
        self._own(out.value, _free_cluster, self._engine)
        self._topo = Topology._adopt(lib.topo_ref(lib.cluster_topo(out.value)))
        return self

    @classmethod
    def load(cls, path: Union[str, os.PathLike]) -> Cluster:
        """Restores a cluster from a snapshot file written by :meth:`save`.
        Raises IOFailure if the file cannot be read (as
        :meth:`DecisionLog.read` does), then what :meth:`restore` raises."""
        try:
            with open(os.fspath(path), "rb") as f:
                data = f.read()
        except OSError as e:
            lib.raise_error(IOFailure.code, f"cannot read {os.fsdecode(os.fspath(path))}: {e.strerror}",
                            "Cluster.load")
        return cls.restore(data)

    def _check(self, rc: int, fn: str) -> int:
        return lib.check(rc, lib.cluster_errmsg, self._h, fn)

    @property
    def topology(self) -> Topology:
        """The cluster's :class:`Topology` (owned by the cluster: do not close it)."""
        self._h
        return self._topo

    @property
    def memory_bytes(self) -> int:
        """Bytes the cluster state holds, not counting the topology."""
        return lib.cluster_memory_bytes(self._h)

    # ---- arguments -------------------------------------------------------

    def _level_domain(self, level: Optional[Name], domain: Optional[Name]) -> Tuple[int, int]:
        if level is None:
            if domain is not None:
                raise ValueError("a domain needs a level")
            return NONE, 0
        lv = self._topo.level(level)
        if domain is None:
            raise ValueError("a level needs a domain (or leave both out for the whole cluster)")
        return lv, self._topo.domain(lv, domain)

    def _gpu_set(self, name: str, gpus: GpuSet) -> Tuple[int, Any, Any]:
        pairs: List[Any]
        if isinstance(gpus, Allocation):
            pairs = gpus.items()
        elif isinstance(gpus, collections.abc.Mapping):
            pairs = list(gpus.items())
        elif isinstance(gpus, (str, bytes)) or not isinstance(gpus, collections.abc.Iterable):
            raise TypeError(f"{name} must be a mapping or pairs of (node, gpus), "
                            f"not {type(gpus).__name__}")
        else:
            pairs = list(gpus)
        if not pairs:
            raise ValueError(f"{name} names no GPUs")
        t = self._topo
        resolved = {}
        for pair in pairs:
            try:
                node, g = pair
            except (TypeError, ValueError):
                raise TypeError(f"{name} entries must be (node, gpus) pairs") from None
            n = t.node(node)
            if n in resolved:
                raise ValueError(f"{name} names node {node!r} twice")
            ngpus = t.node_gpus(n)
            if isinstance(g, str) and g == "all":
                mask = (1 << ngpus) - 1
            else:
                mask = u.bits(f"{name}[{node!r}]", g, ngpus)
            if mask == 0:
                raise ValueError(f"{name}[{node!r}] names no GPU")
            resolved[n] = mask
        nodes = sorted(resolved)
        cn = (ctypes.c_uint32 * len(nodes))(*nodes)
        cm = (ctypes.c_uint64 * len(nodes))(*(resolved[n] for n in nodes))
        return len(nodes), cn, cm

    _job_struct = staticmethod(job_struct)

    # ---- nodes and GPUs --------------------------------------------------

    def node_state(self, node: Name) -> NodeState:
        """The :class:`NodeState` of a node: free, reserved and allocated GPU
        masks and its health."""
        n = self._topo.node(node)
        f, r, a = ctypes.c_uint64(), ctypes.c_uint64(), ctypes.c_uint64()
        h = ctypes.c_uint32()
        self._check(lib.cluster_node_state(self._h, n, ctypes.byref(f), ctypes.byref(r),
                                           ctypes.byref(a), ctypes.byref(h)),
                    "gpusched_cluster_node_state")
        return NodeState(f.value, r.value, a.value, NodeHealth(h.value))

    def nodes_state(self, first: int = 0, count: Optional[int] = None) -> NodesState:
        """The state of nodes `first` to `first + count - 1` (count None: to
        the last node) in one call, as a :class:`NodesState` of
        ``array.array`` columns (health as plain integers)."""
        first, count = u.node_range(first, count, self._topo.node_count)
        f, fp = u.out_column("Q", ctypes.c_uint64, count)
        r, rp = u.out_column("Q", ctypes.c_uint64, count)
        a, ap = u.out_column("Q", ctypes.c_uint64, count)
        h, hp = u.out_column("I", ctypes.c_uint32, count)
        if count:
            self._check(lib.cluster_nodes_state(self._h, first, count, fp, rp, ap, hp),
                        "gpusched_cluster_nodes_state")
        return NodesState(f, r, a, h)

    def node_health(self, node: Name) -> NodeHealth:
        """The :class:`NodeHealth` of a node."""
        return self.node_state(node).health

    def gpu_state(self, node: Name, gpu: int) -> Tuple[GpuState, int]:
        """``(GpuState, job id)`` of one GPU; the job id is 0 when it is
        free, and when it is SHARED (fractions held by pods: see
        :meth:`gpu_milli_free`)."""
        n = self._topo.node(node)
        g = u.u32("gpu", gpu, self._topo.node_gpus(n) - 1)
        s, j = ctypes.c_uint32(), ctypes.c_uint64()
        self._check(lib.cluster_gpu_state(self._h, n, g, ctypes.byref(s), ctypes.byref(j)),
                    "gpusched_cluster_gpu_state")
        return GpuState(s.value), j.value

    def gpu_milli_free(self, node: Name, gpu: int) -> int:
        """The free milli-GPU of one GPU (node by name or index): 1000 for a
        free GPU, 0 for one held whole or reserved, 1000 less the fractions
        held (``gpu_milli`` pods) for a SHARED one."""
        n = self._topo.node(node)
        g = u.u32("gpu", gpu, self._topo.node_gpus(n) - 1)
        out = ctypes.c_uint32()
        self._check(lib.cluster_gpu_milli_free(self._h, n, g, ctypes.byref(out)),
                    "gpusched_cluster_gpu_milli_free")
        return out.value

    def node_resource_free(self, node: Name, resource: Name) -> int:
        """A node's free amount of a resource the topology declares (node
        and resource by name or index): its capacity
        (:meth:`Topology.node_resource`) less what the pods placed there
        hold. Raises NotFound for an unknown name."""
        n = self._topo.node(node)
        r = self._topo.resource(resource)
        out = ctypes.c_uint32()
        self._check(lib.cluster_node_resource_free(self._h, n, r, ctypes.byref(out)),
                    "gpusched_cluster_node_resource_free")
        return out.value

    def node_jobs(self, node: Name) -> List[int]:
        """The ids of the jobs holding GPUs (or, for pods, resources or GPU
        fractions) on a node, by their lowest GPU."""
        n = self._topo.node(node)
        # Usually a job holds at least one GPU of its own; pods without GPUs
        # or with fractions can be more: the call says how many.
        cap = self._topo.node_gpus(n)
        while True:
            ids, count = (ctypes.c_uint64 * cap)(), ctypes.c_uint32()
            rc = lib.cluster_node_jobs(self._h, n, ids, cap, ctypes.byref(count))
            if rc == OutOfRange.code and count.value > cap:
                cap = count.value
                continue
            self._check(rc, "gpusched_cluster_node_jobs")
            return list(ids[:count.value])

    def set_node_health(self, node: Name, health: Union[NodeHealth, int, str]) -> List[int]:
        """Changes a node's health (a :class:`NodeHealth` or its name, such as
        ``"down"``) and returns the ids of the jobs holding GPUs there. They
        stay allocated: the caller decides what to do with them."""
        n = self._topo.node(node)
        if isinstance(health, str):
            try:
                health = NodeHealth[health.upper()]
            except KeyError:
                raise ValueError(f"unknown node health {health!r}") from None
        h = NodeHealth(u.u32("health", health, len(NodeHealth) - 1))
        cap = self._topo.node_gpus(n)
        while True:
            # Too small a buffer (pods sharing the node) changes nothing and
            # says how many ids are needed.
            hit, nhit = (ctypes.c_uint64 * cap)(), ctypes.c_uint32()
            rc = lib.cluster_node_health_set(self._h, n, h, hit, cap, ctypes.byref(nhit))
            if rc == OutOfRange.code and nhit.value > cap:
                cap = nhit.value
                continue
            self._check(rc, "gpusched_cluster_node_health_set")
            return list(hit[:nhit.value])

    # ---- aggregates ------------------------------------------------------

    def free_gpus(self, level: Optional[Name] = None, domain: Optional[Name] = None) -> int:
        """Free GPUs usable for new work (free GPUs of up nodes) in a domain,
        or in the whole cluster when no level is given. O(1)."""
        lv, d = self._level_domain(level, domain)
        out = ctypes.c_uint64()
        self._check(lib.cluster_domain_free_gpus(self._h, lv, d, ctypes.byref(out)),
                    "gpusched_cluster_domain_free_gpus")
        return out.value

    def free_nodes(self, level: Optional[Name] = None, domain: Optional[Name] = None) -> int:
        """Fully free nodes (up, every GPU free) in a domain or the cluster."""
        lv, d = self._level_domain(level, domain)
        out = ctypes.c_uint32()
        self._check(lib.cluster_domain_free_nodes(self._h, lv, d, ctypes.byref(out)),
                    "gpusched_cluster_domain_free_nodes")
        return out.value

    def nodes_with_free(self, gpus: int, level: Optional[Name] = None,
                        domain: Optional[Name] = None) -> int:
        """Nodes with at least `gpus` free GPUs usable for new work, in a
        domain or the cluster."""
        lv, d = self._level_domain(level, domain)
        out = ctypes.c_uint32()
        self._check(lib.cluster_domain_nodes_with_free(self._h, lv, d, u.u32("gpus", gpus, 64),
                                                       ctypes.byref(out)),
                    "gpusched_cluster_domain_nodes_with_free")
        return out.value

    def histogram(self, level: Optional[Name] = None, domain: Optional[Name] = None) -> List[int]:
        """List ``h`` where ``h[k]`` is the number of nodes with exactly k
        free GPUs usable for new work (nodes that are not up count in h[0])."""
        lv, d = self._level_domain(level, domain)
        cap = 65
        hist, n = (ctypes.c_uint32 * cap)(), ctypes.c_uint32()
        self._check(lib.cluster_domain_histogram(self._h, lv, d, hist, cap, ctypes.byref(n)),
                    "gpusched_cluster_domain_histogram")
        return list(hist[:n.value])

    def frag(self, level: Name) -> Frag:
        """Fragmentation metrics of a level (name or index; ``"node"`` for
        the level of nodes) as a :class:`Frag`: fully free domains, free
        GPUs stranded outside them, and GPUs in them."""
        lv = self._topo.level_or_nodes(level)
        fd, st, gg = ctypes.c_uint32(), ctypes.c_uint64(), ctypes.c_uint64()
        self._check(lib.cluster_frag(self._h, lv, ctypes.byref(fd), ctypes.byref(st),
                                     ctypes.byref(gg)), "gpusched_cluster_frag")
        return Frag(fd.value, st.value, gg.value)

    def frag_shared(self) -> Tuple[int, int]:
        """Fragmentation by GPU fractions: ``(shared_gpus, free_milli)``,
        the GPUs that pods share and the milli-GPU left free on them, which
        only fractions can use."""
        n, m = ctypes.c_uint64(), ctypes.c_uint64()
        self._check(lib.cluster_frag_shared(self._h, ctypes.byref(n), ctypes.byref(m)),
                    "gpusched_cluster_frag_shared")
        return n.value, m.value

    def utilization(self) -> float:
        """Fraction of all GPUs that are allocated or reserved (computed from
        the aggregates: GPUs on nodes that are not up count as used)."""
        total = self._topo.gpu_count
        return (total - self.free_gpus()) / total if total else 0.0

    # ---- jobs ------------------------------------------------------------

    def allocate(self, job_id: int, gpus: GpuSet, *, priority: int = 0, tenant: int = 0,
                 start_time: int = 0, cost_hint: int = 0, preemptible: bool = False,
                 movable: bool = False, protected_until: int = 0) -> None:
        """Allocates GPUs to a new job, all or nothing. Every GPU must be
        free (or reserved for this job id) and every node up.
        ``preemptible=True`` lets :meth:`preempt` evict it, ``movable=True``
        lets :meth:`defrag` move it; neither does while the request's
        ``now`` is before ``protected_until`` (a time on the caller's
        clock, for example ``start_time`` plus a minimum runtime; 0: never
        protected).

        Raises AlreadyExists, Busy, WrongState (node not up) and others;
        nothing changes then."""
        j = self._job_struct(job_id, priority, tenant, start_time, cost_hint, preemptible,
                             movable, protected_until)
        n, nodes, masks = self._gpu_set("gpus", gpus)
        self._check(lib.cluster_allocate(self._h, ctypes.byref(j), n, nodes, masks),
                    "gpusched_cluster_allocate")

    def release(self, job_id: int) -> None:
        """Releases a running job; its GPUs become free. Raises NotFound."""
        self._check(lib.cluster_release(self._h, u.u64("job_id", job_id)),
                    "gpusched_cluster_release")

    def job(self, job_id: int) -> Job:
        """The :class:`Job` descriptor of a running job. Raises NotFound."""
        j = _CJob()
        j.size = ctypes.sizeof(_CJob)
        self._check(lib.cluster_job_find(self._h, u.u64("job_id", job_id), ctypes.byref(j)),
                    "gpusched_cluster_job_find")
        return Job(j.id, j.priority, j.tenant, j.start_time, j.cost_hint,
                   bool(j.flags & JOB_FLAG_PREEMPTIBLE), bool(j.flags & JOB_FLAG_MOVABLE),
                   j.protected_until)

    def __contains__(self, job_id: object) -> bool:
        """True if a job with this id is running."""
        rc = lib.cluster_job_find(self._h, u.u64("job_id", job_id), None)
        if rc == NotFound.code:
            return False
        self._check(rc, "gpusched_cluster_job_find")
        return True

    def update_job(self, job_id: int, *, priority: Optional[int] = None,
                   tenant: Optional[int] = None, start_time: Optional[int] = None,
                   cost_hint: Optional[int] = None, preemptible: Optional[bool] = None,
                   movable: Optional[bool] = None, protected_until: Optional[int] = None) -> None:
        """Changes fields of a running job's descriptor; a field left out (or
        None) keeps its value. Its GPUs are not changed. Raises NotFound."""
        cur = self.job(job_id)
        j = self._job_struct(
            cur.id, cur.priority if priority is None else priority,
            cur.tenant if tenant is None else tenant,
            cur.start_time if start_time is None else start_time,
            cur.cost_hint if cost_hint is None else cost_hint,
            cur.preemptible if preemptible is None else preemptible,
            cur.movable if movable is None else movable,
            cur.protected_until if protected_until is None else protected_until)
        self._check(lib.cluster_job_update(self._h, ctypes.byref(j)),
                    "gpusched_cluster_job_update")

    @property
    def job_count(self) -> int:
        """Number of running jobs."""
        return lib.cluster_job_count(self._h)

    def _ids(self, count_fn: Any, at_fn: Any) -> List[int]:
        out, ids = ctypes.c_uint64(), []
        for i in range(count_fn(self._h)):
            self._check(at_fn(self._h, i, ctypes.byref(out)), at_fn.__name__)
            ids.append(out.value)
        return ids

    def jobs(self) -> List[int]:
        """The ids of the running jobs (deterministic order)."""
        return self._ids(lib.cluster_job_count, lib.cluster_job_at)

    def allocation(self, job_id: int) -> Allocation:
        """The :class:`Allocation` of a running job. Raises NotFound."""
        return _read_alloc(lib.cluster_job_allocation, self._h, u.u64("job_id", job_id), self._topo)

    # ---- reservations ----------------------------------------------------

    def reserve(self, job_id: int, gpus: GpuSet) -> None:
        """Reserves free GPUs for a job that is not running yet (added to its
        reservation if it has one); :meth:`allocate` with the same id
        consumes it."""
        n, nodes, masks = self._gpu_set("gpus", gpus)
        self._check(lib.cluster_reserve(self._h, u.u64("job_id", job_id), n, nodes, masks),
                    "gpusched_cluster_reserve")

    def release_to_reservation(self, job_id: int, for_job_id: int) -> None:
        """Releases running job `job_id` and keeps all its GPUs reserved for
        job `for_job_id`, atomically (the preemption step "evict a victim,
        hold its GPUs for the preemptor"): none of them becomes free in
        between. The GPUs join `for_job_id`'s reservation (created if
        needed). Raises NotFound if `job_id` is not running."""
        self._check(lib.cluster_release_to_resv(self._h, u.u64("job_id", job_id),
                                                u.u64("for_job_id", for_job_id)),
                    "gpusched_cluster_release_to_resv")

    def unreserve(self, job_id: int) -> None:
        """Drops a reservation; its GPUs become free. Raises NotFound."""
        self._check(lib.cluster_unreserve(self._h, u.u64("job_id", job_id)),
                    "gpusched_cluster_unreserve")

    def reservations(self) -> List[int]:
        """The job ids that hold reservations."""
        return self._ids(lib.cluster_resv_count, lib.cluster_resv_at)

    def reservation(self, job_id: int) -> Allocation:
        """The :class:`Allocation` a reservation holds. Raises NotFound."""
        return _read_alloc(lib.cluster_resv_allocation, self._h, u.u64("job_id", job_id), self._topo)

    # ---- checking and snapshots -----------------------------------------

    def check(self) -> None:
        """Runs the invariant checker; raises CorruptData naming the first
        inconsistency."""
        self._check(lib.cluster_check(self._h), "gpusched_cluster_check")

    def snapshot(self) -> bytes:
        """A versioned, checksummed binary image of topology and state, as
        bytes; :meth:`restore` turns it back into a cluster."""
        need = ctypes.c_size_t()
        rc = lib.cluster_snapshot(self._h, None, 0, ctypes.byref(need))
        if rc < 0 and rc != OutOfRange.code:
            self._check(rc, "gpusched_cluster_snapshot")
        buf = ctypes.create_string_buffer(need.value)
        self._check(lib.cluster_snapshot(self._h, buf, need.value, ctypes.byref(need)),
                    "gpusched_cluster_snapshot")
        return buf.raw[:need.value]

    # ---- journal ---------------------------------------------------------

    def journal_start(self) -> None:
        """Starts journaling into the cluster's own buffer: every change
        from now on appends one record (read with :meth:`journal`)."""
        self._check(lib.cluster_journal_start(self._h, None, None), "gpusched_cluster_journal_start")

    def journal_stop(self) -> None:
        """Stops journaling; the records stay readable."""
        self._check(lib.cluster_journal_stop(self._h), "gpusched_cluster_journal_stop")

    def journal(self) -> bytes:
        """The journal's records so far, as bytes."""
        p, n = ctypes.c_void_p(), ctypes.c_size_t()
        self._check(lib.cluster_journal_view(self._h, ctypes.byref(p), ctypes.byref(n)),
                    "gpusched_cluster_journal_view")
        return ctypes.string_at(p.value or 0, n.value) if n.value else b""

    def journal_clear(self) -> None:
        """Empties the journal buffer (sequence numbers go on)."""
        self._check(lib.cluster_journal_clear(self._h), "gpusched_cluster_journal_clear")

    def apply_journal(self, records: Any) -> int:
        """Applies journal records written by another cluster (a hot
        standby following its primary), each atomically; returns how many
        were applied. Raises CorruptData at the first bad record, after
        applying the ones before it."""
        data = bytes(memoryview(records))
        n = ctypes.c_uint32()
        rc = lib.cluster_journal_apply(self._h, data, len(data), ctypes.byref(n))
        self._check(rc, "gpusched_cluster_journal_apply")
        return n.value

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Writes :meth:`snapshot` to a file. Raises IOFailure if it cannot
        (as :meth:`FairQueue.save_log` does)."""
        data = self.snapshot()
        try:
            with open(os.fspath(path), "wb") as f:
                f.write(data)
        except OSError as e:
            lib.raise_error(IOFailure.code, f"cannot write {os.fsdecode(os.fspath(path))}: {e.strerror}",
                            "Cluster.save")

    # ---- placement -------------------------------------------------------

    def place(self, gpus: Optional[int] = None, *, pod_gpus: Optional[int] = None,
              whole_nodes: bool = False, required: Optional[Name] = None,
              preferred: Optional[Name] = None,
              slices: Union[Tuple[int, Name], Iterable[Tuple[int, Name]], None] = (),
              gpu_class: Optional[Name] = None, labels: Union[str, Iterable[Name], None] = (),
              avoid_labels: Union[str, Iterable[Name], None] = (),
              avoid_nodes: Union[Name, Iterable[Name], None] = (), job_id: int = 0,
              commit: bool = False, priority: int = 0, tenant: int = 0, start_time: int = 0,
              cost_hint: int = 0, preemptible: bool = False, movable: bool = False,
              protected_until: int = 0, pods: Optional[int] = None, gpu_milli: int = 0,
              cpu: Optional[int] = None, memory: Optional[int] = None,
              resources: Optional[Mapping[str, int]] = None,
              gpu_classes: Iterable[Name] = (),
              place_policy: Union[PlacePolicy, int, str] = PlacePolicy.DEFAULT) -> Placement:
        """Places an all-or-nothing gang of `gpus` GPUs, or of `pods` pods
        with resources, and returns a :class:`~gpusched.Placement`; with
        ``commit=True`` it also becomes a running job. A gang that does not
        fit is not an exception: the placement's ``ok`` is False and
        ``message`` says why (call ``raise_if_failed()`` for DoesNotFit).

        Keyword arguments (levels, classes, labels, nodes by name or index):
            pod_gpus: split into pods of this many GPUs, each on one node.
            whole_nodes: take whole, fully free nodes only (``pod_gpus``
                then picks nodes with that many GPUs).
            required: the whole gang inside one domain of this level.
            preferred: optimize locality down to this level only.
            slices: up to two ``(gpus, level)`` pairs: each slice of that
                many GPUs inside one domain of the level, e.g.
                ``[(72, "rack")]``.
            gpu_class: only GPUs of this class.
            labels: labels every node used must have.
            avoid_labels: labels no node used may have.
            avoid_nodes: nodes not to use.
            job_id: the job (its id when committed; its reservation may be
                used). Default 0.
            commit: make the placement a running job (default: plan only).
            priority, tenant, start_time, cost_hint, preemptible, movable,
            protected_until: the job's descriptor when committed (see
                :meth:`allocate`).

        Pods with resources and GPU fractions (place.h, "Pods with
        resources"): when any of ``pods``, ``gpu_milli`` (not 0), ``cpu``,
        ``memory``, ``resources`` or ``gpu_classes`` is given, the gang is
        `pods` identical pods (split pods), each asking for its resources
        and either ``pod_gpus`` whole GPUs (0 or None: none) or
        ``gpu_milli`` of one GPU; `gpus` may then be left out (given, it
        must equal pods x GPUs per pod, a fraction counting as one). A node
        holds as many pods as every one of its free amounts allows, and one
        gang never puts two of its fractions on one GPU. With
        ``whole_nodes=True`` each pod has a node of ``pod_gpus`` GPUs (None:
        the largest size) to itself, where nothing runs. Two slice
        constraints must nest (the deeper one divides the other).
        :meth:`place_many`, :meth:`preempt` and :meth:`move` take such pods;
        :meth:`defrag` and reservations do not yet (the library raises
        InvalidArgument); snapshots and journals keep them.
            pods: the number of pods (at least 1; None: `gpus` divided by
                the GPUs per pod).
            gpu_milli: 1 to 999: each pod holds this much of one GPU
                (milli-GPU), sharing it with other pods; 0 (the default)
                or 1000: whole GPUs.
            cpu, memory: per pod, shorthands for the topology resources
                named ``"cpu"`` and ``"memory"`` (in the topology's unit,
                by convention milli-cores and MiB).
            resources: per pod, ``{resource name: amount}`` for any
                resource the topology declares (names or indices).
            gpu_classes: GPU classes the pods may use, any of them (one
                more if ``gpu_class`` is also given).
            place_policy: how pods choose nodes, a
                :class:`~gpusched.PlacePolicy` or its int or name
                (``"best_fit"``); DEFAULT is FRAG today (see
                :meth:`set_workload`).
        Amounts are integers >= 0 (TypeError, ValueError otherwise); a
        resource the topology does not declare raises NotFound naming it,
        one given twice (``cpu=`` and ``resources={"cpu": ...}``)
        ValueError, and an amount past 4294967295, a ``gpu_milli`` past
        1000 or a fraction with ``pod_gpus`` 2 InvalidArgument (from the
        library); nothing changes then.
        """
        from .placement import place_one
        return place_one(
            self, gpus, pod_gpus=pod_gpus, whole_nodes=whole_nodes, required=required,
            preferred=preferred, slices=slices, gpu_class=gpu_class, labels=labels,
            avoid_labels=avoid_labels, avoid_nodes=avoid_nodes, job_id=job_id, commit=commit,
            priority=priority, tenant=tenant, start_time=start_time, cost_hint=cost_hint,
            preemptible=preemptible, movable=movable, protected_until=protected_until,
            pods=pods, gpu_milli=gpu_milli, cpu=cpu, memory=memory, resources=resources,
            gpu_classes=gpu_classes, place_policy=place_policy)

    def place_many(self, requests: Iterable[Mapping[str, Any]]) -> List[Placement]:
        """Places gangs in order, in one call, each seeing the ones before
        it: a committed request's GPUs (and for pods its cpu, memory and
        GPU fractions) are taken, and so are a plan-only request's until
        the call returns (a batch of plans is a what-if of the whole
        sequence), unless its job is running, holds a reservation
        or appears twice in the batch (place.h). `requests` are dicts of
        :meth:`place` arguments (``gpus`` included). Every request is
        checked before anything is placed. Returns one
        :class:`~gpusched.Placement` per request."""
        from .placement import place_batch
        return place_batch(self, requests)

    def preempt(self, gpus: Optional[int] = None, *, pod_gpus: Optional[int] = None,
                whole_nodes: bool = False, required: Optional[Name] = None,
                preferred: Optional[Name] = None,
                slices: Union[Tuple[int, Name], Iterable[Tuple[int, Name]], None] = (),
                gpu_class: Optional[Name] = None, labels: Union[str, Iterable[Name], None] = (),
                avoid_labels: Union[str, Iterable[Name], None] = (),
                avoid_nodes: Union[Name, Iterable[Name], None] = (), job_id: int = 0,
                commit: bool = False, priority: int = 0, tenant: int = 0, start_time: int = 0,
                cost_hint: int = 0, preemptible: bool = False, movable: bool = False,
                protected_until: int = 0, pods: Optional[int] = None, gpu_milli: int = 0,
                cpu: Optional[int] = None, memory: Optional[int] = None,
                resources: Optional[Mapping[str, int]] = None,
                gpu_classes: Iterable[Name] = (),
                place_policy: Union[PlacePolicy, int, str] = PlacePolicy.DEFAULT,
                policy: Union[PreemptPolicy, int, str] = PreemptPolicy.PRIORITY_FIRST,
                now: int = 0) -> Tuple[Placement, PreemptPlan]:
        """Plans the preemption that lets a gang of `gpus` GPUs fit: which
        running jobs to evict, and where the gang then goes. Returns
        ``(placement, plan)``: the :class:`~gpusched.Placement` the gang
        gets once the victims are gone and a :class:`~gpusched.PreemptPlan`
        (victims, their total cost and GPUs, whether the plan is proven
        optimal and a lower bound of the cost, what protection kept out).
        With ``commit=True`` the plan is carried out at once: the victims
        are released and the gang becomes running job ``job_id``, all or
        nothing.

        Eligible victims are the running jobs allocated with
        ``preemptible=True`` whose priority is strictly lower than the
        request's ``priority`` and that are not protected (``now`` is not
        before their ``protected_until``); never the job ``job_id`` itself.
        A gang that fits as the cluster is gets a plan without victims. As
        for :meth:`place`, a gang that does not fit even with every
        eligible victim gone is not an exception: the placement's ``ok`` is
        False, its ``message`` says why, and the plan has no victims
        (``raise_if_failed()`` raises DoesNotFit); its ``protected_jobs``
        then tell whether protection is why.

        Takes the keyword arguments of :meth:`place`, pods with resources
        or GPU fractions included (their victims may free cpu or memory
        rather than GPUs; such plans are pruned to victims that cannot be
        spared but are not proven cheapest: ``exact`` is False), and:
            policy: how plans are ranked, a :class:`~gpusched.PreemptPolicy`
                (or its int or name). PRIORITY_FIRST, the default: never
                evict a job of priority p when the eligible jobs below p
                can make room, then the least total ``cost_hint``.
                COST_FIRST: the least total ``cost_hint`` whatever the
                priorities. Either way then the fewest GPUs evicted, the
                fewest victims.
            now: the caller's clock now, compared with each job's
                ``protected_until`` (same unit). Default 0.

        Raises AlreadyExists when committing a job id that is running, and
        the argument errors of :meth:`place` (ValueError for an unknown
        ``policy``, ValueError or TypeError for a ``now`` that is not a
        64-bit integer); nothing changes then."""
        from .preemption import preempt_one
        return preempt_one(
            self, gpus, pod_gpus=pod_gpus, whole_nodes=whole_nodes, required=required,
            preferred=preferred, slices=slices, gpu_class=gpu_class, labels=labels,
            avoid_labels=avoid_labels, avoid_nodes=avoid_nodes, job_id=job_id, commit=commit,
            priority=priority, tenant=tenant, start_time=start_time, cost_hint=cost_hint,
            preemptible=preemptible, movable=movable, protected_until=protected_until,
            pods=pods, gpu_milli=gpu_milli, cpu=cpu, memory=memory, resources=resources,
            gpu_classes=gpu_classes, place_policy=place_policy, policy=policy, now=now)

    def defrag(self, gpus: Optional[int] = None, *, pod_gpus: Optional[int] = None,
               whole_nodes: bool = False, required: Optional[Name] = None,
               preferred: Optional[Name] = None,
               slices: Union[Tuple[int, Name], Iterable[Tuple[int, Name]], None] = (),
               gpu_class: Optional[Name] = None, labels: Union[str, Iterable[Name], None] = (),
               avoid_labels: Union[str, Iterable[Name], None] = (),
               avoid_nodes: Union[Name, Iterable[Name], None] = (), job_id: int = 0,
               commit: bool = False, priority: int = 0, tenant: int = 0, start_time: int = 0,
               cost_hint: int = 0, preemptible: bool = False, movable: bool = False,
               protected_until: int = 0, pods: Optional[int] = None, gpu_milli: int = 0,
               cpu: Optional[int] = None, memory: Optional[int] = None,
               resources: Optional[Mapping[str, int]] = None,
               gpu_classes: Iterable[Name] = (),
               place_policy: Union[PlacePolicy, int, str] = PlacePolicy.DEFAULT,
               now: int = 0) -> Tuple[Placement, PreemptPlan]:
        """Plans the moves that let a gang of `gpus` GPUs fit without
        evicting anyone (defragmentation). Returns ``(placement, plan)`` as
        :meth:`preempt` does: the :class:`~gpusched.Placement` the gang gets
        once the moves are made, and a :class:`~gpusched.PreemptPlan` whose
        ``moves`` are :class:`~gpusched.Move` ``(job_id, nodes, masks)``
        (where each job goes), with no victims; ``cost`` and ``gpus`` total
        the movers' ``cost_hint`` and GPUs. With ``commit=True`` the moves
        are made and the gang becomes running job ``job_id``, all or
        nothing; the moved jobs keep their ids and descriptors.

        The jobs that may move are the running jobs allocated with
        ``movable=True`` whose priority is not above the request's
        ``priority`` and that are not protected (``now``, the caller's
        clock, default 0, is not before their ``protected_until``), never
        the job ``job_id`` itself; a move keeps the job's shape, as
        :meth:`move` does. A gang that fits as the cluster
        is gets a plan without moves. When no plan is found the placement's
        ``ok`` is False, its ``message`` says why the gang does not fit as
        the cluster is, and the plan is empty; nothing changes. Unlike
        :meth:`preempt` this is a heuristic that is not complete: a gang
        only a chain of moves would make room for may get no plan.

        Takes the keyword arguments of :meth:`place` and ``now``; raises
        as :meth:`preempt` does (InvalidArgument for pod fields too). The plan's ``exact``,
        ``cost_lower_bound`` and ``protected_*`` are those of an empty
        plan (False and 0): they describe preemptions only."""
        from .preemption import defrag_one
        return defrag_one(
            self, gpus, pod_gpus=pod_gpus, whole_nodes=whole_nodes, required=required,
            preferred=preferred, slices=slices, gpu_class=gpu_class, labels=labels,
            avoid_labels=avoid_labels, avoid_nodes=avoid_nodes, job_id=job_id, commit=commit,
            priority=priority, tenant=tenant, start_time=start_time, cost_hint=cost_hint,
            preemptible=preemptible, movable=movable, protected_until=protected_until,
            pods=pods, gpu_milli=gpu_milli, cpu=cpu, memory=memory, resources=resources,
            gpu_classes=gpu_classes, place_policy=place_policy, now=now)

    def move(self, job_id: int, *, commit: bool = False) -> Placement:
        """Plans moving running job `job_id` to the best GPUs for its shape
        now (the same split, locality and GPU class, or for a job of pods
        the same pods with their resources; its own GPUs count as free on
        nodes that are up), and with ``commit=True`` moves it: the
        job keeps its id and descriptor, only its GPUs change. This is how
        a job on a failed or drained node is repaired. Returns the
        :class:`~gpusched.Placement`; when the shape fits nowhere its
        ``ok`` is False and ``message`` says why. Raises NotFound when no
        job runs with this id."""
        from .preemption import move_one
        return move_one(self, job_id, commit)

    def set_workload(self, shapes: Iterable[Mapping[str, Any]], weights: Iterable[float]) -> None:
        """Sets the workload that :attr:`~gpusched.PlacePolicy.FRAG` (the
        default ``place_policy``) expects: the shapes of the pods that will
        come and their weights (for example counts in a trace). Each shape
        is a dict of :meth:`place` keyword arguments, the ones of a pod:
        ``pod_gpus``, ``gpu_milli``, ``cpu``, ``memory``, ``resources``,
        ``gpu_classes``, ``gpu_class`` (and ``pods`` or ``gpus``, which
        only have to be consistent: a shape without them is one pod), e.g.
        ``[dict(gpu_milli=500, cpu=4000), dict(pod_gpus=1, cpu=8000)]``. A
        shape without pod fields (``dict(pod_gpus=2)``) counts as pods of
        ``pod_gpus`` whole GPUs. Weights are numbers >= 0, one per shape.

        Without a workload (the default, and after ``set_workload([],
        [])``) the cluster's placer learns it: every request it places with
        that policy adds its shape, weighted by its pods.

        Raises TypeError for a shape that is not a dict or has another key
        (the message names the shape), ValueError when the lengths differ,
        the errors of :meth:`place` for a bad shape, InvalidArgument for a
        negative or non-finite weight and LimitExceeded past 1024 shapes;
        the workload is unchanged then."""
        from .placement import build_request
        shapes = list(shapes)
        weights = list(weights)
        if len(shapes) != len(weights):
            raise ValueError(f"{len(shapes)} shapes but {len(weights)} weights")
        reqs, keep = [], []
        for i, shape in enumerate(shapes):
            if not isinstance(shape, collections.abc.Mapping):
                raise TypeError(f"shapes[{i}] must be a dict of place() arguments, "
                                f"not {type(shape).__name__}")
            kw = dict(shape)
            for key in kw:
                if key not in _SHAPE_KEYWORDS:
                    raise TypeError(f"shapes[{i}]: {key!r} is not a keyword of a pod shape "
                                    f"(one of {', '.join(_SHAPE_KEYWORDS)})")
            if "gpus" not in kw and "pods" not in kw:
                pod_fields = (kw.get("gpu_milli") or any(kw.get(k) is not None for k in (
                    "cpu", "memory")) or kw.get("resources") or kw.get("gpu_classes"))
                if pod_fields:
                    kw["pods"] = 1
                else:
                    kw["gpus"] = kw.get("pod_gpus") or 1
            try:
                r, a = build_request(self._topo, **kw)
            except (TypeError, ValueError) as e:
                raise type(e)(f"shapes[{i}]: {e}") from None
            reqs.append(r)
            keep.append(a)
        ws = [u.real(f"weights[{i}]", w, finite=False) for i, w in enumerate(weights)]
        n = len(reqs)
        creqs = (ctypes.POINTER(_CRequest) * max(n, 1))(*(ctypes.pointer(r) for r in reqs))
        cw = (ctypes.c_double * max(n, 1))(*ws)
        placer = self._placer()
        lib.check(lib.placer_workload_set(placer, n, creqs if n else None, cw if n else None),
                  lib.placer_errmsg, placer, "gpusched_placer_workload_set")

    def _placer(self) -> int:
        placer = self._engine[0]
        if placer is None:
            out = ctypes.c_void_p()
            lib.check(lib.placer_new(self._h, None, ctypes.byref(out)),
                      function="gpusched_placer_new")
            placer = self._engine[0] = cast(int, out.value)
        return placer

    def _preempt_plan(self) -> int:
        plan = self._engine[1]
        if plan is None:
            from .preemption import new_plan
            plan = self._engine[1] = new_plan()
        return plan

    def __repr__(self) -> str:
        if self.closed:
            return "<gpusched.Cluster closed>"
        return (f"<gpusched.Cluster {self._topo.gpu_count - self.free_gpus()}/"
                f"{self._topo.gpu_count} GPUs used, {self.job_count} jobs>")
