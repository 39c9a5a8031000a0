"""Loads libgpusched and declares every C function the binding calls.

FUNCTIONS is the one table of C signatures: one entry per public function of
include/gpusched/*.h. The completeness test compares it with the symbols the
shared object exports and with the prototypes in the headers.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import Any, Callable, Dict, List, NoReturn, Optional, Set, Tuple, Union

from ._errors import LibraryError, error_class

#: The library version this binding was written for (major, minor, micro).
BINDING_VERSION: Tuple[int, int, int] = (0, 2, 3)
#: The library file it loads: before 1.0 the SONAME carries the minor
#: version too (meson.build derives both from the project version; a test
#: compares them with the build's).
SONAME: str = "libgpusched.so.0.2"

from ctypes import (POINTER, c_char_p, c_double, c_int, c_int32, c_int64,  # noqa: E402
                    c_size_t, c_uint8, c_uint32, c_uint64, c_void_p)

P = POINTER
_u32p, _u64p, _i64p, _dblp = P(c_uint32), P(c_uint64), P(c_int64), P(c_double)
_u8p, _sizep = P(c_uint8), P(c_size_t)
_charpp = P(c_char_p)


class Job(ctypes.Structure):
    """ctypes mirror of gpusched_job (cluster.h)."""
    _fields_ = [("size", c_uint32), ("flags", c_uint32), ("id", c_uint64),
                ("priority", c_int32), ("tenant", c_uint32),
                ("start_time", c_int64), ("cost_hint", c_uint64),
                ("protected_until", c_int64)]


class FairqTask(ctypes.Structure):
    """ctypes mirror of gpusched_fairq_task (fairq.h)."""
    _fields_ = [("size", c_uint32), ("tenant", c_uint32), ("id", c_uint64),
                ("type", c_uint32), ("reserved0", c_uint32),
                ("enqueue_time", c_double), ("work_size", c_double),
                ("predicted", c_double)]


class FairqDecision(ctypes.Structure):
    """ctypes mirror of gpusched_fairq_decision (fairq.h)."""
    _fields_ = [("size", c_uint32), ("tenant", c_uint32), ("task_id", c_uint64),
                ("time", c_double), ("type", c_uint32),
                ("tenants_backlogged", c_uint32), ("score", c_double),
                ("term_backlog", c_double), ("term_wait", c_double),
                ("term_vtime", c_double), ("term_pred", c_double),
                ("predicted", c_double), ("probability", c_double),
                ("candidates", c_uint64), ("queued", c_uint64),
                ("max_wait", c_double)]


class PlaceRequest(ctypes.Structure):
    """ctypes mirror of gpusched_place_request (place.h). ``job`` points to
    a :class:`Job` that must stay alive for the call (the library copies
    it); NULL means job id 0 with every field 0. ``resources`` and
    ``gpu_classes`` point to arrays that must also stay alive."""
    _fields_ = [("size", c_uint32), ("flags", c_uint32), ("job", P(Job)),
                ("gpus", c_uint32), ("split", c_uint32), ("pod_gpus", c_uint32),
                ("required_level", c_uint32), ("preferred_level", c_uint32),
                ("slice_gpus", c_uint32 * 2), ("slice_level", c_uint32 * 2),
                ("gpu_class", c_uint32), ("labels_required", c_uint64),
                ("labels_forbidden", c_uint64), ("avoid_nodes", P(c_uint32)),
                ("avoid_count", c_uint32), ("preempt_policy", c_uint32),
                ("now", c_int64),
                # pods with resources and GPU fractions (0.2.3)
                ("pods", c_uint32), ("gpu_milli", c_uint32), ("resources", P(c_uint64)),
                ("resource_count", c_uint32), ("gpu_class_count", c_uint32),
                ("gpu_classes", P(c_uint32)), ("policy", c_uint32)]


class SchedQueue(ctypes.Structure):
    """ctypes mirror of gpusched_sched_queue (sched.h)."""
    _fields_ = [("size", c_uint32), ("parent", c_uint32), ("name", c_char_p),
                ("priority", c_int32), ("weight", c_uint32)]


class SchedJob(ctypes.Structure):
    """ctypes mirror of gpusched_sched_job (sched.h)."""
    _fields_ = [("size", c_uint32), ("queue", c_uint32), ("id", c_uint64),
                ("priority", c_int32), ("flags", c_uint32), ("submit_time", c_int64),
                ("duration_limit", c_int64), ("duration_predicted", c_int64),
                ("cost_hint", c_uint64), ("request", P(PlaceRequest))]


class SchedWait(ctypes.Structure):
    """ctypes mirror of gpusched_sched_wait (sched.h)."""
    _fields_ = [("size", c_uint32), ("reason", c_uint32), ("job_id", c_uint64),
                ("seq", c_uint32), ("queue", c_uint32), ("resource", c_uint32),
                ("place_reason", c_uint32), ("used", c_uint64), ("requested", c_uint64),
                ("limit", c_uint64), ("free_gpus", c_uint64), ("taken_gpus", c_uint64),
                ("blocking_job", c_uint64), ("time", c_int64), ("share", c_double)]


class Allocator(ctypes.Structure):
    """ctypes mirror of gpusched_allocator (common.h)."""
    _fields_ = [("size", c_uint32), ("reserved0", c_uint32),
                ("malloc_fn", c_void_p), ("realloc_fn", c_void_p),
                ("free_fn", c_void_p), ("user", c_void_p)]


#: Structs whose layout the tests compare with the C compiler's.
STRUCTS = {"gpusched_job": Job, "gpusched_fairq_task": FairqTask,
           "gpusched_fairq_decision": FairqDecision,
           "gpusched_place_request": PlaceRequest,
           "gpusched_allocator": Allocator, "gpusched_sched_queue": SchedQueue,
           "gpusched_sched_job": SchedJob, "gpusched_sched_wait": SchedWait}

_alloc = P(Allocator)
_topo = _builder = _cluster = _fairq = _log = _placer = _result = _plan = c_void_p
_sched = _decisions = c_void_p
_jobp = P(Job)

# name: (restype, argtypes). Pointers to handles are plain void pointers; the
# classes own them. None as restype means void.
FUNCTIONS: Dict[str, Tuple[Any, List[Any]]] = {
    # core (common.h)
    "gpusched_strerror": (c_char_p, [c_int]),
    "gpusched_err_name": (c_char_p, [c_int]),
    "gpusched_enum_bounds": (c_int, [c_uint32, _u32p, _u32p]),
    "gpusched_version": (c_uint32, []),
    "gpusched_version_string": (c_char_p, []),
    "gpusched_allocator_check": (c_int, [_alloc]),
    "gpusched_cpu_features": (c_int, [_u32p, _u32p]),
    "gpusched_simd_compiled": (c_uint32, []),
    "gpusched_simd_name": (c_char_p, [c_uint32]),
    # topology (topo.h)
    "gpusched_topo_builder_new": (c_int, [_alloc, P(_builder)]),
    "gpusched_topo_builder_free": (None, [_builder]),
    "gpusched_topo_builder_errmsg": (c_char_p, [_builder]),
    "gpusched_topo_builder_levels_set": (c_int, [_builder, c_uint32, _charpp]),
    "gpusched_topo_builder_add_node": (c_int, [_builder, _charpp, c_char_p, c_uint32,
                                               c_char_p, _charpp, c_uint32]),
    "gpusched_topo_builder_resource_add": (c_int, [_builder, c_char_p, _u32p]),
    "gpusched_topo_builder_node_resource_set": (c_int, [_builder, c_char_p, c_uint32, c_uint32]),
    "gpusched_topo_builder_parse": (c_int, [_builder, c_char_p, c_size_t]),
    "gpusched_topo_builder_freeze": (c_int, [_builder, P(_topo)]),
    "gpusched_topo_parse": (c_int, [c_char_p, c_size_t, _alloc, P(_topo), c_char_p, c_size_t]),
    "gpusched_topo_uniform": (c_int, [c_uint32, _charpp, _u32p, c_uint32, c_char_p, _alloc,
                                      P(_topo), c_char_p, c_size_t]),
    "gpusched_topo_preset": (c_int, [c_char_p, _alloc, P(_topo), c_char_p, c_size_t]),
    "gpusched_topo_preset_name": (c_char_p, [c_uint32]),
    "gpusched_topo_ref": (_topo, [_topo]),
    "gpusched_topo_unref": (None, [_topo]),
    "gpusched_topo_export": (c_int, [_topo, c_char_p, c_size_t, _sizep]),
    "gpusched_topo_level_count": (c_uint32, [_topo]),
    "gpusched_topo_level_name": (c_char_p, [_topo, c_uint32]),
    "gpusched_topo_level_find": (c_int, [_topo, c_char_p, _u32p]),
    "gpusched_topo_node_count": (c_uint32, [_topo]),
    "gpusched_topo_gpu_count": (c_uint64, [_topo]),
    "gpusched_topo_domain_count": (c_uint32, [_topo, c_uint32]),
    "gpusched_topo_domain_nodes": (c_int, [_topo, c_uint32, c_uint32, _u32p, _u32p]),
    "gpusched_topo_domain_parent": (c_int, [_topo, c_uint32, c_uint32, _u32p]),
    "gpusched_topo_node_domain": (c_int, [_topo, c_uint32, c_uint32, _u32p]),
    "gpusched_topo_domain_name": (c_int, [_topo, c_uint32, c_uint32, c_char_p, c_size_t]),
    "gpusched_topo_domain_find": (c_int, [_topo, c_uint32, c_char_p, _u32p]),
    "gpusched_topo_node_gpus": (c_uint32, [_topo, c_uint32]),
    "gpusched_topo_node_class": (c_uint32, [_topo, c_uint32]),
    "gpusched_topo_node_labels": (c_uint64, [_topo, c_uint32]),
    "gpusched_topo_nodes_info": (c_int, [_topo, c_uint32, c_uint32, _u32p, _u32p, _u64p]),
    "gpusched_topo_node_name": (c_int, [_topo, c_uint32, c_char_p, c_size_t]),
    "gpusched_topo_node_find": (c_int, [_topo, c_char_p, _u32p]),
    "gpusched_topo_class_count": (c_uint32, [_topo]),
    "gpusched_topo_class_name": (c_char_p, [_topo, c_uint32]),
    "gpusched_topo_class_find": (c_int, [_topo, c_char_p, _u32p]),
    "gpusched_topo_label_count": (c_uint32, [_topo]),
    "gpusched_topo_label_name": (c_char_p, [_topo, c_uint32]),
    "gpusched_topo_label_find": (c_int, [_topo, c_char_p, _u32p]),
    "gpusched_topo_resource_count": (c_uint32, [_topo]),
    "gpusched_topo_resource_name": (c_char_p, [_topo, c_uint32]),
    "gpusched_topo_resource_find": (c_int, [_topo, c_char_p, _u32p]),
    "gpusched_topo_node_resource": (c_uint32, [_topo, c_uint32, c_uint32]),
    "gpusched_topo_memory_bytes": (c_size_t, [_topo]),
    # cluster state (cluster.h)
    "gpusched_cluster_new": (c_int, [_topo, _alloc, P(_cluster)]),
    "gpusched_cluster_ref": (_cluster, [_cluster]),
    "gpusched_cluster_unref": (None, [_cluster]),
    "gpusched_cluster_errmsg": (c_char_p, [_cluster]),
    "gpusched_cluster_topo": (_topo, [_cluster]),
    "gpusched_cluster_memory_bytes": (c_size_t, [_cluster]),
    "gpusched_cluster_node_state": (c_int, [_cluster, c_uint32, _u64p, _u64p, _u64p, _u32p]),
    "gpusched_cluster_nodes_state": (c_int, [_cluster, c_uint32, c_uint32, _u64p, _u64p, _u64p, _u32p]),
    "gpusched_cluster_gpu_state": (c_int, [_cluster, c_uint32, c_uint32, _u32p, _u64p]),
    "gpusched_cluster_node_resource_free": (c_int, [_cluster, c_uint32, c_uint32, _u32p]),
    "gpusched_cluster_gpu_milli_free": (c_int, [_cluster, c_uint32, c_uint32, _u32p]),
    "gpusched_cluster_node_jobs": (c_int, [_cluster, c_uint32, _u64p, c_uint32, _u32p]),
    "gpusched_cluster_node_health_set": (c_int, [_cluster, c_uint32, c_uint32, _u64p, c_uint32,
                                                 _u32p]),
    "gpusched_cluster_domain_free_gpus": (c_int, [_cluster, c_uint32, c_uint32, _u64p]),
    "gpusched_cluster_domain_free_nodes": (c_int, [_cluster, c_uint32, c_uint32, _u32p]),
    "gpusched_cluster_domain_nodes_with_free": (c_int, [_cluster, c_uint32, c_uint32, c_uint32,
                                                        _u32p]),
    "gpusched_cluster_domain_histogram": (c_int, [_cluster, c_uint32, c_uint32, _u32p, c_uint32,
                                                  _u32p]),
    "gpusched_cluster_frag": (c_int, [_cluster, c_uint32, _u32p, _u64p, _u64p]),
    "gpusched_cluster_frag_shared": (c_int, [_cluster, _u64p, _u64p]),
    "gpusched_cluster_allocate": (c_int, [_cluster, _jobp, c_uint32, _u32p, _u64p]),
    "gpusched_cluster_release": (c_int, [_cluster, c_uint64]),
    "gpusched_cluster_job_update": (c_int, [_cluster, _jobp]),
    "gpusched_cluster_job_count": (c_uint32, [_cluster]),
    "gpusched_cluster_job_at": (c_int, [_cluster, c_uint32, _u64p]),
    "gpusched_cluster_job_find": (c_int, [_cluster, c_uint64, _jobp]),
    "gpusched_cluster_job_allocation": (c_int, [_cluster, c_uint64, P(_u32p), P(_u64p), _u32p, _u32p]),
    "gpusched_cluster_reserve": (c_int, [_cluster, c_uint64, c_uint32, _u32p, _u64p]),
    "gpusched_cluster_release_to_resv": (c_int, [_cluster, c_uint64, c_uint64]),
    "gpusched_cluster_unreserve": (c_int, [_cluster, c_uint64]),
    "gpusched_cluster_resv_count": (c_uint32, [_cluster]),
    "gpusched_cluster_resv_at": (c_int, [_cluster, c_uint32, _u64p]),
    "gpusched_cluster_resv_allocation": (c_int, [_cluster, c_uint64, P(_u32p), P(_u64p), _u32p,
                                            _u32p]),
    "gpusched_cluster_check": (c_int, [_cluster]),
    "gpusched_cluster_snapshot": (c_int, [_cluster, c_void_p, c_size_t, _sizep]),
    "gpusched_cluster_restore": (c_int, [c_void_p, c_size_t, _alloc, P(_cluster), c_char_p,
                                         c_size_t]),
    "gpusched_cluster_journal_start": (c_int, [_cluster, c_void_p, c_void_p]),
    "gpusched_cluster_journal_stop": (c_int, [_cluster]),
    "gpusched_cluster_journal_view": (c_int, [_cluster, P(c_void_p), _sizep]),
    "gpusched_cluster_journal_clear": (c_int, [_cluster]),
    "gpusched_cluster_journal_apply": (c_int, [_cluster, c_void_p, c_size_t, _u32p]),
    "gpusched_cluster_replay": (c_int, [c_void_p, c_size_t, c_void_p, c_size_t, _alloc, P(_cluster),
                                        c_char_p, c_size_t]),
    # gang placement (place.h)
    "gpusched_placer_new": (c_int, [_cluster, _alloc, P(_placer)]),
    "gpusched_placer_free": (None, [_placer]),
    "gpusched_placer_errmsg": (c_char_p, [_placer]),
    "gpusched_placer_place": (c_int, [_placer, P(PlaceRequest), _result]),
    "gpusched_placer_place_batch": (c_int, [_placer, c_uint32, P(P(PlaceRequest)), P(_result),
                                            _u32p]),
    "gpusched_placer_workload_set": (c_int, [_placer, c_uint32, P(P(PlaceRequest)), _dblp]),
    "gpusched_place_result_new": (c_int, [_alloc, P(_result)]),
    "gpusched_place_result_free": (None, [_result]),
    "gpusched_place_result_reason": (c_uint32, [_result]),
    "gpusched_place_result_message": (c_char_p, [_result]),
    "gpusched_place_result_committed": (c_int, [_result]),
    "gpusched_place_result_nodes": (c_int, [_result, P(_u32p), P(_u64p), _u32p]),
    "gpusched_place_result_pods": (c_int, [_result, P(_u32p), _u32p]),
    "gpusched_place_result_domains": (c_int, [_result, c_uint32, P(_u32p), _u32p]),
    "gpusched_place_result_locality": (c_int, [_result, P(_u32p), _u32p]),
    # preemption planning (preempt.h)
    "gpusched_preempt_plan_new": (c_int, [_alloc, P(_plan)]),
    "gpusched_preempt_plan_free": (None, [_plan]),
    "gpusched_placer_preempt": (c_int, [_placer, P(PlaceRequest), _result, _plan]),
    "gpusched_preempt_plan_victims": (c_int, [_plan, P(_u64p), _u32p]),
    "gpusched_preempt_plan_totals": (c_int, [_plan, _u64p, _u64p]),
    "gpusched_preempt_plan_optimality": (c_int, [_plan, _u32p, _u64p]),
    "gpusched_preempt_plan_protected": (c_int, [_plan, _u32p, _u64p, _i64p]),
    "gpusched_placer_move": (c_int, [_placer, c_uint64, c_uint32, _result]),
    "gpusched_placer_defrag": (c_int, [_placer, P(PlaceRequest), _result, _plan]),
    "gpusched_preempt_plan_move_count": (c_uint32, [_plan]),
    "gpusched_preempt_plan_move": (c_int, [_plan, c_uint32, _u64p, P(_u32p), P(_u64p), _u32p]),
    # the scheduling cycle (sched.h)
    "gpusched_sched_new": (c_int, [_cluster, _alloc, P(_sched)]),
    "gpusched_sched_free": (None, [_sched]),
    "gpusched_sched_errmsg": (c_char_p, [_sched]),
    "gpusched_sched_param_set": (c_int, [_sched, c_uint32, c_int64]),
    "gpusched_sched_param_get": (c_int, [_sched, c_uint32, _i64p]),
    "gpusched_sched_param_bounds": (c_int, [c_uint32, _i64p, _i64p]),
    "gpusched_sched_queue_add": (c_int, [_sched, P(SchedQueue), _u32p]),
    "gpusched_sched_queue_parent_set": (c_int, [_sched, c_uint32, c_uint32]),
    "gpusched_sched_queue_quota_set": (c_int, [_sched, c_uint32, c_uint32, c_uint64, c_uint64,
                                               c_uint64]),
    "gpusched_sched_queue_find": (c_int, [_sched, c_char_p, _u32p]),
    "gpusched_sched_queue_count": (c_uint32, [_sched]),
    "gpusched_sched_queue_name": (c_char_p, [_sched, c_uint32]),
    "gpusched_sched_queue_usage": (c_int, [_sched, c_uint32, c_uint32, _u64p, _u64p, _dblp, _dblp,
                                           _u32p]),
    "gpusched_sched_submit": (c_int, [_sched, P(SchedJob)]),
    "gpusched_sched_cancel": (c_int, [_sched, c_uint64]),
    "gpusched_sched_job_end": (c_int, [_sched, c_uint64, c_int64]),
    "gpusched_sched_node_health_set": (c_int, [_sched, c_uint32, c_uint32, c_int64]),
    "gpusched_sched_job_state": (c_int, [_sched, c_uint64, _u32p, P(SchedWait)]),
    "gpusched_sched_counts": (c_int, [_sched, _u32p, _u32p]),
    "gpusched_sched_cycle": (c_int, [_sched, c_int64, _decisions]),
    "gpusched_sched_check": (c_int, [_sched]),
    "gpusched_sched_decisions_new": (c_int, [_alloc, P(_decisions)]),
    "gpusched_sched_decisions_free": (None, [_decisions]),
    "gpusched_sched_decisions_quiet": (c_int, [_decisions]),
    "gpusched_sched_decisions_starts": (c_int, [_decisions, P(_u64p), _u32p]),
    "gpusched_sched_decisions_start": (c_int, [_decisions, c_uint32, _u64p, _u32p, P(_u32p),
                                               P(_u64p), _u32p]),
    "gpusched_sched_decisions_evictions": (c_int, [_decisions, P(_u64p), P(_u64p), _u32p]),
    "gpusched_sched_decisions_reservation_count": (c_uint32, [_decisions]),
    "gpusched_sched_decisions_reservation": (c_int, [_decisions, c_uint32, _u64p, _i64p, _u32p,
                                                     _u32p, P(_u32p), _u32p]),
    "gpusched_sched_decisions_wait_count": (c_uint32, [_decisions]),
    "gpusched_sched_decisions_wait": (c_int, [_decisions, c_uint32, P(SchedWait)]),
    "gpusched_sched_decisions_wait_message": (c_char_p, [_decisions, c_uint32]),
    # fair-share queue (fairq.h)
    "gpusched_fairq_new": (c_int, [c_uint32, _alloc, P(_fairq)]),
    "gpusched_fairq_free": (None, [_fairq]),
    "gpusched_fairq_errmsg": (c_char_p, [_fairq]),
    "gpusched_fairq_param_set": (c_int, [_fairq, c_uint32, c_double]),
    "gpusched_fairq_param_get": (c_int, [_fairq, c_uint32, _dblp]),
    "gpusched_fairq_param_bounds": (c_int, [c_uint32, _dblp, _dblp]),
    "gpusched_fairq_policy_set": (c_int, [_fairq, c_uint32]),
    "gpusched_fairq_tenant_weight_set": (c_int, [_fairq, c_uint32, c_double]),
    "gpusched_fairq_tenant_get": (c_int, [_fairq, c_uint32, c_uint32, _dblp]),
    "gpusched_fairq_enqueue": (c_int, [_fairq, P(FairqTask)]),
    "gpusched_fairq_enqueue_batch": (c_int, [_fairq, c_uint32, _u64p, _u32p, _u8p, _dblp, _dblp]),
    "gpusched_fairq_cancel": (c_int, [_fairq, c_uint64]),
    "gpusched_fairq_poll": (c_int, [_fairq, c_double, c_uint64, _u64p, P(FairqDecision)]),
    "gpusched_fairq_peek": (c_int, [_fairq, c_double, c_uint64, _u64p, P(FairqDecision)]),
    "gpusched_fairq_poll_batch": (c_int, [_fairq, c_double, c_uint32, _u64p, _u64p, _u8p,
                                          _u32p]),
    "gpusched_fairq_complete": (c_int, [_fairq, c_uint64, c_double]),
    "gpusched_fairq_predict": (c_int, [_fairq, c_uint32, c_uint32, c_double, _dblp]),
    "gpusched_fairq_count": (c_int, [_fairq, _u64p, _u64p]),
    "gpusched_fairq_simd": (c_int, [_fairq, _u32p]),
    "gpusched_fairq_log_records": (c_int, [_fairq, P(P(FairqDecision)), _u64p]),
    "gpusched_fairq_log_clear": (c_int, [_fairq]),
    "gpusched_fairq_log_save": (c_int, [_fairq, c_char_p]),
    "gpusched_fairq_log_read": (c_int, [c_char_p, _alloc, P(_log), c_char_p, c_size_t]),
    "gpusched_fairq_log_view": (c_int, [_log, P(P(FairqDecision)), _u64p]),
    "gpusched_fairq_log_free": (None, [_log]),
}


class _Missing:
    """Stands in for a C function the loaded library does not export (a
    module that has not landed in this build): calling it raises."""

    def __init__(self, name: str, path: str) -> None:
        self.__name__ = name
        self._path = path

    def __call__(self, *args: Any) -> NoReturn:
        raise NotImplementedError(
            f"{self.__name__} is not exported by {self._path} (that part of "
            f"libgpusched is not in this build)")


def _candidates() -> List[str]:
    """Where the library is looked for, in order (doc/python.md, "Loading")."""
    here = os.path.dirname(os.path.abspath(__file__))
    # 1. Bundled: pip install . puts the library inside the package, built
    #    from the same sources as these modules; nothing else matches it as
    #    surely.
    bundled = os.path.join(here, SONAME)
    if os.path.exists(bundled):
        return [bundled]
    # 2. GPUSCHED_LIBRARY: an explicit choice is not second-guessed, no
    #    silent fallback.
    env = os.environ.get("GPUSCHED_LIBRARY")
    if env:
        return [env]
    # 3. Beside the package's folder (python/ of a build), then the system.
    paths = [p for p in [os.path.join(os.path.dirname(here), SONAME)] if os.path.exists(p)]
    paths.append(SONAME)
    found = ctypes.util.find_library("gpusched")
    if found:
        paths.append(found)
    return paths


def _open() -> Tuple[ctypes.CDLL, str]:
    errors = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            errors.append(f"  {path}: {e}")
    raise LibraryError(
        "cannot load libgpusched (set GPUSCHED_LIBRARY to the path of "
        f"{SONAME}); tried:\n" + "\n".join(errors))


def decode_version(v: int) -> Tuple[int, int, int]:
    """Splits a version encoded by GPUSCHED_VERSION_ENCODE() into a tuple."""
    return (v >> 16) & 0xffff, (v >> 8) & 0xff, v & 0xff


def check_version(found: Tuple[int, ...], path: str = "libgpusched") -> None:
    """Raises LibraryError unless a library of version `found` (a tuple) can
    serve this binding: same major version, minor at least the binding's."""
    want = BINDING_VERSION
    if found[0] != want[0] or found[1] < want[1]:
        raise LibraryError(
            f"{path} is libgpusched {'.'.join(map(str, found))}, but this binding "
            f"needs {want[0]}.{want[1]}.x or a later {want[0]}.y "
            f"(same major version, minor >= {want[1]})")


