"""Warnings raised under emulation point where they would without it.

A warning names the frame its ``stacklevel`` reaches. Under emulation, gpudoc's frames sit
between the user's call and the kernel (the tensor's ``__torch_function__``, the dispatch that
re-runs the call), so torch's warnings would name ``gpudoc/emulate/scope.py`` instead of the
user's line. This moves such a warning to the frame a plain run would name.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TextIO

_GPUDOC_DIR = str(Path(__file__).resolve().parent.parent) + os.sep  # not gpudoc_x/


def _is_gpudoc(filename: str) -> bool:
    return filename.startswith(_GPUDOC_DIR)


def plain_origin(frame: FrameType | None) -> FrameType | None:
    """The frame a run without gpudoc would name, walking out from ``frame``: past gpudoc's
    frames, and past torch's ``handle_torch_function`` with the torch function that called it
    (the same function runs again inside gpudoc, which is where the warning came from)."""
    while frame is not None and _is_gpudoc(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is not None and frame.f_code.co_name == "handle_torch_function":
        frame = frame.f_back  # torch.overrides.handle_torch_function
        frame = frame.f_back if frame is not None else None  # the torch function it serves
    return frame


@contextmanager
def warnings_from_user_code() -> Iterator[None]:
    """While active, a warning located in gpudoc's code is shown at the plain run's frame."""
    shown = warnings.showwarning

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        if _is_gpudoc(filename):
            origin = plain_origin(_frame_at(filename, lineno))
            if origin is not None:
                filename, lineno, line = origin.f_code.co_filename, origin.f_lineno, None
        shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        yield
    finally:
        if warnings.showwarning is show:  # the script may have replaced it: then keep its own
            warnings.showwarning = shown


def _frame_at(filename: str, lineno: int) -> FrameType | None:
    """The frame of the running stack that the warning names."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == filename and frame.f_lineno == lineno:
            return frame
        frame = frame.f_back
    return None


__all__ = ["plain_origin", "warnings_from_user_code"]
