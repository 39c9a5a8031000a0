"""Gang placement (place.h): requests built from keyword arguments, and
:class:`Placement`, which owns one library result."""
from __future__ import annotations

import array
import collections.abc
import ctypes
import enum
import inspect
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union, cast

from . import _util as u
from ._lib import lib, Job as _CJob, PlaceRequest as _CRequest
from .cluster import Allocation, job_struct
from ._errors import DoesNotFit
from .topology import NONE, Name, Topology

if TYPE_CHECKING:
    from .cluster import Cluster

__all__ = ["Placement", "PlaceReason", "Split", "PlacePolicy", "PLACE_FLAG_COMMIT", "MAX_SLICES"]

#: The request flag that commits a placement (GPUSCHED_PLACE_FLAG_COMMIT);
#: the binding takes it as ``commit=True``.
PLACE_FLAG_COMMIT = 1 << 0
#: Most slice constraints per request (GPUSCHED_MAX_SLICES).
MAX_SLICES = 2


class Split(enum.IntEnum):
    """How a gang's GPUs split over nodes."""
    ANY = 0
    PODS = 1
    WHOLE_NODES = 2


class PlacePolicy(enum.IntEnum):
    """How pods with resources or GPU fractions choose their nodes and GPUs
    (``GPUSCHED_POLICY_*``; :meth:`~gpusched.Cluster.place` takes it as
    ``place_policy``, also as its int or its name such as ``"best_fit"``).
    Whole-GPU gangs without pod fields ignore it.

    DEFAULT: the library's best, FRAG today.
    FIRST_FIT: the first node (lowest index) that holds the pods.
    BEST_FIT: the node left with the least free cpu, memory and GPU (shares
    of its capacity, summed).
    FRAG: fragmentation-aware: the node whose expected unusable GPU
    capacity, over the workload's pod shapes (:meth:`Cluster.set_workload`,
    or the shapes the cluster's placer has seen), grows least; near-ties go
    to the fullest node.
    """
    DEFAULT = 0
    FIRST_FIT = 1
    BEST_FIT = 2
    FRAG = 3


def place_policy_value(policy: Union[PlacePolicy, int, str]) -> PlacePolicy:
    """A :class:`PlacePolicy` from the enum, its int or its name (any
    case); TypeError or ValueError naming ``place_policy`` otherwise."""
    if isinstance(policy, str):
        try:
            return PlacePolicy[policy.upper()]
        except KeyError:
            raise ValueError(f"unknown place_policy {policy!r} (one of "
                             f"{', '.join(p.name.lower() for p in PlacePolicy)})") from None
    return PlacePolicy(u.u32("place_policy", policy, len(PlacePolicy) - 1))


class PlaceReason(enum.IntEnum):
    """Why a placement did not fit (OK when it did)."""
    OK = 0
    NO_GPUS = 1
    ELIGIBLE = 2
    SPLIT = 3
    SLICES = 4
    REQUIRED = 5
    NOT_RUN = 6


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return value


def _resources(topo: Topology, cpu: Optional[int], memory: Optional[int],
               resources: Optional[Mapping[str, int]]) -> Dict[int, int]:
    """{resource index: amount per pod} from cpu=, memory= and resources=."""
    given: Dict[int, Tuple[str, int]] = {}

    def add(what: str, name: Any, amount: Any) -> None:
        idx = topo.resource(name)
        value = u.u64(what, amount)
        if idx in given:
            raise ValueError(f"resource {topo.resources[idx]!r} is given twice "
                             f"({given[idx][0]} and {what})")
        given[idx] = (what, value)

    if cpu is not None:
        add("cpu", "cpu", cpu)
    if memory is not None:
        add("memory", "memory", memory)
    if resources is not None:
        if not isinstance(resources, collections.abc.Mapping):
            raise TypeError(f"resources must be a mapping of resource names to amounts, "
                            f"not {type(resources).__name__}")
        for name, amount in resources.items():
            if isinstance(name, bool) or not isinstance(name, (str, int)):
                raise TypeError(f"resources keys must be resource names, "
                                f"not {type(name).__name__}")
            add(f"resources[{name!r}]", name, amount)
    return {idx: value for idx, (_, value) in given.items()}


