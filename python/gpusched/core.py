"""Core: version, error texts, CPU features and SIMD paths (common.h)."""
from __future__ import annotations

import ctypes
import enum
from typing import List, Tuple

from . import _util as u
from ._lib import lib

__all__ = ["version", "version_string", "library_path", "strerror", "err_name",
           "cpu_features", "simd_compiled", "simd_name", "enum_bounds", "CpuFeature", "Simd",
           "SIMD_PATHS", "ENUM_SIMD", "ENUM_NODE_HEALTH", "ENUM_GPU_STATE", "ENUM_SPLIT",
           "ENUM_REASON", "ENUM_FAIRQ_PARAM", "ENUM_FAIRQ_POLICY", "ENUM_FAIRQ_TENANT",
           "ENUM_PREEMPT_POLICY"]


class CpuFeature(enum.IntFlag):
    """Bits of the mask :func:`cpu_features` reports (``GPUSCHED_CPU_*``)."""
    SSE2 = 1 << 0
    AVX2 = 1 << 1
    AVX512 = 1 << 2
    NEON = 1 << 3


class Simd(enum.IntEnum):
    """The SIMD paths (``GPUSCHED_SIMD_*``); :func:`simd_name` names them.
    SSE2 is reserved: no module has an SSE2 kernel."""
    SCALAR = 0
    SSE2 = 1
    AVX2 = 2
    AVX512 = 3
    NEON = 4


#: SIMD path names by :class:`Simd` value.
SIMD_PATHS: Tuple[str, ...] = tuple(s.name.lower() for s in Simd)


def version() -> Tuple[int, int, int]:
    """The loaded library's version as a (major, minor, micro) tuple."""
    return lib.version_info


def version_string() -> str:
    """The loaded library's version as ``"MAJOR.MINOR.MICRO"``."""
    return lib.version_string().decode()


def library_path() -> str:
    """The path the shared library was loaded from."""
    return lib.path


def strerror(code: int) -> str:
    """The English description of an error code."""
    return lib.strerror(u.integer("code", code, -2**31, 2**31 - 1)).decode()


def err_name(code: int) -> str:
    """The symbolic name of an error code, for example ``"GPUSCHED_ENOSPC"``."""
    return lib.err_name(u.integer("code", code, -2**31, 2**31 - 1)).decode()


def cpu_features() -> Tuple[int, str]:
    """Returns ``(detected, chosen)``: the :class:`CpuFeature` bit mask of this
    CPU and the name of the SIMD path the library would choose now (the
    environment variable ``GPUSCHED_SIMD`` can force one)."""
    detected, chosen = ctypes.c_uint32(), ctypes.c_uint32()
    lib.check(lib.cpu_features(ctypes.byref(detected), ctypes.byref(chosen)),
              function="gpusched_cpu_features")
    return detected.value, simd_name(chosen.value)


def simd_compiled() -> List[str]:
    """The names of the SIMD paths compiled into this build."""
    mask = lib.simd_compiled()
    return [simd_name(p) for p in u.mask_to_gpus(mask)]


def simd_name(simd: int) -> str:
    """The name of a SIMD path number (``"unknown"`` if there is none)."""
    return lib.simd_name(u.u32("simd", simd)).decode()


#: The enumerations :func:`enum_bounds` knows (``GPUSCHED_ENUM_*``,
#: ``gpusched_enum`` in common.h), each mirrored by an IntEnum: :class:`Simd`,
#: :class:`~gpusched.NodeHealth`, :class:`~gpusched.GpuState`,
#: :class:`~gpusched.Split`, :class:`~gpusched.PlaceReason`,
#: :class:`~gpusched.Param`, :class:`~gpusched.Policy`,
#: :class:`~gpusched.TenantValue`, :class:`~gpusched.PreemptPolicy`.
ENUM_SIMD, ENUM_NODE_HEALTH, ENUM_GPU_STATE, ENUM_SPLIT, ENUM_REASON = 1, 2, 3, 4, 5
ENUM_FAIRQ_PARAM, ENUM_FAIRQ_POLICY, ENUM_FAIRQ_TENANT = 6, 7, 8
ENUM_PREEMPT_POLICY = 9


def enum_bounds(which: int) -> Tuple[int, int]:
    """``(first, last)``: the range of one of the library's enumerations
    (an ``ENUM_*`` value), as the loaded library knows it (values are only
    ever appended)."""
    first, last = ctypes.c_uint32(), ctypes.c_uint32()
    lib.check(lib.enum_bounds(u.u32("which", which), ctypes.byref(first), ctypes.byref(last)),
              function="gpusched_enum_bounds")
    return first.value, last.value
