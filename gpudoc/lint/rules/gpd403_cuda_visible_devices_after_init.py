"""GPD403: CUDA_VISIBLE_DEVICES set after CUDA was initialised."""

from __future__ import annotations

import libcst as cst

from gpudoc.lint.analysis.events import CallEvent, ItemEvent, Semantic
from gpudoc.lint.analysis.expressions import string_value
from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.rule import Invalid, Rule

ENV_SETTERS = frozenset({"os.environ.setdefault", "os.putenv", "os.environ.update"})
VARIABLE = "CUDA_VISIBLE_DEVICES"
MESSAGE = (
    "CUDA_VISIBLE_DEVICES is set after CUDA was initialised above: it has no effect now; set "
    "it before the first torch.cuda call (or in the shell)"
)


class CudaVisibleDevicesAfterInit(Rule):
    """`os.environ["CUDA_VISIBLE_DEVICES"] = ...` after a call that initialises CUDA.

    ## What it does
    Finds an assignment (or `os.environ.setdefault` / `os.putenv`) of `CUDA_VISIBLE_DEVICES`
    that comes after `torch.cuda.*` calls, `.cuda()` or a tensor placed on CUDA in the same scope
    or at module level.

    ## Why is this bad?
    CUDA reads the variable once, when it initialises; later changes have no effect (maintainer
    in pytorch/pytorch#9158: "The env var only has effect before pytorch access cuda"). The script
    silently runs on the wrong GPUs, or several processes share one.

    ## Example
    ```python
    print(torch.cuda.is_available())
    os.environ["CUDA_VISIBLE_DEVICES"] = "1"
    ```

    ## Use instead
    ```python
    os.environ["CUDA_VISIBLE_DEVICES"] = "1"
    print(torch.cuda.is_available())
    ```

    ## Known problems
    Only this file's statement order is seen; CUDA initialised by an imported module is not.
    `torch.cuda.device_count()` does not count as initialising CUDA: PyTorch 2 asks NVML for
    it and reads `CUDA_VISIBLE_DEVICES` again until CUDA starts (without NVML it falls back to
    the CUDA runtime, which does initialise it). Nor do the seeding calls
    (`torch.cuda.manual_seed`, `manual_seed_all`, `seed`, `seed_all`): PyTorch queues them
    until CUDA starts.
    """

    CODE = "GPD403"
    NAME = "cuda-visible-devices-after-init"
    SUMMARY = "CUDA_VISIBLE_DEVICES is set after CUDA was initialised, so it has no effect"
    PLACEMENT = False
    VALID = (
        """\
import os
os.environ["CUDA_VISIBLE_DEVICES"] = "1"
import torch
print(torch.cuda.is_available())
""",
        # NVML counts the devices; CUDA starts later, with the mask in place
        """\
import os
import torch
n = torch.cuda.device_count()
os.environ["CUDA_VISIBLE_DEVICES"] = "1"
""",
    )
    INVALID = (
        Invalid(
            """\
import os
import torch
print(torch.cuda.is_available())
os.environ["CUDA_VISIBLE_DEVICES"] = "1"
""",
            line=4,
            col=1,
        ),
    )

    EVENTS = ("item", "call")

    def on_item(self, event: ItemEvent, semantic: Semantic) -> None:
        """``os.environ["CUDA_VISIBLE_DEVICES"] = ...``"""
        target = event.target
        if dotted(target.value) != "os.environ" or len(target.slice) != 1:
            return
        index = target.slice[0].slice
        named = isinstance(index, cst.Index) and string_value(index.value) == VARIABLE
        if named and semantic.cuda_initialised:
            self.report(event.statement, MESSAGE)

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        """``os.environ.setdefault("CUDA_VISIBLE_DEVICES", ...)``, ``os.putenv(...)``"""
        if event.qualified not in ENV_SETTERS or not event.node.args:
            return
        if string_value(event.node.args[0].value) == VARIABLE and semantic.cuda_initialised:
            self.report(event.node, MESSAGE)
