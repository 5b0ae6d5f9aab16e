"""Where tensors came from: the user's file and line where each was created, loaded or moved.

Origins are plain attributes on the tensor objects (``_gpudoc_origin``), written only at the
moments that matter (a move, a factory called from user code, a DataLoader batch, a parameter's
registration), never per operation.
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path
from types import FrameType
from typing import Any

import torch

from gpudoc.emulate.state import STATE

_LIBRARY_ROOTS = tuple(
    {
        str(Path(torch.__file__).resolve().parent),
        str(Path(__file__).resolve().parent.parent),
        *(sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")),
    }
)
_is_user_file: dict[str, bool] = {}
# storage data pointer -> emulated index, for torch.save (tagger) and torch.load (deserializer)
saved_storages: dict[int, int] = {}
loaded_storages: dict[int, int] = {}


def is_user_file(filename: str) -> bool:
    known = _is_user_file.get(filename)
    if known is None:
        resolved = filename if filename.startswith("<") else str(Path(filename).resolve())
        known = not resolved.startswith("<") and not resolved.startswith(_LIBRARY_ROOTS)
        _is_user_file[filename] = known
    return known


def user_frame(start: FrameType | None = None) -> FrameType | None:
    """The innermost frame that runs the user's own code (not torch, not gpudoc, not stdlib)."""
    frame = start if start is not None else sys._getframe(1)
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def user_location() -> tuple[str, int] | None:
    frame = user_frame(sys._getframe(1))
    return None if frame is None else (frame.f_code.co_filename, frame.f_lineno)


def set_origin(tensor: Any, verb: str, where: tuple[str, int] | None = None) -> None:
    """Remember how and where (user file, line) a tensor got where it is."""
    location = where if where is not None else user_location()
    if location is not None:
        try:
            tensor._gpudoc_origin = (verb, location[0], location[1])
        except (AttributeError, RuntimeError):
            pass


def origin(tensor: Any) -> tuple[str, str, int] | None:
    value = getattr(tensor, "_gpudoc_origin", None)
    return value if isinstance(value, tuple) else None


def note_move(source: torch.Tensor, result: torch.Tensor, target: int | None) -> None:
    """A tensor was copied to another device: count it and date the copy."""
    STATE.tensors_moved += 1
    where = user_location()
    verb = "moved to cpu" if target is None else f"moved to cuda:{target}"
    set_origin(result, verb, where)
    if target is not None and where is not None:
        # Kept on the source: if the copy is discarded, the report can say where it was made.
        try:
            source._gpudoc_copied_at = (where[0], where[1], target)  # type: ignore[attr-defined]
        except (AttributeError, RuntimeError):
            pass


def mark_saved_storage(inner: torch.Tensor, index: int) -> None:
    saved_storages[inner.untyped_storage().data_ptr()] = index


def tag_saved_storage(storage: Any) -> str | None:
    """torch.save tagger: storages of emulated tensors are saved as ``cuda:N``."""
    index = saved_storages.get(storage.data_ptr()) if storage.data_ptr() else None
    return None if index is None else f"cuda:{index}"


def restore_storage(storage: Any, location: str) -> Any:
    """torch.load deserializer for ``cuda`` locations: keep the bytes on the CPU, remember."""
    if not location.startswith("cuda"):
        return None
    from gpudoc.emulate.tensor import target_index

    index = target_index(torch.device(location))
    if storage.data_ptr():
        loaded_storages[storage.data_ptr()] = index
    return storage
