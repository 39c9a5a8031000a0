"""Topology: the immutable physical shape of a cluster (topo.h)."""
from __future__ import annotations

import array
import ctypes
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple, Union

from . import _util as u
from ._errors import OutOfRange
from ._lib import lib

__all__ = ["Topology", "TopologyBuilder", "NodesInfo", "MAX_LEVELS", "MAX_NODE_GPUS",
           "MAX_LABELS", "MAX_CLASSES", "MAX_NAME", "MAX_RESOURCES", "NONE", "MAX_TEXT_NODES",
           "MAX_TEXT_GPUS", "Name"]


class NodesInfo(NamedTuple):
    """Facts of a range of nodes, one ``array.array`` column each: GPU counts,
    GPU class indices (see :attr:`Topology.classes`) and label bit masks."""
    gpus: array.array
    classes: array.array
    label_masks: array.array


#: A level, node, GPU class, label or resource: its name or its index.
Name = Union[str, int]

# The limits of topo.h (GPUSCHED_MAX_*, GPUSCHED_NONE, GPUSCHED_TOPO_TEXT_MAX_*;
# tests/python/test_constants.py compares them with the header).
MAX_LEVELS = 8
MAX_NODE_GPUS = 64
MAX_LABELS = 64
MAX_CLASSES = 255
MAX_NAME = 63
#: Most named scalar resources (cpu, memory, ...) one topology declares.
MAX_RESOURCES = 8
#: The 0.1 name of :data:`MAX_NAME` (``GPUSCHED_TOPO_NAME_MAX``), kept as an alias.
NAME_MAX = MAX_NAME
NONE = 0xffffffff
#: Most nodes, and GPUs, a topology text may declare (:meth:`Topology.parse`,
#: :meth:`TopologyBuilder.parse`); larger topologies are built node by node
#: or with :meth:`Topology.uniform`.
MAX_TEXT_NODES = 1 << 24
MAX_TEXT_GPUS = 1 << 26

_ERRBUF = 512
# A full domain path: one component of MAX_NAME bytes per level, separators, NUL.
_PATHBUF = MAX_LEVELS * (MAX_NAME + 1) + 1


def _errbuf() -> Any:
    return ctypes.create_string_buffer(_ERRBUF)


def _name(b: Optional[bytes]) -> str:
    """A name the library gives for an index it has (never NULL then)."""
    return b.decode("utf-8") if b is not None else ""


