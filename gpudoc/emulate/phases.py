"""How far the script got: DataLoader loops (capped at --batches), forward passes in training
and in evaluation, optimizer steps; and where each DataLoader batch entered the script."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

import torch

from gpudoc.emulate import tracking
from gpudoc.emulate.state import STATE


class CappedIterator:
    """A DataLoader iterator that stops after ``STATE.batch_limit`` batches."""

    def __init__(self, inner: Iterator[Any], limit: int | None) -> None:
        self._inner = inner
        self._limit = limit
        self._count = 0
        self._capped = False

    def __iter__(self) -> CappedIterator:
        return self

    def __next__(self) -> Any:
        if self._limit is not None and self._count >= self._limit:
            if not self._capped:
                STATE.loops_capped += 1
                self._capped = True
            raise StopIteration
        batch = next(self._inner)
        self._count += 1
        STATE.batches_seen += 1
        _date_batch(batch, tracking.user_location())
        return batch

    def __len__(self) -> int:
        length = len(self._inner)  # type: ignore[arg-type]
        return length if self._limit is None else min(length, self._limit)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _date_batch(batch: Any, where: tracking.Location | None) -> None:
    if isinstance(batch, torch.Tensor):
        tracking.set_origin(batch, "loaded by a DataLoader (on the host)", where)
    elif isinstance(batch, (list, tuple)):
        for item in batch:
            _date_batch(item, where)
    elif isinstance(batch, dict):
        for item in batch.values():
            _date_batch(item, where)


def capped_iter(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def patched(self: Any) -> CappedIterator:
        return CappedIterator(method(self), STATE.batch_limit)

    return patched


def capped_len(method: Callable[..., int]) -> Callable[..., int]:
    @functools.wraps(method)
    def patched(self: Any) -> int:
        length = method(self)
        return length if STATE.batch_limit is None else min(length, STATE.batch_limit)

    return patched


def counted_call(call: Callable[..., Any]) -> Callable[..., Any]:
    """``nn.Module.__call__`` that counts the outermost forward pass. Global module hooks would
    do it too, but their presence sends every module call down torch's slow path (about 10 us
    a call here)."""

    @functools.wraps(call)
    def patched(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        if _in_forward[0]:
            return call(self, *args, **kwargs)  # a nested call
        _in_forward[0] = True
        try:
            _forward_started(self)
            return call(self, *args, **kwargs)
        finally:
            _in_forward[0] = False

    return patched


_in_forward = [False]  # a list: written per call without a ``global`` statement


def _forward_started(module: torch.nn.Module) -> None:
    param = next(module.parameters(), None)
    if param is None:
        return  # a parameterless module such as a loss
    training = torch.is_grad_enabled() and module.training
    phase = "forward (training)" if training else "forward (evaluation)"
    # Where a phase was first reached is all the report needs: walk the frames only then.
    STATE.reached(phase, None if phase in STATE.phase_lines else tracking.where_text())
    STATE.phase_devices.setdefault(phase, set()).add(str(param.device))


def optimizer_stepped(optimizer: Any, args: Any, kwargs: Any) -> None:
    STATE.reached("optimizer step")
