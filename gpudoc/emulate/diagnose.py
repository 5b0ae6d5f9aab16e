"""From the first device error to a report: the user's line, the tensors involved (by the user's
own names, with where each was created or moved), and the gpudoc lint rule for the pattern."""

from __future__ import annotations

import linecache
import os
import re
from types import FrameType, TracebackType
from typing import Any

import torch

from gpudoc.emulate import errors, tracking
from gpudoc.emulate.model import DeviceError, SourceLocation, TensorOrigin
from gpudoc.emulate.rules import Found, classify, copy_discarded


def diagnose(error: BaseException) -> DeviceError:
    frames = user_frames(error.__traceback__)
    operands: list[tuple[str, torch.Tensor]] = list(getattr(error, "operands", []))
    found = [_find(tensor, frames) for _, tensor in operands]
    origins = tuple(
        _describe(argument, tensor, facts)
        for (argument, tensor), facts in zip(operands, found, strict=True)
    )
    pattern, code, name = classify(error, operands, found)
    lines = traceback_lines(error.__traceback__)
    locations = [source_location(frame, lines.get(id(frame))) for frame in frames]
    message = str(error).rstrip()
    if isinstance(error, errors.CudaInForkedWorkerError) or errors.from_child(error):
        message, worker_frames = _worker_traceback(message)
        locations += worker_frames
    return DeviceError(
        error_type=_builtin_name(error),
        message=message,
        location=locations[-1] if locations else None,
        called_from=tuple(locations[:-1][-3:]),
        operands=origins,
        pattern=pattern,
        rule_code=code,
        rule_name=name,
    )


_FRAME = re.compile(r'^  File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)$')


def _worker_traceback(message: str) -> tuple[str, list[SourceLocation]]:
    """The worker's traceback as a GPU run prints it (no gpudoc frames), and its user frames."""
    kept: list[str] = []
    user: list[SourceLocation] = []
    skipping = False
    for line in message.splitlines():
        frame = _FRAME.match(line)
        if frame is not None:
            skipping = not tracking.is_user_file(frame["file"]) and _is_gpudoc(frame["file"])
            if tracking.is_user_file(frame["file"]):
                number = int(frame["line"])
                source = _source(frame["file"], number)
                user.append(SourceLocation(frame["file"], number, frame["function"], source))
        elif not line.startswith("    "):
            skipping = False
        if not skipping:
            kept.append(line)
    text = "\n".join(kept).replace("Caught CudaInForkedWorkerError", "Caught RuntimeError")
    text = text.replace("gpudoc.emulate.errors.CudaInForkedWorkerError", "RuntimeError")
    text = text.replace("gpudoc.emulate.errors.NumpyOnDeviceError", "TypeError")
    text = re.sub(r"gpudoc\.emulate\.errors\.\w+Error:", "RuntimeError:", text)
    return text, user


def _is_gpudoc(filename: str) -> bool:
    return f"{os.sep}gpudoc{os.sep}emulate{os.sep}" in filename


def _builtin_name(error: BaseException) -> str:
    """The exception class a GPU run shows (RuntimeError, TypeError), not our subclass."""
    if errors.from_child(error):  # as a GPU run prints it
        return f"{type(error).__module__}.{type(error).__name__}"
    return next(cls.__name__ for cls in type(error).__mro__ if cls.__module__ == "builtins")


def user_frames(tb: TracebackType | None) -> list[FrameType]:
    """The traceback's frames that run the user's code, outermost first."""
    frames: list[FrameType] = []
    while tb is not None:
        if tracking.is_user_file(tb.tb_frame.f_code.co_filename):
            frames.append(tb.tb_frame)
        tb = tb.tb_next
    return frames


def traceback_lines(tb: TracebackType | None) -> dict[int, int]:
    """Each frame's line in the traceback: in a ``try:`` block, the frame has moved on since."""
    lines: dict[int, int] = {}
    while tb is not None:
        lines[id(tb.tb_frame)] = tb.tb_lineno
        tb = tb.tb_next
    return lines


def source_location(frame: FrameType, line: int | None = None) -> SourceLocation:
    filename = frame.f_code.co_filename
    lineno = frame.f_lineno if line is None else line
    return SourceLocation(filename, lineno, frame.f_code.co_name, _source(filename, lineno))


def _source(filename: str, line: int) -> str | None:
    text = linecache.getline(filename, line).strip()
    return text or None