def build_request(topo: Topology, gpus: Optional[int] = None, *,
                  pod_gpus: Optional[int] = None,
                  whole_nodes: bool = False, required: Optional[Name] = None,
                  preferred: Optional[Name] = None,
                  slices: Union[Tuple[int, Name], Iterable[Tuple[int, Name]], None] = (),
                  gpu_class: Optional[Name] = None,
                  labels: Union[str, Iterable[Name], None] = (),
                  avoid_labels: Union[str, Iterable[Name], None] = (),
                  avoid_nodes: Union[Name, Iterable[Name], None] = (), job_id: int = 0,
                  commit: bool = False, priority: int = 0, tenant: int = 0,
                  start_time: int = 0, cost_hint: int = 0, preemptible: bool = False,
                  movable: bool = False,
                  protected_until: int = 0, pods: Optional[int] = None, gpu_milli: int = 0,
                  cpu: Optional[int] = None, memory: Optional[int] = None,
                  resources: Optional[Mapping[str, int]] = None,
                  gpu_classes: Iterable[Name] = (),
                  place_policy: Union[PlacePolicy, int, str] = PlacePolicy.DEFAULT,
                  ) -> Tuple[_CRequest, Tuple[Any, ...]]:
    """Checks the keyword arguments of place(), preempt() and defrag() (the
    same keyword-only parameters, tests/python/test_place.py compares them;
    preempt() adds ``policy`` and ``now``, defrag() ``now``, which the
    caller sets in the request) and fills a C request, which points to a C
    job descriptor built from the job keywords. Returns the request and the
    objects it points into (the job first, then the avoided nodes, the
    per-pod resources and the class list), which the caller keeps alive
    until the call that reads the request has returned.

    A request with a pod field (``pods``, a non-zero ``gpu_milli``,
    ``cpu``, ``memory``, ``resources`` or ``gpu_classes``) is one of pods
    with resources (place.h, "Pods with resources"): its split is pods,
    ``pod_gpus`` may be 0 (or None: no whole GPU) and ``gpus`` may be left
    out; the library checks how the fields combine."""
    r = _CRequest()
    r.size = ctypes.sizeof(_CRequest)
    whole = _flag("whole_nodes", whole_nodes)
    r.gpu_milli = u.u32("gpu_milli", gpu_milli)
    amounts = _resources(topo, cpu, memory, resources)
    if isinstance(gpu_classes, (str, int)):
        gpu_classes = [gpu_classes]
    classes = [topo.gpu_class(c) for c in gpu_classes]
    pod_fields = (pods is not None or r.gpu_milli != 0 or bool(amounts) or bool(classes))
    if pods is not None:
        r.pods = u.integer("pods", pods, 1, u.U32_MAX)
    if gpus is not None:
        r.gpus = u.integer("gpus", gpus, 1, u.U32_MAX)
    elif not pod_fields:
        raise TypeError("gpus is required (pods with resources may give pods instead)")
    elif pods is None:
        raise TypeError("a request with pod fields needs pods (or gpus)")
    if whole:
        r.split = Split.WHOLE_NODES
        r.pod_gpus = 0 if pod_gpus is None else u.u32("pod_gpus", pod_gpus, 64)
    elif pod_fields:
        r.split = Split.PODS
        r.pod_gpus = 0 if pod_gpus is None else u.u32("pod_gpus", pod_gpus, 64)
    elif pod_gpus is not None:
        r.split = Split.PODS
        r.pod_gpus = u.integer("pod_gpus", pod_gpus, 1, 64)
    else:
        r.split = Split.ANY
    res_arr = None
    if amounts:
        res_arr = (ctypes.c_uint64 * (max(amounts) + 1))()
        for idx, value in amounts.items():
            res_arr[idx] = value
        r.resources = ctypes.cast(res_arr, ctypes.POINTER(ctypes.c_uint64))
        r.resource_count = len(res_arr)
    cls_arr = None
    if classes:
        cls_arr = (ctypes.c_uint32 * len(classes))(*classes)
        r.gpu_classes = ctypes.cast(cls_arr, ctypes.POINTER(ctypes.c_uint32))
        r.gpu_class_count = len(classes)
    r.policy = place_policy_value(place_policy)
    r.required_level = NONE if required is None else topo.level(required)
    r.preferred_level = NONE if preferred is None else topo.level(preferred)
    pairs: List[Any] = list(slices or ())
    if isinstance(slices, tuple) and len(slices) == 2 and not isinstance(slices[0], (tuple, list)):
        pairs = [slices]  # a single (gpus, level) pair
    if len(pairs) > MAX_SLICES:
        raise ValueError(f"at most {MAX_SLICES} slice constraints, got {len(pairs)}")
    for i in range(MAX_SLICES):
        r.slice_level[i] = NONE
    for i, s in enumerate(pairs):
        try:
            sg, sl = s
        except (TypeError, ValueError):
            raise TypeError("slices must be (gpus, level) pairs") from None
        r.slice_gpus[i] = u.integer(f"slices[{i}] gpus", sg, 1, u.U32_MAX)
        r.slice_level[i] = topo.level(sl)
    r.gpu_class = NONE if gpu_class is None else topo.gpu_class(gpu_class)
    r.labels_required = topo.label_mask(labels or ())
    r.labels_forbidden = topo.label_mask(avoid_labels or ())
    if avoid_nodes is None:
        avoid_nodes = ()
    elif isinstance(avoid_nodes, (str, int)):
        avoid_nodes = [avoid_nodes]
    avoid = [topo.node(n) for n in avoid_nodes]
    arr = (ctypes.c_uint32 * max(len(avoid), 1))(*avoid)
    if avoid:
        r.avoid_nodes = ctypes.cast(arr, ctypes.POINTER(ctypes.c_uint32))
        r.avoid_count = len(avoid)
    job = job_struct(job_id, priority, tenant, start_time, cost_hint, preemptible, movable,
                     protected_until)
    r.job = ctypes.pointer(job)
    r.flags = PLACE_FLAG_COMMIT if _flag("commit", commit) else 0
    return r, (job, arr, res_arr, cls_arr)


