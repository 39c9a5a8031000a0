"""Argument checking shared by the classes: a wrong type raises TypeError and
an out-of-range value ValueError before anything reaches C (ctypes would
silently truncate a too-large integer)."""
from __future__ import annotations

import array
import ctypes
import math
import operator
import weakref
from typing import Any, Callable, Iterable, List, Literal, Optional, Tuple, TypeVar, Union

_H = TypeVar("_H", bound="Handle")

U8_MAX = 0xff
U32_MAX = 0xffffffff
U64_MAX = 0xffffffffffffffff
I32_MIN, I32_MAX = -0x80000000, 0x7fffffff
I64_MIN, I64_MAX = -0x8000000000000000, 0x7fffffffffffffff


def integer(name: str, value: Any, lo: int, hi: int) -> int:
    """Checks that `value` is an integer (int or anything with __index__,
    not bool) in [lo, hi] and returns it as int."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, not bool")
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}") from None
    if not lo <= v <= hi:
        raise ValueError(f"{name} = {v} is out of range [{lo}, {hi}]")
    return v


def u32(name: str, value: Any, hi: int = U32_MAX) -> int:
    """An unsigned 32-bit integer, at most `hi`."""
    return integer(name, value, 0, hi)


def u64(name: str, value: Any) -> int:
    """An unsigned 64-bit integer."""
    return integer(name, value, 0, U64_MAX)


def i32(name: str, value: Any) -> int:
    """A signed 32-bit integer."""
    return integer(name, value, I32_MIN, I32_MAX)


def i64(name: str, value: Any) -> int:
    """A signed 64-bit integer."""
    return integer(name, value, I64_MIN, I64_MAX)


def real(name: str, value: Any, finite: bool = True) -> float:
    """A float (int accepted); NaN and infinities are rejected when `finite`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    v = float(value)
    if finite and not math.isfinite(v):
        raise ValueError(f"{name} must be finite, not {v}")
    return v


def text(name: str, value: Any, optional: bool = False) -> Optional[bytes]:
    """A str encoded as UTF-8 bytes for C (None allowed when `optional`)."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    b = value.encode("utf-8")
    if b"\0" in b:
        raise ValueError(f"{name} contains a NUL character")
    return b


def strings(name: str, values: Iterable[str]) -> Tuple[Any, int]:
    """A sequence of str as a C array of char pointers, and its length."""
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of str, not a single string")
    try:
        values = list(values)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of str, not {type(values).__name__}") from None
    items = [text(f"{name}[{i}]", v) for i, v in enumerate(values)]
    return (ctypes.c_char_p * max(len(items), 1))(*items), len(items)


def bits(name: str, gpus: Union[int, Iterable[int]], limit: int, what: str = "GPU") -> int:
    """Indices (an iterable of ints) or a mask (int) as a mask within `limit`
    bits. `what` names one index in messages: "GPU" (the default) or, for
    example, "task type"."""
    if isinstance(gpus, bool):
        raise TypeError(f"{name} must be a mask or {what} indices, not bool")
    if hasattr(gpus, "__index__"):
        mask = u64(name, gpus)
        if limit < 64 and mask >> limit:
            raise ValueError(f"{name} = {mask:#x} has bits past {what} {limit - 1}")
        return mask
    mask = 0
    try:
        it = iter(gpus)
    except TypeError:
        raise TypeError(f"{name} must be a mask or {what} indices, not "
                        f"{type(gpus).__name__}") from None
    for g in it:
        g = u32(f"{name}: {what}", g, max(limit - 1, 0))
        if mask >> g & 1:
            raise ValueError(f"{name} lists {what} {g} twice")
        mask |= 1 << g
    return mask


def mask_to_gpus(mask: int) -> List[int]:
    """The GPU indices of a mask, ascending."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


_TYPECODES = {  # ctypes type: (array typecode, accepted buffer formats)
    ctypes.c_uint8: ("B", "B"),
    ctypes.c_uint32: ("I", "IL" if ctypes.sizeof(ctypes.c_ulong) == 4 else "I"),
    ctypes.c_uint64: ("Q", "QL" if ctypes.sizeof(ctypes.c_ulong) == 8 else "Q"),
    ctypes.c_double: ("d", "d"),
}


