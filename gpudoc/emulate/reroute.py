"""Calls that PyTorch routes one way for plain CUDA tensors and another for tensor subclasses.

Some composites take a "composite compliant" path when an operand is a tensor subclass, and that
path treats devices differently from the one a GPU takes. ``ctc_loss`` with Tensor lengths is
the case met in real scripts: for plain tensors it reads the lengths on the host (so they may
be on the CPU or the GPU), for a subclass it divides by them on the device, which would make
host lengths a device error under emulation only. Such calls are rewritten here into the form
the GPU's path takes, before torch sees them. The recurrent layers' calls are checked here the
way ATen checks them before any kernel, since the CPU build decomposes them into ``addmm``s
whose device check says something else; so are the LSTM and GRU cells, whose CUDA path runs
``mm`` and a fused kernel where the CPU build runs ``addmm``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from gpudoc.emulate.errors import check_rnn, check_rnn_cell

Call = tuple[tuple[Any, ...], dict[str, Any]]


def _host_lengths(value: Any) -> Any:
    """Integral length tensors as the GPU's path reads them: ``.to(cpu, long)``, on the host."""
    dtype = value.dtype if isinstance(value, torch.Tensor) else None
    if dtype is not None and not (
        dtype.is_floating_point or dtype.is_complex or dtype is torch.bool
    ):
        return tuple(value.reshape(-1).tolist())
    return value  # not integral: torch raises its own error about it


def _ctc_lengths(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Call:
    args = tuple(_host_lengths(value) if 2 <= i <= 3 else value for i, value in enumerate(args))
    for name in ("input_lengths", "target_lengths"):
        if name in kwargs:
            kwargs = dict(kwargs, **{name: _host_lengths(kwargs[name])})
    return args, kwargs


def _rnn_checked(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Call:
    """The recurrent layers' device check, made before the CPU build decomposes the call."""
    check_rnn(args, kwargs)
    return args, kwargs


def _cell_checked(fused: str) -> Callable[[tuple[Any, ...], dict[str, Any]], Call]:
    """An LSTM or GRU cell's device checks, in the order a GPU's CUDA path makes them."""

    def checked(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Call:
        check_rnn_cell(args, fused)
        return args, kwargs

    return checked


REROUTES: dict[Any, Callable[[tuple[Any, ...], dict[str, Any]], Call]] = {
    F.ctc_loss: _ctc_lengths,
    torch.ctc_loss: _ctc_lengths,
    # the recurrent layers, checked as ATen checks them (`torch._VF.lstm` is `torch.lstm`)
    **dict.fromkeys((torch.lstm, torch.gru, torch.rnn_tanh, torch.rnn_relu), _rnn_checked),
    torch.lstm_cell: _cell_checked("_thnn_fused_lstm_cell"),
    torch.gru_cell: _cell_checked("_thnn_fused_gru_cell"),
}
