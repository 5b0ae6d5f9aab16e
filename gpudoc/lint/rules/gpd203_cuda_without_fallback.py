"""GPD203: CUDA hard-coded with no fallback for machines without it."""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from gpudoc.lint.analysis.expressions import string_value
from gpudoc.lint.analysis.facts import Facts
from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.rule import Context, Invalid, Report, Rule


class CudaWithoutFallback(Rule):
    """`.cuda()` or a `"cuda"` device with no `torch.cuda.is_available()` fallback.

    ## What it does
    Finds `.cuda()`, `torch.device("cuda")`, `.to("cuda")`, `device="cuda"` and `device = "cuda"`
    in a file that never checks `torch.cuda.is_available()` and is not under an `if` about
    CUDA, GPUs or devices.

    ## Why is this bad?
    On a machine without a usable GPU the script dies with `AssertionError: Torch not compiled
    with CUDA enabled` or `RuntimeError: No CUDA GPUs are available` instead of running on the
    CPU (karpathy/nanoGPT#281, pytorch/pytorch#28111).

    ## Example
    ```python
    model = Net().cuda()
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    ```

    ## Known problems
    Files written for GPUs only (NCCL process groups, per-rank `set_device`,
    `torch.set_default_device("cuda")`) are not reported, nor is code that declares it needs a
    GPU: an availability check anywhere in the file, decorators included
    (`@pytest.mark.skipif(not torch.cuda.is_available(), ...)`, `@unittest.skipIf`), an
    `assert` or `raise` on unavailability, a required `--device` option (or one whose only
    choice is CUDA), or a notebook whose metadata asks for a GPU accelerator (Colab's
    `"accelerator": "GPU"`, Kaggle's). `torch.device("cuda:N")` objects that never allocate
    (dict keys, comparison operands) are not reported. The check is per file: one availability
    check quiets every mention in it. A guard in a caller (a helper only called under
    `if use_cuda:`) is not seen.
    """

    CODE = "GPD203"
    NAME = "cuda-without-fallback"
    SUMMARY = "CUDA hard-coded with no torch.cuda.is_available() fallback"
    PLACEMENT = False
    VALID = (
        """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)
""",
        """\
import torch
model = torch.nn.Linear(4, 2)
if args.cuda:
    model.cuda()
""",
        # a test that is skipped without a GPU
        """\
import pytest
import torch
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_on_gpu():
    assert torch.ones(3).cuda().sum().item() == 3
""",
        # the script says it needs a GPU
        """\
import torch
assert torch.cuda.is_available(), "this benchmark needs a GPU"
model = torch.nn.Linear(4, 2).cuda()
""",
        # device objects as keys and in comparisons allocate nothing
        """\
import torch
PEAK_TFLOPS = {torch.device("cuda:0"): 989.0}
def on_first_gpu(x):
    return x.device == torch.device("cuda:0")
""",
        """\
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument("--device", choices=["cuda"], required=True)
model = torch.nn.Linear(4, 2).to("cuda")
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
model = torch.nn.Linear(4, 2).cuda()
""",
            line=2,
            col=9,
        ),
        Invalid(
            """\
import torch
device = "cuda"
model = torch.nn.Linear(4, 2).to(device)
""",
            line=2,
            col=10,
        ),
    )

    def check(self, facts: Facts, context: Context) -> Iterator[Report]:
        flags = facts.flags
        if flags.availability_check or flags.cuda_only or flags.per_rank_device:
            return
        if flags.default_device:  # torch.set_default_device("cuda"): the device is chosen once
            return
        if not any(not mention.guarded for mention in facts.cuda_mentions):
            return
        declared = _Declared()
        context.module.visit(declared)
        if declared.needs_gpu:
            return  # checked in a decorator or an assert, or a required --device cuda
        for mention in facts.cuda_mentions:
            if mention.guarded or id(mention.node) in declared.inert:
                continue
            message = (
                f"`{mention.text}` hard-codes CUDA with no fallback: on a machine without a GPU "
                'this fails; use `torch.device("cuda" if torch.cuda.is_available() else "cpu")`'
            )
            yield Report(mention.node, message)


class _Declared(cst.CSTVisitor):
    """What the walk of the analysis does not see: availability checks in decorators and
    asserts, a required ``--device cuda`` option, and device objects that never allocate."""

    def __init__(self) -> None:
        super().__init__()
        self.needs_gpu = False
        self.inert: set[int] = set()
        """ids of nodes used only as a value: dict keys, comparison operands."""

    def visit_Call(self, node: cst.Call) -> None:
        name = dotted(node.func) or ""
        if name.endswith(AVAILABILITY) or (name.endswith("add_argument") and _requires_cuda(node)):
            self.needs_gpu = True

    def visit_DictElement(self, node: cst.DictElement) -> None:
        self.inert.add(id(node.key))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self.inert.add(id(node.left))
        self.inert.update(id(target.comparator) for target in node.comparisons)


AVAILABILITY = ("cuda.is_available", "cuda.device_count", "accelerator.is_available")
DEVICE_OPTION = re.compile(r"^--?(device|cuda|gpu|accelerator)s?$", re.I)


def _requires_cuda(node: cst.Call) -> bool:
    """``add_argument("--device", required=True)`` or ``choices=["cuda"]``: the user must
    name the GPU; the script declares it needs one."""
    flags = [string_value(arg.value) or "" for arg in node.args if arg.keyword is None]
    if not any(DEVICE_OPTION.match(flag) for flag in flags):
        return False
    keywords = {arg.keyword.value: arg.value for arg in node.args if arg.keyword is not None}
    required = dotted(keywords["required"]) == "True" if "required" in keywords else False
    choices = keywords.get("choices")
    if isinstance(choices, cst.List | cst.Tuple | cst.Set) and choices.elements:
        texts = [string_value(element.value) or "" for element in choices.elements]
        return all(text.startswith("cuda") for text in texts)
    return required
