"""Facts the call evaluator records as it goes: loads, numpy uses, factories, CUDA mentions."""

from __future__ import annotations

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import CudaEvent
from gpudoc.lint.analysis.expressions import Evaluator
from gpudoc.lint.analysis.facts import (
    Argument,
    MixedCall,
)
from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.analysis.values import Value


class Records(Evaluator):
    def note_self_placing(self) -> None:
        """``self.to(device)`` / ``self.cuda()`` in ``__init__``: the class places itself."""
        cls = self.scope.module_class
        if cls is not None and self.in_init:
            cls.places_itself = True

    def note_cuda(self, node: cst.CSTNode, text: str) -> None:
        self.facts.flags.device_notion = True
        if api.CUDA_LITERAL.match(text) or text == ".cuda()":
            self.scope.cuda_initialised = True
            if self.bus.wants("cuda"):
                self.emit("cuda", CudaEvent(node, text))

    def record_mixed(self, node: cst.Call, function: str, values: list[Value]) -> None:
        if sum(1 for value in values if value.is_tensorish) < 2:
            return
        arguments = [
            Argument(arg.value, dotted(arg.value), value)
            for arg, value in zip(node.args, values, strict=True)
        ]
        device = self.scope.device_name()
        self.facts.mixed_calls.append(MixedCall(node, function, arguments, device))
