"""Python binding of libgpusched, the GPU cluster scheduling core.

Pure Python over ctypes, standard library only. The shared library is found
inside this package (where ``pip install .`` puts it), then through the
environment variable ``GPUSCHED_LIBRARY``, then next to the package's folder
and on the system's search path; importing fails with
:class:`LibraryError` when it is missing or its version does not suit this
binding.

Main classes: :class:`Topology` (and :class:`TopologyBuilder`),
:class:`Cluster`, :class:`Placement` (from :meth:`Cluster.place`),
:class:`PlacePolicy` (how pods with resources choose nodes),
:class:`PreemptPlan` (from :meth:`Cluster.preempt`, ranked by a
:class:`PreemptPolicy`, and :meth:`Cluster.defrag`),
:class:`FairQueue`, :class:`Scheduler` (the scheduling cycle). Errors of the library are raised as subclasses of
:class:`Error`.

Options are keyword-only parameters (``cluster.place(16, pod_gpus=8,
commit=True)``), every public function is type-annotated, and the package
ships a ``py.typed`` marker (PEP 561) for type checkers.
"""
from ._errors import *  # noqa: F401,F403
from ._errors import __all__ as _error_names
from ._lib import BINDING_VERSION
from .core import (version, version_string, library_path, strerror, err_name,
                   cpu_features, simd_compiled, simd_name, enum_bounds, CpuFeature, Simd,
                   ENUM_SIMD, ENUM_NODE_HEALTH, ENUM_GPU_STATE, ENUM_SPLIT, ENUM_REASON,
                   ENUM_FAIRQ_PARAM, ENUM_FAIRQ_POLICY, ENUM_FAIRQ_TENANT, ENUM_PREEMPT_POLICY)
from .topology import Topology, TopologyBuilder, NodesInfo, NONE
from .cluster import Cluster, Job, NodeHealth, GpuState, Allocation, NodeState, NodesState, Frag
from .placement import Placement, PlaceReason, Split, PlacePolicy
from .preemption import PreemptPlan, Move, PreemptPolicy
from .fairq import FairQueue, Param, Policy, TenantValue, TenantStats, Decision, DecisionLog
from .scheduler import (Scheduler, SchedParam, SchedOrder, WaitReason, JobStatus, Wait, Start,
                        Reservation, Decisions, QueueUsage)

__version__: str = ".".join(map(str, BINDING_VERSION))

__all__ = list(_error_names) + [
    "BINDING_VERSION", "version", "version_string", "library_path", "strerror",
    "err_name", "cpu_features", "simd_compiled", "simd_name", "enum_bounds", "CpuFeature", "Simd",
    "ENUM_SIMD", "ENUM_NODE_HEALTH", "ENUM_GPU_STATE", "ENUM_SPLIT", "ENUM_REASON",
    "ENUM_FAIRQ_PARAM", "ENUM_FAIRQ_POLICY", "ENUM_FAIRQ_TENANT", "ENUM_PREEMPT_POLICY",
    "Topology", "TopologyBuilder", "NodesInfo", "NONE",
    "Cluster", "Job", "NodeHealth", "GpuState", "Allocation", "NodeState", "NodesState", "Frag",
    "Placement", "PlaceReason", "Split", "PlacePolicy", "PreemptPlan", "Move", "PreemptPolicy",
    "FairQueue", "Param", "Policy", "TenantValue", "TenantStats", "Decision", "DecisionLog",
    "Scheduler", "SchedParam", "SchedOrder", "WaitReason", "JobStatus", "Wait", "Start",
    "Reservation", "Decisions", "QueueUsage",
]
