"""Gang placement (place.h): requests built from keyword arguments, and
:class:`Placement`, which owns one library result."""
import ctypes
import enum

from . import _util as u
from ._lib import lib, PlaceRequest as _CRequest
from .cluster import Allocation, job_struct
from ._errors import DoesNotFit
from .topology import NONE

__all__ = ["Placement", "PlaceReason", "Split"]

_COMMIT = 1
_ENOSPC = -30
MAX_SLICES = 2


class Split(enum.IntEnum):
    """How a gang's GPUs split over nodes."""
    ANY = 0
    PODS = 1
    WHOLE_NODES = 2


class PlaceReason(enum.IntEnum):
    """Why a placement did not fit (OK when it did)."""
    OK = 0
    NO_GPUS = 1
    ELIGIBLE = 2
    SPLIT = 3
    SLICES = 4
    REQUIRED = 5
    NOT_RUN = 6


_KEYS = {"pod_gpus", "whole_nodes", "required", "preferred", "slices", "gpu_class", "labels",
         "avoid_labels", "avoid_nodes", "job_id", "commit", "priority", "tenant", "start_time",
         "cost_hint", "preemptible", "movable"}


def _flag(name, value):
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return value


def build_request(topo, gpus, kw, caller="place"):
    """Checks place() (or preempt()) arguments and fills a C request, which
    points to a C job descriptor built from the job keywords. Returns the
    request and the objects it points into (the job and the avoided nodes),
    which the caller keeps alive until the call that reads the request has
    returned."""
    unknown = set(kw) - _KEYS
    if unknown:
        raise TypeError(f"{caller}() got unknown arguments {sorted(unknown)}")
    r = _CRequest()
    r.size = ctypes.sizeof(_CRequest)
    r.gpus = u.integer("gpus", gpus, 1, u.U32_MAX)
    whole = _flag("whole_nodes", kw.get("whole_nodes", False))
    pod = kw.get("pod_gpus")
    if whole:
        r.split = Split.WHOLE_NODES
        r.pod_gpus = 0 if pod is None else u.u32("pod_gpus", pod, 64)
    elif pod is not None:
        r.split = Split.PODS
        r.pod_gpus = u.integer("pod_gpus", pod, 1, 64)
    else:
        r.split = Split.ANY
    r.required_level = NONE if kw.get("required") is None else topo.level(kw["required"])
    r.preferred_level = NONE if kw.get("preferred") is None else topo.level(kw["preferred"])
    slices = kw.get("slices") or ()
    if isinstance(slices, tuple) and len(slices) == 2 and not isinstance(slices[0], (tuple, list)):
        slices = [slices]  # a single (gpus, level) pair
    slices = list(slices)
    if len(slices) > MAX_SLICES:
        raise ValueError(f"at most {MAX_SLICES} slice constraints, got {len(slices)}")
    for i in range(MAX_SLICES):
        r.slice_level[i] = NONE
    for i, s in enumerate(slices):
        try:
            sg, sl = s
        except (TypeError, ValueError):
            raise TypeError("slices must be (gpus, level) pairs") from None
        r.slice_gpus[i] = u.integer(f"slices[{i}] gpus", sg, 1, u.U32_MAX)
        r.slice_level[i] = topo.level(sl)
    r.gpu_class = NONE if kw.get("gpu_class") is None else topo.gpu_class(kw["gpu_class"])
    r.labels_required = topo.label_mask(kw.get("labels") or ())
    r.labels_forbidden = topo.label_mask(kw.get("avoid_labels") or ())
    avoid = kw.get("avoid_nodes") or ()
    if isinstance(avoid, (str, int)):
        avoid = [avoid]
    avoid = [topo.node(n) for n in avoid]
    arr = (ctypes.c_uint32 * max(len(avoid), 1))(*avoid)
    if avoid:
        r.avoid_nodes = ctypes.cast(arr, ctypes.POINTER(ctypes.c_uint32))
        r.avoid_count = len(avoid)
    job = job_struct(kw.get("job_id", 0), kw.get("priority", 0), kw.get("tenant", 0),
                     kw.get("start_time", 0), kw.get("cost_hint", 0),
                     kw.get("preemptible", False), kw.get("movable", False))
    r.job = ctypes.pointer(job)
    r.flags = _COMMIT if _flag("commit", kw.get("commit", False)) else 0
    return r, (job, arr)