def _find(tensor: torch.Tensor, frames: list[FrameType]) -> Found:
    """The user's names for a tensor (or for the tensor it is a view of), outermost frame first."""
    targets = [tensor] + ([tensor._base] if tensor._base is not None else [])
    found = Found(names=[])
    for frame in frames:
        for var, value in list(frame.f_locals.items()):
            if any(value is target for target in targets):
                _add(found.names, var)
            elif isinstance(value, torch.nn.Module):
                owner = found.owner
                _search_module(var, value, targets, found)
                if found.owner is not owner and found.root is None:
                    found.root = value
    return found


def _add(names: list[str], name: str) -> None:
    if name not in names:
        names.append(name)


def _search_module(
    var: str, module: torch.nn.Module, targets: list[torch.Tensor], found: Found
) -> None:
    for prefix, sub in module.named_modules():
        path = f"{var}.{prefix}" if prefix else var
        _search_members(path, sub, targets, found)
        for attr, value in vars(sub).items():
            if attr == "_modules":  # the registered submodules, searched by named_modules()
                continue
            for key, held in _held_modules(value):
                container = f"{path}.{attr}"
                before = len(found.names)
                _search_module(f"{container}[{key!r}]", held, targets, found)
                if len(found.names) > before and found.plain_container is None:
                    found.plain_container = container


def _held_modules(value: Any) -> list[tuple[Any, torch.nn.Module]]:
    """Modules kept in a plain list, tuple or dict attribute (invisible to module.to())."""
    if not isinstance(value, (list, tuple, dict)):
        return []
    items = value.items() if isinstance(value, dict) else enumerate(value)
    return [(key, item) for key, item in items if isinstance(item, torch.nn.Module)]


def _search_members(
    path: str, sub: torch.nn.Module, targets: list[torch.Tensor], found: Found
) -> None:
    members = {**sub._parameters, **sub._buffers}
    plain = {k: v for k, v in vars(sub).items() if isinstance(v, torch.Tensor)}
    for attr, value in [*members.items(), *plain.items()]:
        if value is not None and any(value is target for target in targets):
            _add(found.names, f"{path}.{attr}")
            if found.owner is None:
                found.owner, found.owner_name = sub, path
                found.plain_attribute = attr in plain


def _describe(argument: str, tensor: torch.Tensor, found: Found) -> TensorOrigin:
    origin = tracking.origin(tensor)
    if origin is None and tensor._base is not None:
        origin = tracking.origin(tensor._base)
    where = None
    if origin is not None:
        _verb, filename, line, function = origin
        where = SourceLocation(filename, line, function, _source(filename, line))
    return TensorOrigin(
        argument=argument,
        names=tuple(found.names),
        device=str(tensor.device),
        shape=tuple(tensor.shape),
        how=None if origin is None else origin[0],
        where=where,
        note=_note(tensor, found),
    )


def _note(tensor: torch.Tensor, found: Found) -> str | None:
    copied: Any = getattr(tensor, "_gpudoc_copied_at", None)
    if tensor.device.type == "cpu" and copied is not None:
        filename, line, _function, index = copied
        if not copy_discarded(tensor):
            return (
                f"a copy on cuda:{index} made at {filename}:{line} was used there; this tensor "
                "itself stayed on cpu"
            )
        return (
            f".to() at {filename}:{line} returned a copy on cuda:{index} that was not kept; "
            "this tensor itself stayed on cpu"
        )
    if found.plain_container is not None:
        return (
            f"its module is held in the plain container {found.plain_container}, not an "
            "nn.ModuleList / nn.ModuleDict: module.to() does not reach it"
        )
    if found.plain_attribute and found.owner_name is not None:
        return (
            f"a plain tensor attribute of {found.owner_name}, not a registered buffer: "
            "module.to() does not move it"
        )
    if found.owner is not None and found.owner_name is not None and tensor.device.type == "cpu":
        moved_at = getattr(found.owner, "_gpudoc_moved_at", None)
        root = found.owner_name.split(".")[0]
        root_moved = getattr(found.root, "_gpudoc_moved_at", None)
        if moved_at is None and root_moved is not None and found.owner is not found.root:
            filename, line, _function = root_moved
            return (
                f"{found.owner_name} was assigned after {root}.to() at {filename}:{line}: "
                "a module set later stays where it was created"
            )
        if moved_at is None:
            return f"{root} was never moved to a device"
    return None
