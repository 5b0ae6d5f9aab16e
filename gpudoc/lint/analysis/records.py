"""Facts the call evaluator records as it goes: loads, numpy uses, factories, CUDA mentions."""

from __future__ import annotations

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import CudaEvent
from gpudoc.lint.analysis.expressions import Evaluator


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