def column(name: str, values: Any, ctype: Any, n: Optional[int] = None) -> Tuple[Any, int, Any]:
    """Converts a column of values (a sequence, an array.array, or any object
    with the buffer protocol such as a numpy array) into a ctypes array of
    `ctype` for one bulk call. A C-contiguous buffer of the right element type
    is used without a copy; anything else is converted once, at C speed, and
    a value that does not fit the C type raises ValueError. Ranges beyond the
    C type (a tenant past max_tenants, a NaN time) are the library's to
    check: it names the offending index. Returns (ctypes array, length,
    keepalive)."""
    code, formats = _TYPECODES[ctype]
    mv: Optional[memoryview] = None
    keep: Any
    if not isinstance(values, (str, bytes)):
        try:
            mv = memoryview(values)
        except TypeError:
            mv = None
    if mv is not None and mv.ndim == 1 and mv.c_contiguous and \
            mv.format.lstrip("@=<") in formats and mv.itemsize == ctypes.sizeof(ctype):
        count = len(mv)
        if mv.readonly:
            arr = (ctype * count).from_buffer_copy(mv) if count else (ctype * 1)()
        else:
            arr = (ctype * count).from_buffer(mv) if count else (ctype * 1)()
        keep = mv
    else:
        if mv is not None:
            if mv.ndim != 1:
                raise ValueError(f"{name} must be one-dimensional")
            values = mv.tolist()
        try:
            a = array.array(code, values)
        except OverflowError:
            raise ValueError(f"{name} has a value out of range for {ctype.__name__}") from None
        except TypeError as e:
            raise TypeError(f"{name}: {e}") from None
        count = len(a)
        arr = (ctype * count).from_buffer(a) if count else (ctype * 1)()
        keep = a
    if n is not None and count != n:
        raise ValueError(f"{name} has {count} values, expected {n}")
    return arr, count, keep


def read_array(ptr: Any, ctype: Any, n: int) -> List[Any]:
    """Copies `n` elements from a typed C pointer into a list, in one step
    (slicing a ctypes pointer loops in C)."""
    if not n or not ptr:
        return []
    return ptr[:n]


def copy_array(ptr: Any, typecode: str, ctype: Any, n: int) -> array.array:
    """Copies `n` elements from a C pointer into an ``array.array`` with one
    memory copy."""
    out = array.array(typecode)
    if n and ptr:
        out.frombytes(ctypes.string_at(ptr, n * ctypes.sizeof(ctype)))
    return out


class Handle:
    """Owns one C handle: frees it on close(), on leaving a with block, or
    when garbage collected (whichever comes first)."""

    _ptr: Optional[int]

    def _own(self, ptr: Optional[int], free: Callable[..., None], *free_args: Any) -> None:
        self._ptr = ptr
        self._finalizer = weakref.finalize(self, free, ptr, *free_args)

    @property
    def _h(self) -> int:
        ptr: Optional[int] = getattr(self, "_ptr", None)
        if ptr is None:
            raise ValueError(f"operation on a closed {type(self).__name__}")
        return ptr

    @property
    def closed(self) -> bool:
        """True once the handle has been freed."""
        return getattr(self, "_ptr", None) is None

    def close(self) -> None:
        """Frees the C handle now; further use raises ValueError. Calling
        close() again does nothing."""
        if getattr(self, "_ptr", None) is not None:
            self._ptr = None
            self._finalizer()

    def __enter__(self: _H) -> _H:
        return self

    def __exit__(self, *exc: Any) -> Literal[False]:
        self.close()
        return False


def node_range(first: int, count: Optional[int], nnodes: int) -> Tuple[int, int]:
    """`first` and `count` of a node range (count None: to the last node),
    checked against `nnodes`."""
    first = u32("first", first, nnodes)
    if count is None:
        count = nnodes - first
    return first, u32("count", count, nnodes - first)


def out_column(typecode: str, ctype: Any, n: int) -> Tuple[array.array, Any]:
    """A zeroed array.array of `n` items and a ctypes pointer into it (None
    when empty), for a C function to fill in one call."""
    import array
    col = array.array(typecode, bytes(n * ctypes.sizeof(ctype)))
    if col.itemsize != ctypes.sizeof(ctype):
        raise RuntimeError(f"array typecode {typecode!r} is not {ctypes.sizeof(ctype)} bytes here")
    return col, ((ctype * n).from_buffer(col) if n else None)