class Topology(u.Handle):
    """An immutable topology: levels above the node (level 0 is the top),
    domains as contiguous node ranges, nodes with GPUs, GPU classes, labels.

    Build one with :meth:`parse`, :meth:`preset`, :meth:`uniform` or a
    :class:`TopologyBuilder`. A topology is read-only, so it can be shared by
    any number of clusters and threads. Free it with :meth:`close` (or a
    ``with`` block); clusters built on it hold their own reference, so
    closing it early is safe.

    Wherever a method takes a level, a node, a GPU class or a label, it
    accepts its name or its index; a domain is its index or its full path
    (for example ``"z0/b3/r12"``).
    """

    _nlevels: int
    _nnodes: int
    _levels: Tuple[str, ...]
    _classes: Tuple[str, ...]
    _labels: Tuple[str, ...]
    _resources: Tuple[str, ...]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("use Topology.parse(), Topology.preset(), Topology.uniform() "
                        "or TopologyBuilder().freeze()")

    @classmethod
    def _adopt(cls, ptr: Optional[int]) -> Topology:
        """Wraps a C topology whose reference the caller hands over."""
        self = object.__new__(cls)
        self._own(ptr, lib.topo_unref)
        # Immutable: the small tables are read once.
        self._nlevels = lib.topo_level_count(ptr)
        self._nnodes = lib.topo_node_count(ptr)
        self._levels = tuple(_name(lib.topo_level_name(ptr, i)) for i in range(self._nlevels))
        self._classes = tuple(_name(lib.topo_class_name(ptr, i))
                              for i in range(lib.topo_class_count(ptr)))
        self._labels = tuple(_name(lib.topo_label_name(ptr, i))
                             for i in range(lib.topo_label_count(ptr)))
        self._resources = tuple(_name(lib.topo_resource_name(ptr, i))
                                for i in range(lib.topo_resource_count(ptr)))
        return self

    @staticmethod
    def _construct(fn: Any, *args: Any) -> Topology:
        out = ctypes.c_void_p()
        err = _errbuf()
        rc = fn(*args, None, ctypes.byref(out), err, _ERRBUF)
        lib.check(rc, function=fn.__name__, errmsg=lambda _: err.value, handle=None)
        return Topology._adopt(out.value)

    @classmethod
    def parse(cls, text: Union[str, bytes]) -> Topology:
        """Parses a topology text (doc/topology-format.md).

        Raises ParseError with line and column on a syntax error."""
        if isinstance(text, str):
            text = text.encode("utf-8")
        elif not isinstance(text, bytes):
            raise TypeError(f"text must be str or bytes, not {type(text).__name__}")
        return cls._construct(lib.topo_parse, text, len(text))

    @classmethod
    def from_text(cls, text: Union[str, bytes]) -> Topology:
        """Another name of :meth:`parse`."""
        return cls.parse(text)

    @classmethod
    def preset(cls, name: str) -> Topology:
        """Builds a named preset such as ``"tiny"`` or ``"gb200-nvl72-1m"``
        (see :meth:`presets`). Raises NotFound for an unknown name."""
        return cls._construct(lib.topo_preset, u.text("name", name))

    @staticmethod
    def presets() -> List[str]:
        """The names of the built-in presets."""
        names: List[str] = []
        i = 0
        while True:
            n = lib.topo_preset_name(i)
            if n is None:
                return names
            names.append(n.decode())
            i += 1

    @classmethod
    def uniform(cls, levels: Sequence[str], fanout: Iterable[int], gpus_per_node: int,
                gpu_class: Optional[str] = None) -> Topology:
        """Builds a uniform topology.

        Args:
            levels: names of the levels above the node, top first.
            fanout: ``len(levels) + 1`` counts: top-level domains, children
                per domain at each next level, then nodes per lowest domain.
            gpus_per_node: GPUs on every node.
            gpu_class: class name of every GPU (None: ``"default"``).
        """
        names, n = u.strings("levels", levels)
        fan, nf, _ = u.column("fanout", fanout, ctypes.c_uint32)
        if nf != n + 1:
            raise ValueError(f"fanout needs {n + 1} counts (one per level plus nodes), got {nf}")
        return cls._construct(lib.topo_uniform, n, names, fan,
                              u.u32("gpus_per_node", gpus_per_node),
                              u.text("gpu_class", gpu_class, optional=True))

    # ---- name resolution ------------------------------------------------

    def _find(self, fn: Any, what: str, name: str) -> int:
        idx = ctypes.c_uint32()
        rc = fn(self._h, u.text(what, name), ctypes.byref(idx))
        lib.check(rc, errmsg=lambda _: f"no {what} named {name!r}", function=fn.__name__)
        return idx.value

    def level(self, level: Name) -> int:
        """The index of a level given by name or index."""
        if isinstance(level, str):
            return self._find(lib.topo_level_find, "level", level)
        return u.u32("level", level, self._nlevels - 1)

    def level_or_nodes(self, level: Name) -> int:
        """Like :meth:`level`, but also accepts ``"node"``/``len(levels)`` for
        the level of nodes (as fragmentation metrics do)."""
        if level in ("node", "nodes") and level not in self._levels:
            return self._nlevels
        if isinstance(level, str):
            return self.level(level)
        return u.u32("level", level, self._nlevels)

    def node(self, node: Name) -> int:
        """The index of a node given by name or index."""
        if isinstance(node, str):
            return self._find(lib.topo_node_find, "node", node)
        return u.u32("node", node, self._nnodes - 1)

    def gpu_class(self, cls: Name) -> int:
        """The index of a GPU class given by name or index."""
        if isinstance(cls, str):
            return self._find(lib.topo_class_find, "class", cls)
        return u.u32("gpu_class", cls, len(self._classes) - 1)

    def label(self, label: Name) -> int:
        """The bit index of a label given by name or index."""
        if isinstance(label, str):
            return self._find(lib.topo_label_find, "label", label)
        return u.u32("label", label, len(self._labels) - 1)

    def resource(self, resource: Name) -> int:
        """The index of a resource given by name or index."""
        if isinstance(resource, str):
            return self._find(lib.topo_resource_find, "resource", resource)
        return u.u32("resource", resource, len(self._resources) - 1)

    def label_mask(self, labels: Union[str, Iterable[Name]]) -> int:
        """The bit mask of an iterable of labels (names or indices)."""
        if isinstance(labels, str):
            labels = [labels]
        mask = 0
        for lb in labels:
            mask |= 1 << self.label(lb)
        return mask

    def domain(self, level: Name, domain: Name) -> int:
        """The index of a domain at `level`, given by full path or index."""
        lv = self.level(level)
        if isinstance(domain, str):
            idx = ctypes.c_uint32()
            rc = lib.topo_domain_find(self._h, lv, u.text("domain", domain), ctypes.byref(idx))
            lib.check(rc, errmsg=lambda _: f"no domain named {domain!r} at level "
                      f"{self.levels[lv]!r}", function="gpusched_topo_domain_find")
            return idx.value
        return u.u32("domain", domain, lib.topo_domain_count(self._h, lv) - 1)

    # ---- reading --------------------------------------------------------

    @property
    def levels(self) -> Tuple[str, ...]:
        """The level names above the node, top first."""
        self._h
        return self._levels

    @property
    def node_count(self) -> int:
        """Number of nodes."""
        return lib.topo_node_count(self._h)

    def __len__(self) -> int:
        return self.node_count

    @property
    def gpu_count(self) -> int:
        """Number of GPUs."""
        return lib.topo_gpu_count(self._h)

    @property
    def classes(self) -> Tuple[str, ...]:
        """The GPU class names, by class index."""
        self._h
        return self._classes

    @property
    def labels(self) -> Tuple[str, ...]:
        """The label names, by label bit."""
        self._h
        return self._labels

    @property
    def resources(self) -> List[str]:
        """The names of the named scalar resources (``cpu``, ``memory``,
        ...), by resource index; empty if the topology declares none."""
        self._h
        return list(self._resources)

    @property
    def memory_bytes(self) -> int:
        """Bytes of memory the topology holds."""
        return lib.topo_memory_bytes(self._h)

    def domain_count(self, level: Name) -> int:
        """Number of domains at a level."""
        return lib.topo_domain_count(self._h, self.level(level))

    def domain_nodes(self, level: Name, domain: Name) -> range:
        """The nodes of a domain, as a ``range`` of node indices."""
        lv = self.level(level)
        d = self.domain(lv, domain)
        first, count = ctypes.c_uint32(), ctypes.c_uint32()
        lib.check(lib.topo_domain_nodes(self._h, lv, d, ctypes.byref(first), ctypes.byref(count)),
                  function="gpusched_topo_domain_nodes")
        return range(first.value, first.value + count.value)

    def domain_parent(self, level: Name, domain: Name) -> int:
        """The index of a domain's parent at ``level - 1``; ValueError at level 0."""
        lv = self.level(level)
        if lv == 0:
            raise ValueError("domains of level 0 have no parent")
        d = self.domain(lv, domain)
        p = ctypes.c_uint32()
        lib.check(lib.topo_domain_parent(self._h, lv, d, ctypes.byref(p)),
                  function="gpusched_topo_domain_parent")
        return p.value

    def domain_name(self, level: Name, domain: Name) -> str:
        """The full path name of a domain, for example ``"z0/b3/r12"``."""
        lv = self.level(level)
        d = self.domain(lv, domain)
        buf = ctypes.create_string_buffer(_PATHBUF)
        lib.check(lib.topo_domain_name(self._h, lv, d, buf, _PATHBUF),
                  function="gpusched_topo_domain_name")
        return buf.value.decode("utf-8")

    def domain_names(self, level: Name) -> List[str]:
        """The full path names of every domain at a level, by index."""
        lv = self.level(level)
        return [self.domain_name(lv, d) for d in range(lib.topo_domain_count(self._h, lv))]

    def node_domain(self, node: Name, level: Name) -> int:
        """The index of the domain at `level` that holds `node`."""
        n = self.node(node)
        lv = self.level(level)
        d = ctypes.c_uint32()
        lib.check(lib.topo_node_domain(self._h, n, lv, ctypes.byref(d)),
                  function="gpusched_topo_node_domain")
        return d.value

    def node_name(self, node: Name) -> str:
        """The name of a node."""
        n = self.node(node)
        buf = ctypes.create_string_buffer(MAX_NAME + 1)
        lib.check(lib.topo_node_name(self._h, n, buf, MAX_NAME + 1),
                  function="gpusched_topo_node_name")
        return buf.value.decode("utf-8")

    def node_names(self, nodes: Optional[Iterable[Name]] = None) -> List[str]:
        """The names of the given nodes (default: every node), in order."""
        if nodes is None:
            nodes = range(self._nnodes)
        return [self.node_name(n) for n in nodes]

    def node_gpus(self, node: Name) -> int:
        """Number of GPUs on a node."""
        return lib.topo_node_gpus(self._h, self.node(node))

    def node_class(self, node: Name) -> str:
        """The GPU class name of a node."""
        return self._classes[lib.topo_node_class(self._h, self.node(node))]

    def node_labels(self, node: Name) -> Tuple[str, ...]:
        """The label names of a node, by label bit."""
        mask = lib.topo_node_labels(self._h, self.node(node))
        return tuple(self._labels[b] for b in u.mask_to_gpus(mask))

    def node_resources(self, node: Name) -> Dict[str, int]:
        """A node's capacity of every declared resource, by name (0 where
        the topology gives none), for example
        ``{"cpu": 64000, "memory": 262144}``."""
        n = self.node(node)
        return {name: lib.topo_node_resource(self._h, n, r) for r, name in enumerate(self._resources)}

    def node_resource(self, node: Name, resource: Name) -> int:
        """A node's capacity of one resource (name or index)."""
        return lib.topo_node_resource(self._h, self.node(node), self.resource(resource))

    def nodes_info(self, first: int = 0, count: Optional[int] = None) -> NodesInfo:
        """GPU counts, class indices and label bit masks of nodes `first` to
        `first + count - 1` (count None: to the last node) in one call, as
        a :class:`NodesInfo` of ``array.array`` columns."""
        first, count = u.node_range(first, count, self._nnodes)
        gpus, gp = u.out_column("I", ctypes.c_uint32, count)
        classes, cp = u.out_column("I", ctypes.c_uint32, count)
        labels, lp = u.out_column("Q", ctypes.c_uint64, count)
        if count:
            lib.check(lib.topo_nodes_info(self._h, first, count, gp, cp, lp), function="gpusched_topo_nodes_info")
        return NodesInfo(gpus, classes, labels)

    def node_label_mask(self, node: Name) -> int:
        """The label bit mask of a node (bit i: label i)."""
        return lib.topo_node_labels(self._h, self.node(node))

    def export(self) -> str:
        """The topology in the text format; :meth:`parse` of it gives an
        identical topology."""
        need = ctypes.c_size_t()
        rc = lib.topo_export(self._h, None, 0, ctypes.byref(need))
        if rc < 0 and rc != OutOfRange.code:
            lib.check(rc, function="gpusched_topo_export")
        buf = ctypes.create_string_buffer(need.value + 1)
        lib.check(lib.topo_export(self._h, buf, need.value + 1, ctypes.byref(need)),
                  function="gpusched_topo_export")
        return buf.raw[:need.value].decode("utf-8")

    def __repr__(self) -> str:
        if self.closed:
            return "<gpusched.Topology closed>"
        return (f"<gpusched.Topology levels={list(self.levels)} nodes={self.node_count} "
                f"gpus={self.gpu_count}>")


