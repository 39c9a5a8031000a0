"""Topology: the immutable physical shape of a cluster (topo.h)."""
import collections
import ctypes

from . import _util as u
from ._lib import lib

__all__ = ["Topology", "TopologyBuilder", "NodesInfo", "MAX_LEVELS", "MAX_NODE_GPUS",
           "MAX_LABELS", "MAX_CLASSES", "NAME_MAX", "NONE"]

#: Facts of a range of nodes, one ``array.array`` column each: GPU counts,
#: GPU class indices (see :attr:`Topology.classes`) and label bit masks.
NodesInfo = collections.namedtuple("NodesInfo", "gpus classes label_masks")

MAX_LEVELS = 8
MAX_NODE_GPUS = 64
MAX_LABELS = 64
MAX_CLASSES = 255
NAME_MAX = 63
NONE = 0xffffffff

_ERRBUF = 512
# A full domain path: one component of NAME_MAX bytes per level, separators, NUL.
_PATHBUF = MAX_LEVELS * (NAME_MAX + 1) + 1


def _errbuf():
    return ctypes.create_string_buffer(_ERRBUF)


def _decode(b):
    return b.decode("utf-8") if b is not None else None


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

    def __init__(self, *args, **kwargs):
        raise TypeError("use Topology.parse(), Topology.preset(), Topology.uniform() "
                        "or TopologyBuilder().freeze()")

    @classmethod
    def _adopt(cls, ptr):
        """Wraps a C topology whose reference the caller hands over."""
        self = object.__new__(cls)
        self._own(ptr, lib.topo_unref)
        # Immutable: the small tables are read once.
        self._nlevels = lib.topo_level_count(ptr)
        self._nnodes = lib.topo_node_count(ptr)
        self._levels = tuple(_decode(lib.topo_level_name(ptr, i)) for i in range(self._nlevels))
        self._classes = tuple(_decode(lib.topo_class_name(ptr, i))
                              for i in range(lib.topo_class_count(ptr)))
        self._labels = tuple(_decode(lib.topo_label_name(ptr, i))
                             for i in range(lib.topo_label_count(ptr)))
        return self

    @staticmethod
    def _construct(fn, *args):
        out = ctypes.c_void_p()
        err = _errbuf()
        rc = fn(*args, None, ctypes.byref(out), err, _ERRBUF)
        lib.check(rc, function=fn.__name__, errmsg=lambda _: err.value, handle=None)
        return Topology._adopt(out.value)

    @classmethod
    def parse(cls, text):
        """Parses a topology text (doc/topology-format.md).

        Raises ParseError with line and column on a syntax error."""
        if isinstance(text, str):
            text = text.encode("utf-8")
        elif not isinstance(text, bytes):
            raise TypeError(f"text must be str or bytes, not {type(text).__name__}")
        return cls._construct(lib.topo_parse, text, len(text))

    from_text = parse

    @classmethod
    def preset(cls, name):
        """Builds a named preset such as ``"tiny"`` or ``"gb200-nvl72-1m"``
        (see :meth:`presets`). Raises NotFound for an unknown name."""
        return cls._construct(lib.topo_preset, u.text("name", name))

    @staticmethod
    def presets():
        """The names of the built-in presets."""
        names, i = [], 0
        while True:
            n = lib.topo_preset_name(i)
            if n is None:
                return names
            names.append(n.decode())
            i += 1

    @classmethod
    def uniform(cls, levels, fanout, gpus_per_node, gpu_class=None):
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

    def _find(self, fn, what, name):
        idx = ctypes.c_uint32()
        rc = fn(self._h, u.text(what, name), ctypes.byref(idx))
        lib.check(rc, errmsg=lambda _: f"no {what} named {name!r}", function=fn.__name__)
        return idx.value

    def level(self, level):
        """The index of a level given by name or index."""
        if isinstance(level, str):
            return self._find(lib.topo_level_find, "level", level)
        return u.u32("level", level, self._nlevels - 1)

    def level_or_nodes(self, level):
        """Like :meth:`level`, but also accepts ``"node"``/``len(levels)`` for
        the level of nodes (as fragmentation metrics do)."""
        if level in ("node", "nodes") and level not in self._levels:
            return self._nlevels
        if isinstance(level, str):
            return self.level(level)
        return u.u32("level", level, self._nlevels)

    def node(self, node):
        """The index of a node given by name or index."""
        if isinstance(node, str):
            return self._find(lib.topo_node_find, "node", node)
        return u.u32("node", node, self._nnodes - 1)

    def gpu_class(self, cls):
        """The index of a GPU class given by name or index."""
        if isinstance(cls, str):
            return self._find(lib.topo_class_find, "class", cls)
        return u.u32("gpu_class", cls, len(self._classes) - 1)

    def label(self, label):
        """The bit index of a label given by name or index."""
        if isinstance(label, str):
            return self._find(lib.topo_label_find, "label", label)
        return u.u32("label", label, len(self._labels) - 1)

    def label_mask(self, labels):
        """The bit mask of an iterable of labels (names or indices)."""
        if isinstance(labels, str):
            labels = [labels]
        mask = 0
        for lb in labels:
            mask |= 1 << self.label(lb)
        return mask

    def domain(self, level, domain):
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
    def levels(self):
        """The level names above the node, top first."""
        self._h
        return self._levels

    @property
    def node_count(self):
        """Number of nodes."""
        return lib.topo_node_count(self._h)

    def __len__(self):
        return self.node_count

    @property
    def gpu_count(self):
        """Number of GPUs."""
        return lib.topo_gpu_count(self._h)

    @property
    def classes(self):
        """The GPU class names, by class index."""
        self._h
        return self._classes

    @property
    def labels(self):
        """The label names, by label bit."""
        self._h
        return self._labels

    @property
    def memory_bytes(self):
        """Bytes of memory the topology holds."""
        return lib.topo_memory_bytes(self._h)

    def domain_count(self, level):
        """Number of domains at a level."""
        return lib.topo_domain_count(self._h, self.level(level))

    def domain_nodes(self, level, domain):
        """The nodes of a domain, as a ``range`` of node indices."""
        lv = self.level(level)
        d = self.domain(lv, domain)
        first, count = ctypes.c_uint32(), ctypes.c_uint32()
        lib.check(lib.topo_domain_nodes(self._h, lv, d, ctypes.byref(first), ctypes.byref(count)),
                  function="gpusched_topo_domain_nodes")
        return range(first.value, first.value + count.value)

    def domain_parent(self, level, domain):
        """The index of a domain's parent at ``level - 1``; ValueError at level 0."""
        lv = self.level(level)
        if lv == 0:
            raise ValueError("domains of level 0 have no parent")
        d = self.domain(lv, domain)
        p = ctypes.c_uint32()
        lib.check(lib.topo_domain_parent(self._h, lv, d, ctypes.byref(p)),
                  function="gpusched_topo_domain_parent")
        return p.value

    def domain_name(self, level, domain):
        """The full path name of a domain, for example ``"z0/b3/r12"``."""
        lv = self.level(level)
        d = self.domain(lv, domain)
        buf = ctypes.create_string_buffer(_PATHBUF)
        lib.check(lib.topo_domain_name(self._h, lv, d, buf, _PATHBUF),
                  function="gpusched_topo_domain_name")
        return buf.value.decode("utf-8")

    def domain_names(self, level):
        """The full path names of every domain at a level, by index."""
        lv = self.level(level)
        return [self.domain_name(lv, d) for d in range(lib.topo_domain_count(self._h, lv))]

    def node_domain(self, node, level):
        """The index of the domain at `level` that holds `node`."""
        n = self.node(node)
        lv = self.level(level)
        d = ctypes.c_uint32()
        lib.check(lib.topo_node_domain(self._h, n, lv, ctypes.byref(d)),
                  function="gpusched_topo_node_domain")
        return d.value

    def node_name(self, node):
        """The name of a node."""
        n = self.node(node)
        buf = ctypes.create_string_buffer(NAME_MAX + 1)
        lib.check(lib.topo_node_name(self._h, n, buf, NAME_MAX + 1),
                  function="gpusched_topo_node_name")
        return buf.value.decode("utf-8")

    def node_names(self, nodes=None):
        """The names of the given nodes (default: every node), in order."""
        if nodes is None:
            nodes = range(self._nnodes)
        return [self.node_name(n) for n in nodes]

    def node_gpus(self, node):
        """Number of GPUs on a node."""
        return lib.topo_node_gpus(self._h, self.node(node))

    def node_class(self, node):
        """The GPU class name of a node."""
        return self._classes[lib.topo_node_class(self._h, self.node(node))]

    def node_labels(self, node):
        """The label names of a node, by label bit."""
        mask = lib.topo_node_labels(self._h, self.node(node))
        return tuple(self._labels[b] for b in u.mask_to_gpus(mask))

    def nodes_info(self, first=0, count=None):
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

    def node_label_mask(self, node):
        """The label bit mask of a node (bit i: label i)."""
        return lib.topo_node_labels(self._h, self.node(node))

    def export(self):
        """The topology in the text format; :meth:`parse` of it gives an
        identical topology."""
        need = ctypes.c_size_t()
        rc = lib.topo_export(self._h, None, 0, ctypes.byref(need))
        if rc < 0 and rc != -2:
            lib.check(rc, function="gpusched_topo_export")
        buf = ctypes.create_string_buffer(need.value + 1)
        lib.check(lib.topo_export(self._h, buf, need.value + 1, ctypes.byref(need)),
                  function="gpusched_topo_export")
        return buf.raw[:need.value].decode("utf-8")

    def __repr__(self):
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

    def __init__(self, levels=None):
        """Creates an empty builder; `levels` (names, top first) calls
        :meth:`set_levels` at once."""
        out = ctypes.c_void_p()
        lib.check(lib.topo_builder_new(None, ctypes.byref(out)),
                  function="gpusched_topo_builder_new")
        self._own(out.value, lib.topo_builder_free)
        self._nlevels = None
        if levels is not None:
            self.set_levels(levels)

    def _check(self, rc, fn):
        return lib.check(rc, lib.topo_builder_errmsg, self._h, fn)

    def set_levels(self, levels):
        """Names the levels above the node, top first; once, before any node."""
        names, n = u.strings("levels", levels)
        if not 1 <= n <= MAX_LEVELS:
            raise ValueError(f"a topology has 1 to {MAX_LEVELS} levels, not {n}")
        self._check(lib.topo_builder_levels_set(self._h, n, names),
                    "gpusched_topo_builder_levels_set")
        self._nlevels = n

    def add_node(self, path, name, gpus, gpu_class=None, labels=()):
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

    def parse(self, text):
        """Adds the content of a topology text. Raises ParseError (line and
        column in the message) and leaves the builder unchanged on error."""
        if isinstance(text, str):
            text = text.encode("utf-8")
        elif not isinstance(text, bytes):
            raise TypeError(f"text must be str or bytes, not {type(text).__name__}")
        self._check(lib.topo_builder_parse(self._h, text, len(text)),
                    "gpusched_topo_builder_parse")

    def freeze(self):
        """Returns the :class:`Topology` built so far. The builder stays
        usable (and can be closed independently)."""
        out = ctypes.c_void_p()
        self._check(lib.topo_builder_freeze(self._h, ctypes.byref(out)),
                    "gpusched_topo_builder_freeze")
        return Topology._adopt(out.value)