_REQUEST_SIGNATURE = inspect.signature(build_request)


def new_result() -> int:
    out = ctypes.c_void_p()
    lib.check(lib.place_result_new(None, ctypes.byref(out)), function="gpusched_place_result_new")
    return cast(int, out.value)


class Placement(u.Handle):
    """Where a gang went, or why it did not fit.

    Each placement owns its own library result, so it stays valid whatever
    happens later; fields are read from it once, when first used (a
    placement of a 200k-GPU gang does not pay for pods or domains nobody
    reads). :meth:`close` (or a ``with`` block) reads what is left and frees
    the C result early; otherwise the garbage collector frees it.

    Attributes:
        ok: True when it fits (also the truth value of the placement).
        reason: a :class:`PlaceReason`.
        committed: True when it became a running job.
        job_id: the request's job id.
        function: the C function that placed it (named by DoesNotFit).
    """

    def __init__(self, topology: Topology, job_id: int, res: int,
                 function: str = "gpusched_placer_place") -> None:
        """Takes ownership of a C result (called by :meth:`Cluster.place`
        and :meth:`Cluster.preempt`)."""
        self._own(res, lib.place_result_free)
        self._topo = topology
        self._cache: Dict[Any, Any] = {}
        self.job_id: int = job_id
        self.function: str = function
        self.reason = PlaceReason(lib.place_result_reason(res))
        self.committed = bool(lib.place_result_committed(res))

    def _read(self, key: Any, fn: Any, *args: Any) -> Tuple[int, ...]:
        """Reads one array of the result (cached): a pointer and a count."""
        if key not in self._cache:
            ptr, n = ctypes.POINTER(ctypes.c_uint32)(), ctypes.c_uint32()
            lib.check(fn(self._h, *args, ctypes.byref(ptr), ctypes.byref(n)), function=fn.__name__)
            self._cache[key] = tuple(u.read_array(ptr, ctypes.c_uint32, n.value))
        return self._cache[key]

    def _read_nodes(self) -> Dict[Any, Any]:
        if "nodes" not in self._cache:
            nodes = ctypes.POINTER(ctypes.c_uint32)()
            masks, n = ctypes.POINTER(ctypes.c_uint64)(), ctypes.c_uint32()
            lib.check(lib.place_result_nodes(self._h, ctypes.byref(nodes), ctypes.byref(masks),
                                             ctypes.byref(n)), function="gpusched_place_result_nodes")
            self._cache["nodes"] = tuple(u.read_array(nodes, ctypes.c_uint32, n.value))
            self._cache["masks"] = tuple(u.read_array(masks, ctypes.c_uint64, n.value))
        return self._cache

    @property
    def nodes(self) -> Tuple[int, ...]:
        """Node indices used, ascending."""
        return self._read_nodes()["nodes"]

    @property
    def masks(self) -> Tuple[int, ...]:
        """GPU bit masks, one per node of :attr:`nodes` (bit i: GPU i)."""
        return self._read_nodes()["masks"]

    def arrays(self) -> Tuple[array.array, array.array]:
        """``(nodes, masks)`` as ``array.array`` of uint32 and uint64, copied
        in one step each: for big gangs (50,000 nodes) this is much faster
        than :attr:`nodes` and :attr:`masks`, and numpy takes them without a
        copy (``numpy.frombuffer``)."""
        nodes = ctypes.POINTER(ctypes.c_uint32)()
        masks, n = ctypes.POINTER(ctypes.c_uint64)(), ctypes.c_uint32()
        lib.check(lib.place_result_nodes(self._h, ctypes.byref(nodes), ctypes.byref(masks),
                                         ctypes.byref(n)), function="gpusched_place_result_nodes")
        return (u.copy_array(nodes, "I", ctypes.c_uint32, n.value),
                u.copy_array(masks, "Q", ctypes.c_uint64, n.value))

    @property
    def message(self) -> str:
        """The library's explanation: where it went, or which constraint
        failed and by how much."""
        if "message" not in self._cache:
            msg = lib.place_result_message(self._h) or b""
            self._cache["message"] = msg.decode("utf-8", "replace")
        return self._cache["message"]

    @property
    def pods(self) -> Tuple[int, ...]:
        """The node index of each pod (pod requests only)."""
        return self._read("pods", lib.place_result_pods)

    @property
    def locality(self) -> Tuple[int, ...]:
        """Domains used at each level, top first, then nodes (empty when it
        did not fit)."""
        return self._read("locality", lib.place_result_locality)

    def close(self) -> None:
        """Reads every field, then frees the C result."""
        if not self.closed:
            self.nodes, self.message, self.pods, self.locality
            if self.ok:
                for lv in range(self._topo._nlevels + 1):
                    self.domains(lv)
        super().close()

    @property
    def ok(self) -> bool:
        """True when the gang fits."""
        return self.reason == PlaceReason.OK

    def __bool__(self) -> bool:
        return self.ok

    @property
    def gpus(self) -> int:
        """Number of GPUs placed."""
        return sum(bin(m).count("1") for m in self.masks)

    @property
    def allocation(self) -> Allocation:
        """The GPUs as an :class:`Allocation` (``Cluster.allocate`` and
        ``Cluster.reserve`` accept it)."""
        return Allocation(self.nodes, self.masks, self._topo)

    def node_names(self) -> List[str]:
        """The names of the nodes used, in node order."""
        return [self._topo.node_name(n) for n in self.nodes]

    def by_name(self) -> Dict[str, List[int]]:
        """``{node name: [GPU indices]}``."""
        return self.allocation.by_name()

    def pods_by_name(self) -> List[str]:
        """The node name of each pod."""
        return [self._topo.node_name(n) for n in self.pods]

    def domains(self, level: Name) -> Tuple[int, ...]:
        """Domain indices used at a level (name or index; ``"node"`` for
        the nodes), ascending; empty when it did not fit."""
        lv = self._topo.level_or_nodes(level)
        if not self.ok:
            return ()
        return self._read(("domains", lv), lib.place_result_domains, lv)

    def domain_names(self, level: Name) -> List[str]:
        """Full path names of the domains used at a level."""
        lv = self._topo.level_or_nodes(level)
        if lv == len(self._topo.levels):
            return [self._topo.node_name(n) for n in self.domains(lv)]
        return [self._topo.domain_name(lv, d) for d in self.domains(lv)]

    def raise_if_failed(self) -> Placement:
        """Raises DoesNotFit with the explanation when the gang did not fit;
        returns self otherwise."""
        if not self.ok:
            raise DoesNotFit(DoesNotFit.code, "GPUSCHED_ENOSPC", self.message, self.function)
        return self

    def __repr__(self) -> str:
        if self.ok:
            return (f"<gpusched.Placement {self.gpus} GPUs on {len(self.nodes)} nodes"
                    f"{' committed' if self.committed else ''}>")
        return f"<gpusched.Placement failed {self.reason.name}: {self.message}>"