def new_result():
    out = ctypes.c_void_p()
    lib.check(lib.place_result_new(None, ctypes.byref(out)), function="gpusched_place_result_new")
    return out.value


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

    def __init__(self, topology, job_id, res, function="gpusched_placer_place"):
        """Takes ownership of a C result (called by :meth:`Cluster.place`
        and :meth:`Cluster.preempt`)."""
        self._own(res, lib.place_result_free)
        self._topo = topology
        self._cache = {}
        self.job_id = job_id
        self.function = function
        self.reason = PlaceReason(lib.place_result_reason(res))
        self.committed = bool(lib.place_result_committed(res))

    def _read(self, key, fn, *args):
        """Reads one array of the result (cached): a pointer and a count."""
        if key not in self._cache:
            ptr, n = ctypes.POINTER(ctypes.c_uint32)(), ctypes.c_uint32()
            lib.check(fn(self._h, *args, ctypes.byref(ptr), ctypes.byref(n)), function=fn.__name__)
            self._cache[key] = tuple(u.read_array(ptr, ctypes.c_uint32, n.value))
        return self._cache[key]

    def _read_nodes(self):
        if "nodes" not in self._cache:
            nodes = ctypes.POINTER(ctypes.c_uint32)()
            masks, n = ctypes.POINTER(ctypes.c_uint64)(), ctypes.c_uint32()
            lib.check(lib.place_result_nodes(self._h, ctypes.byref(nodes), ctypes.byref(masks),
                                             ctypes.byref(n)), function="gpusched_place_result_nodes")
            self._cache["nodes"] = tuple(u.read_array(nodes, ctypes.c_uint32, n.value))
            self._cache["masks"] = tuple(u.read_array(masks, ctypes.c_uint64, n.value))
        return self._cache

    @property
    def nodes(self):
        """Node indices used, ascending."""
        return self._read_nodes()["nodes"]

    @property
    def masks(self):
        """GPU bit masks, one per node of :attr:`nodes` (bit i: GPU i)."""
        return self._read_nodes()["masks"]

    def arrays(self):
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
    def message(self):
        """The library's explanation: where it went, or which constraint
        failed and by how much."""
        if "message" not in self._cache:
            msg = lib.place_result_message(self._h) or b""
            self._cache["message"] = msg.decode("utf-8", "replace")
        return self._cache["message"]

    @property
    def pods(self):
        """The node index of each pod (pod requests only)."""
        return self._read("pods", lib.place_result_pods)

    @property
    def locality(self):
        """Domains used at each level, top first, then nodes (empty when it
        did not fit)."""
        return self._read("locality", lib.place_result_locality)

    def close(self):
        """Reads every field, then frees the C result."""
        if not self.closed:
            self.nodes, self.message, self.pods, self.locality
            if self.ok:
                for lv in range(self._topo._nlevels + 1):
                    self.domains(lv)
        super().close()

    @property
    def ok(self):
        """True when the gang fits."""
        return self.reason == PlaceReason.OK

    def __bool__(self):
        return self.ok

    @property
    def gpus(self):
        """Number of GPUs placed."""
        return sum(bin(m).count("1") for m in self.masks)

    @property
    def allocation(self):
        """The GPUs as an :class:`Allocation` (``Cluster.allocate`` and
        ``Cluster.reserve`` accept it)."""
        return Allocation(self.nodes, self.masks, self._topo)

    def node_names(self):
        """The names of the nodes used, in node order."""
        return [self._topo.node_name(n) for n in self.nodes]

    def by_name(self):
        """``{node name: [GPU indices]}``."""
        return self.allocation.by_name()

    def pods_by_name(self):
        """The node name of each pod."""
        return [self._topo.node_name(n) for n in self.pods]

    def domains(self, level):
        """Domain indices used at a level (name or index; ``"node"`` for
        the nodes), ascending; empty when it did not fit."""
        lv = self._topo.level_or_nodes(level)
        if not self.ok:
            return ()
        return self._read(("domains", lv), lib.place_result_domains, lv)

    def domain_names(self, level):
        """Full path names of the domains used at a level."""
        lv = self._topo.level_or_nodes(level)
        if lv == len(self._topo.levels):
            return [self._topo.node_name(n) for n in self.domains(lv)]
        return [self._topo.domain_name(lv, d) for d in self.domains(lv)]

    def raise_if_failed(self):
        """Raises DoesNotFit with the explanation when the gang did not fit;
        returns self otherwise."""
        if not self.ok:
            raise DoesNotFit(_ENOSPC, "GPUSCHED_ENOSPC", self.message, self.function)
        return self

    def __repr__(self):
        if self.ok:
            return (f"<gpusched.Placement {self.gpus} GPUs on {len(self.nodes)} nodes"
                    f"{' committed' if self.committed else ''}>")
        return f"<gpusched.Placement failed {self.reason.name}: {self.message}>"


def place_one(cluster, gpus, kw):
    """Cluster.place(): one request through the cluster's placer."""
    req, keep = build_request(cluster.topology, gpus, kw)
    placer = cluster._placer()
    res = new_result()
    try:
        rc = lib.placer_place(placer, ctypes.byref(req), res)
        if rc != _ENOSPC:
            lib.check(rc, lib.placer_errmsg, placer, "gpusched_placer_place")
    except BaseException:
        lib.place_result_free(res)
        raise
    return Placement(cluster.topology, keep[0].id, res)


def place_batch(cluster, requests):
    """Cluster.place_many(): all requests in one gpusched_placer_place_batch."""
    reqs, keep = [], []
    for i, kw in enumerate(requests):
        if not isinstance(kw, dict):
            raise TypeError(f"requests[{i}] must be a dict of place() arguments")
        kw = dict(kw)
        if "gpus" not in kw:
            raise TypeError(f"requests[{i}] has no gpus")
        r, a = build_request(cluster.topology, kw.pop("gpus"), kw)
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