class Library:
    """The loaded shared object with every function of FUNCTIONS declared.

    Attributes: one per C function (name without the ``gpusched_`` prefix),
    ``path``, ``version_info`` (tuple), ``missing`` (names not exported).
    """

    def __init__(self) -> None:
        self.cdll, self.path = _open()
        self.missing: Set[str] = set()
        for name, (restype, argtypes) in FUNCTIONS.items():
            try:
                fn = getattr(self.cdll, name)
            except AttributeError:
                self.missing.add(name)
                fn = _Missing(name, self.path)
            else:
                fn.restype = restype
                fn.argtypes = argtypes
            setattr(self, name[len("gpusched_"):], fn)
        if "gpusched_version" in self.missing:
            raise LibraryError(f"{self.path} is not libgpusched (no gpusched_version)")
        self.version_info = decode_version(self.version())
        check_version(self.version_info, self.path)

    def raise_error(self, rc: int, message: Union[str, bytes, None] = None,
                    function: Optional[str] = None) -> NoReturn:
        """Raises the exception class of `rc` with the library's message."""
        name = (self.err_name(rc) or b"GPUSCHED_UNKNOWN").decode()
        if isinstance(message, bytes):
            message = message.decode("utf-8", "replace")
        if not message:
            message = (self.strerror(rc) or b"unknown error").decode()
        raise error_class(rc)(rc, name, message, function)

    def check(self, rc: int, errmsg: Optional[Callable[[Any], Union[str, bytes, None]]] = None,
              handle: Any = None, function: Optional[str] = None) -> int:
        """Returns `rc` when it is not negative; otherwise raises, taking the
        message from ``errmsg(handle)`` when given."""
        if rc >= 0:
            return rc
        message = errmsg(handle) if errmsg is not None else None
        self.raise_error(rc, message, function)


    def __getattr__(self, name: str) -> Any:
        # Every C function is set as an attribute in __init__; this tells
        # type checkers that such attributes exist.
        raise AttributeError(name)


lib = Library()