def place_one(cluster: Cluster, gpus: Optional[int], **options: Any) -> Placement:
    """Cluster.place(): one request through the cluster's placer."""
    req, keep = build_request(cluster.topology, gpus, **options)
    placer = cluster._placer()
    res = new_result()
    try:
        rc = lib.placer_place(placer, ctypes.byref(req), res)
        if rc != DoesNotFit.code:
            lib.check(rc, lib.placer_errmsg, placer, "gpusched_placer_place")
    except BaseException:
        lib.place_result_free(res)
        raise
    return Placement(cluster.topology, keep[0].id, res)


def place_batch(cluster: Cluster, requests: Iterable[Mapping[str, Any]]) -> List[Placement]:
    """Cluster.place_many(): all requests in one gpusched_placer_place_batch."""
    reqs, keep = [], []
    for i, kw in enumerate(requests):
        if not isinstance(kw, dict):
            raise TypeError(f"requests[{i}] must be a dict of place() arguments")
        if "gpus" not in kw and "pods" not in kw:
            raise TypeError(f"requests[{i}] has no gpus")
        try:
            # Python's own check of the names against place()'s keywords.
            _REQUEST_SIGNATURE.bind(cluster.topology, **kw)
        except TypeError as e:
            raise TypeError(f"requests[{i}]: {e}") from None
        r, a = build_request(cluster.topology, **kw)
        reqs.append(r)
        keep.append(a)
    n = len(reqs)
    if n == 0:
        return []
    placer = cluster._placer()
    results = []
    try:
        for _ in range(n):
            results.append(new_result())
        creqs = (ctypes.POINTER(_CRequest) * n)(*(ctypes.pointer(r) for r in reqs))
        cres = (ctypes.c_void_p * n)(*results)
        lib.check(lib.placer_place_batch(placer, n, creqs, cres, None), lib.placer_errmsg,
                  placer, "gpusched_placer_place_batch")
    except BaseException:
        for res in results:
            lib.place_result_free(res)
        raise
    return [Placement(cluster.topology, k[0].id, res) for k, res in zip(keep, results)]
