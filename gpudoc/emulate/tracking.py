"""Where tensors came from: the user's file and line where each was created, loaded or moved.

Origins are plain attributes on the tensor objects (``_gpudoc_origin``), written only at the
moments that matter (a move, a factory called from user code, a DataLoader batch, a parameter's
registration), never per operation.
"""

from __future__ import annotations

import contextlib
import sys
import sysconfig
from pathlib import Path
from types import FrameType
from typing import Any

import torch

from gpudoc.emulate.cuda_api import index_of
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
    frame: FrameType | None = start if start is not None else sys._getframe(1)
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


Location = tuple[str, int, str]  # file, line, function


def user_location(start: FrameType | None = None) -> Location | None:
    frame = user_frame(start if start is not None else sys._getframe(1))
    return None if frame is None else _location(frame)


def where_text() -> str | None:
    """``file:line`` of the user's code calling in, for the phase summary."""
    location = user_location(sys._getframe(1))
    return None if location is None else f"{location[0]}:{location[1]}"


def _location(frame: FrameType) -> Location:
    return (frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)


def construction_site() -> Location | None:
    """The user line that built a module: past its (and its parents') ``__init__`` frames."""
    frame = user_frame(sys._getframe(1))
    while frame is not None and frame.f_code.co_name == "__init__":
        owner = frame.f_locals.get("self")
        if not isinstance(owner, torch.nn.Module):
            break
        above = user_frame(frame.f_back) if frame.f_back is not None else None
        if above is None:
            break
        frame = above
    return None if frame is None else _location(frame)


def set_origin(tensor: Any, verb: str, where: Location | None = None) -> None:
    """Remember how and where (user file, line, function) a tensor got where it is."""
    location = where if where is not None else user_location(sys._getframe(1))
    if location is not None:
        try:  # not contextlib.suppress: this runs for every tensor a Dataset makes
            tensor._gpudoc_origin = (verb, *location)
        except (AttributeError, RuntimeError):
            return  # a tensor that takes no attributes


def origin(tensor: Any) -> tuple[str, str, int, str] | None:
    value = getattr(tensor, "_gpudoc_origin", None)
    return value if isinstance(value, tuple) else None


def note_move(source: torch.Tensor, result: torch.Tensor, target: int | None) -> None:
    """A tensor was copied to another device: count it and date the copy."""
    STATE.tensors_moved += 1
    where = user_location(sys._getframe(1))
    verb = "moved to cpu" if target is None else f"moved to cuda:{target}"
    set_origin(result, verb, where)
    if target is not None and where is not None:
        # Kept on the source: if the copy is discarded, the report can say where it was made.
        with contextlib.suppress(AttributeError, RuntimeError):
            source._gpudoc_copied_at = (*where, target)


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
    index = index_of(torch.device(location))
    if storage.data_ptr():
        loaded_storages[storage.data_ptr()] = index
    return storage
