"""Core: version, error texts, CPU features and SIMD paths (common.h)."""
import ctypes

from . import _util as u
from ._lib import lib

__all__ = ["version", "version_string", "library_path", "strerror", "err_name",
           "cpu_features", "simd_compiled", "simd_name", "CpuFeature", "SIMD_PATHS"]

#: SIMD path names by gpusched_simd value.
SIMD_PATHS = ("scalar", "sse2", "avx2", "avx512", "neon")


class CpuFeature:
    """Bits of the mask :func:`cpu_features` reports."""
    SSE2 = 1 << 0
    AVX2 = 1 << 1
    AVX512 = 1 << 2
    NEON = 1 << 3


def version():
    """The loaded library's version as a (major, minor, micro) tuple."""
    return lib.version_info


def version_string():
    """The loaded library's version as ``"MAJOR.MINOR.MICRO"``."""
    return lib.version_string().decode()


def library_path():
    """The path the shared library was loaded from."""
    return lib.path


def strerror(code):
    """The English description of an error code."""
    return lib.strerror(u.integer("code", code, -2**31, 2**31 - 1)).decode()


def err_name(code):
    """The symbolic name of an error code, for example ``"GPUSCHED_ENOSPC"``."""
    return lib.err_name(u.integer("code", code, -2**31, 2**31 - 1)).decode()


def cpu_features():
    """Returns ``(detected, chosen)``: the :class:`CpuFeature` bit mask of this
    CPU and the name of the SIMD path the library would choose now (the
    environment variable ``GPUSCHED_SIMD`` can force one)."""
    detected, chosen = ctypes.c_uint32(), ctypes.c_uint32()
    lib.check(lib.cpu_features(ctypes.byref(detected), ctypes.byref(chosen)),
              function="gpusched_cpu_features")
    return detected.value, simd_name(chosen.value)


def simd_compiled():
    """The names of the SIMD paths compiled into this build."""
    mask = lib.simd_compiled()
    return [simd_name(p) for p in u.mask_to_gpus(mask)]


def simd_name(simd):
    """The name of a SIMD path number (``"unknown"`` if there is none)."""
    return lib.simd_name(u.u32("simd", simd)).decode()


#: The enumerations :func:`enum_bounds` knows (``gpusched_enum`` in common.h).
ENUM_SIMD, ENUM_NODE_HEALTH, ENUM_GPU_STATE, ENUM_SPLIT, ENUM_REASON = 1, 2, 3, 4, 5
ENUM_FAIRQ_PARAM, ENUM_FAIRQ_POLICY, ENUM_FAIRQ_TENANT = 6, 7, 8


def enum_bounds(which):
    """``(first, last)``: the range of one of the library's enumerations, as
    the loaded library knows it (values are only ever appended)."""
    first, last = ctypes.c_uint32(), ctypes.c_uint32()
    lib.check(lib.enum_bounds(u.u32("which", which), ctypes.byref(first), ctypes.byref(last)),
              function="gpusched_enum_bounds")
    return first.value, last.value
