"""Calls into NVML (pynvml, or a fake in tests) that never raise: a failed read is None plus a
`FieldError` saying why.

Two ways a function can be missing, which need opposite fixes: the driver's libnvidia-ml lacks
it (pynvml raises NVMLError_FunctionNotFound: the binding is newer than the driver), or the
Python binding itself has no such function (`NOT_IN_BINDING`: the binding is older than gpudoc).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpudoc.info.model import FieldError

NOT_IN_BINDING = "NotInBinding"
"""FieldError.error when the installed pynvml module has no such function."""
NOT_IN_DRIVER = ("FunctionNotFound", "NVMLLibraryMismatchError")
"""FieldError.error values that mean the driver's NVML library lacks the function."""
MISSING = ("FunctionNotFound", NOT_IN_BINDING)
"""Errors after which `Reader.first` tries an older entry point."""


def error_name(error: BaseException) -> str:
    """`NVMLError_NotSupported` -> `NotSupported`; other exceptions keep their class name."""
    name = type(error).__name__
    if name.startswith("NVMLError_"):
        return name[len("NVMLError_") :]
    if name == "NVMLError":
        return f"NVMLError({getattr(error, 'value', '?')})"
    return name


class Reader:
    """Calls NVML functions; failures become None plus a FieldError, never an exception."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib
        self.errors: list[FieldError] = []
        self.lost = False
        self.reset_required = False  # some call answered ResetRequired

    def get(self, field: str, function: str, *args: Any, expected: tuple[str, ...] = ()) -> Any:
        """`function(*args)`, or None; errors named in `expected` are answers, not failures."""
        if self.lost:
            return None  # every further call on a lost GPU raises GpuIsLost again
        call: Callable[..., Any] | None = getattr(self.lib, function, None)
        if call is None:
            # The Python binding predates the function; the driver may well have it.
            self.errors.append(FieldError(field, NOT_IN_BINDING))
            return None
        try:
            return call(*args)
        except Exception as error:  # NVMLError, NVMLLibraryMismatchError, ctypes trouble
            name = error_name(error)
            if name in expected:
                return None
            self.errors.append(FieldError(field, name))
            self.lost = self.lost or name == "GpuIsLost"
            self.reset_required = self.reset_required or name == "ResetRequired"
            return None

    def first(self, field: str, *calls: tuple[str, tuple[Any, ...]]) -> Any:
        """Try newer entry points first; fall back only when the driver or binding lacks one."""
        for function, args in calls:
            before = len(self.errors)
            value = self.get(field, function, *args)
            failures = self.errors[before:]
            if not failures or failures[0].error not in (*MISSING, "TypeError"):
                return value
            del self.errors[before:]
        return None
