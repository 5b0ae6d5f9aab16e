"""GPD403: CUDA_VISIBLE_DEVICES set after CUDA was initialised."""

from __future__ import annotations

from collections.abc import Iterator

from gpudoc.lint.analysis.facts import Facts
from gpudoc.lint.rule import Context, Invalid, Report, Rule


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
    print(torch.cuda.device_count())
    os.environ["CUDA_VISIBLE_DEVICES"] = "1"
    ```

    ## Use instead
    ```python
    os.environ["CUDA_VISIBLE_DEVICES"] = "1"
    print(torch.cuda.device_count())
    ```

    ## Known problems
    Only this file's statement order is seen; CUDA initialised by an imported module is not.
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
print(torch.cuda.device_count())
""",
    )
    INVALID = (
        Invalid(
            """\
import os
import torch
print(torch.cuda.device_count())
os.environ["CUDA_VISIBLE_DEVICES"] = "1"
""",
            line=4,
            col=1,
        ),
    )

    def check(self, facts: Facts, context: Context) -> Iterator[Report]:
        for assign in facts.env_assigns:
            if assign.after_cuda_init:
                message = (
                    "CUDA_VISIBLE_DEVICES is set after CUDA was initialised above: it has no "
                    "effect now; set it before the first torch.cuda call (or in the shell)"
                )
                yield Report(assign.node, message)
