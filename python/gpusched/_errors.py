"""Exceptions: one class per error class of the C library."""
from __future__ import annotations

from typing import Dict, Optional, Type

__all__ = [
    "Error", "LibraryError", "InvalidArgument", "OutOfRange", "UnknownFields",
    "NotSupported", "OutOfMemory", "LimitExceeded", "NotFound", "AlreadyExists",
    "Busy", "WrongState", "Empty", "DoesNotFit", "ParseError", "CorruptData",
    "UnsupportedVersion", "IOFailure", "UnknownError",
]


class LibraryError(ImportError):
    """libgpusched could not be loaded, or the loaded library is too old or
    of another major version than this binding was written for."""


class Error(Exception):
    """Base of every error the C library reports.

    Attributes:
        code: the negative ``GPUSCHED_E*`` code the C function returned.
        name: its symbolic name, for example ``"GPUSCHED_ENOSPC"``.
        message: the detail the library gave (the handle's last error
            message), or the generic text of the code when there is none.
        function: the C function that failed.
    """

    code: Optional[int] = None

    def __init__(self, code: int, name: str, message: str, function: Optional[str] = None) -> None:
        super().__init__(f"{name}: {message}")
        self.code = code
        self.name: str = name
        self.message: str = message
        self.function: Optional[str] = function


class InvalidArgument(Error):
    """GPUSCHED_EINVAL: an argument is invalid."""
    code = -1


class OutOfRange(Error):
    """GPUSCHED_ERANGE: a value is out of its range."""
    code = -2


class UnknownFields(Error):
    """GPUSCHED_E2BIG: a request struct has unknown non-zero trailing bytes."""
    code = -3


class NotSupported(Error):
    """GPUSCHED_ENOTSUP: not supported here (for example a forced SIMD path)."""
    code = -4


class OutOfMemory(Error):
    """GPUSCHED_ENOMEM: an allocation failed."""
    code = -10


class LimitExceeded(Error):
    """GPUSCHED_ELIMIT: a documented library limit would be exceeded."""
    code = -11


class NotFound(Error):
    """GPUSCHED_ENOENT: the named object does not exist."""
    code = -20


class AlreadyExists(Error):
    """GPUSCHED_EEXIST: the object already exists."""
    code = -21


class Busy(Error):
    """GPUSCHED_EBUSY: the resource is in use."""
    code = -22


class WrongState(Error):
    """GPUSCHED_ESTATE: the handle is in the wrong state for this call."""
    code = -23


class Empty(Error):
    """GPUSCHED_EEMPTY: nothing to return (for example no eligible task)."""
    code = -24


class DoesNotFit(Error):
    """GPUSCHED_ENOSPC: the request does not fit; the message says why."""
    code = -30


class ParseError(Error):
    """GPUSCHED_EPARSE: text does not parse; the message has line and column."""
    code = -40


class CorruptData(Error):
    """GPUSCHED_ECORRUPT: binary input is truncated, corrupt or inconsistent."""
    code = -41


class UnsupportedVersion(Error):
    """GPUSCHED_EVERSION: binary input has an unsupported format version."""
    code = -42


class IOFailure(Error):
    """GPUSCHED_EIO: a read or a write failed."""
    code = -43


class UnknownError(Error):
    """A code this binding does not know (a newer library)."""


_BY_CODE: Dict[int, Type[Error]] = {cls.code: cls for cls in (
    InvalidArgument, OutOfRange, UnknownFields, NotSupported, OutOfMemory,
    LimitExceeded, NotFound, AlreadyExists, Busy, WrongState, Empty,
    DoesNotFit, ParseError, CorruptData, UnsupportedVersion, IOFailure) if cls.code is not None}


def error_class(code: int) -> Type[Error]:
    """Returns the exception class for a negative C error code."""
    return _BY_CODE.get(code, UnknownError)