class TopologyBuilder(u.Handle):
    """Builds a topology node by node (or from text), then :meth:`freeze`
    turns it into a :class:`Topology`. Used by one thread at a time.

    Example::

        with TopologyBuilder(["block", "rack"]) as b:
            b.add_node(["b0", "r0"], "n0", 8, gpu_class="h100", labels=["ib"])
            topo = b.freeze()
    """

    def __init__(self, levels: Optional[Sequence[str]] = None) -> None:
        """Creates an empty builder; `levels` (names, top first) calls
        :meth:`set_levels` at once."""
        out = ctypes.c_void_p()
        lib.check(lib.topo_builder_new(None, ctypes.byref(out)),
                  function="gpusched_topo_builder_new")
        self._own(out.value, lib.topo_builder_free)
        self._nlevels: Optional[int] = None
        if levels is not None:
            self.set_levels(levels)

    def _check(self, rc: int, fn: str) -> int:
        return lib.check(rc, lib.topo_builder_errmsg, self._h, fn)

    def set_levels(self, levels: Sequence[str]) -> None:
        """Names the levels above the node, top first; once, before any node."""
        names, n = u.strings("levels", levels)
        if not 1 <= n <= MAX_LEVELS:
            raise ValueError(f"a topology has 1 to {MAX_LEVELS} levels, not {n}")
        self._check(lib.topo_builder_levels_set(self._h, n, names),
                    "gpusched_topo_builder_levels_set")
        self._nlevels = n

    def add_node(self, path: Sequence[str], name: str, gpus: int, gpu_class: Optional[str] = None,
                 labels: Sequence[str] = ()) -> None:
        """Adds a node.

        Args:
            path: one domain name per level, top first, each relative to its
                parent (for example ``["z0", "b3", "r12"]``).
            name: the node's name, unique in the topology.
            gpus: 1 to 64 GPUs.
            gpu_class: class name such as ``"gb200"`` (None: ``"default"``).
            labels: label names.
        """
        p, n = u.strings("path", path)
        if self._nlevels is not None and n != self._nlevels:
            raise ValueError(f"path has {n} components, the topology has {self._nlevels} levels")
        lbl, nl = u.strings("labels", labels)
        self._check(lib.topo_builder_add_node(self._h, p, u.text("name", name),
                                              u.u32("gpus", gpus, MAX_NODE_GPUS),
                                              u.text("gpu_class", gpu_class, optional=True),
                                              lbl if nl else None, nl),
                    "gpusched_topo_builder_add_node")

    def add_resource(self, name: str) -> int:
        """Declares a named scalar resource such as ``"cpu"`` (milli-cores by
        convention) or ``"memory"`` (MiB) and returns its index; a name
        already declared keeps its index. At most :data:`MAX_RESOURCES`;
        ``gpus``, ``class``, ``labels`` and ``count`` are refused."""
        idx = ctypes.c_uint32()
        self._check(lib.topo_builder_resource_add(self._h, u.text("name", name), ctypes.byref(idx)),
                    "gpusched_topo_builder_resource_add")
        return idx.value

    def set_node_resource(self, node: str, resource: int, amount: int) -> None:
        """Sets the capacity of a node added before (by name) of a declared
        resource (the index :meth:`add_resource` returned); nodes never set
        have 0."""
        self._check(lib.topo_builder_node_resource_set(self._h, u.text("node", node),
                                                       u.u32("resource", resource),
                                                       u.u32("amount", amount)),
                    "gpusched_topo_builder_node_resource_set")

    def parse(self, text: Union[str, bytes]) -> None:
        """Adds the content of a topology text. Raises ParseError (line and
        column in the message) and leaves the builder unchanged on error."""
        if isinstance(text, str):
            text = text.encode("utf-8")
        elif not isinstance(text, bytes):
            raise TypeError(f"text must be str or bytes, not {type(text).__name__}")
        self._check(lib.topo_builder_parse(self._h, text, len(text)),
                    "gpusched_topo_builder_parse")

    def freeze(self) -> Topology:
        """Returns the :class:`Topology` built so far. The builder stays
        usable (and can be closed independently)."""
        out = ctypes.c_void_p()
        self._check(lib.topo_builder_freeze(self._h, ctypes.byref(out)),
                    "gpusched_topo_builder_freeze")
        return Topology._adopt(out.value)
