"""GPD105: a tensor kept as a plain attribute of an nn.Module."""

from __future__ import annotations

from collections.abc import Iterator

from gpudoc.lint.analysis.facts import Facts
from gpudoc.lint.rule import Context, Invalid, Report, Rule


class TensorAttributeNotBuffer(Rule):
    """A tensor stored as a plain attribute of an `nn.Module` instead of a buffer.

    ## What it does
    Finds `self.name = torch.tensor(...)` (or another new tensor) in the `__init__` of an
    `nn.Module` subclass, not wrapped in `nn.Parameter` or `register_buffer`, and then used in
    another method without being moved there.

    ## Why is this bad?
    `model.to(device)` moves parameters and buffers only. The plain tensor stays on the CPU and
    `forward` fails with `Expected all tensors to be on the same device` (pytorch/audio#457,
    Lightning's "register it as a buffer"). It is also missing from the `state_dict`.

    ## Example
    ```python
    class Norm(nn.Module):
        def __init__(self):
            super().__init__()
            self.mean = torch.tensor([0.485, 0.456, 0.406])

        def forward(self, x):
            return x - self.mean
    ```

    ## Use instead
    ```python
    class Norm(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]), persistent=False)
    ```

    ## Known problems
    A tensor moved where it is used (`self.mean.to(x.device)`) is not reported; 0-dim tensors
    (`torch.tensor(0.5)`) combine with device tensors and are not reported either.
    """

    CODE = "GPD105"
    NAME = "tensor-attribute-not-buffer"
    SUMMARY = "a tensor kept as a plain nn.Module attribute is not moved by .to(device)"
    VALID = (
        """\
import torch
import torch.nn as nn
class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.5, 0.5]))
        self.scale = nn.Parameter(torch.ones(2))
        self.eps = torch.tensor(1e-5)
    def forward(self, x):
        return (x - self.mean) * self.scale + self.eps
model = Norm().cuda()
""",
        """\
import torch
import torch.nn as nn
class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.mean = torch.tensor([0.5, 0.5])
    def forward(self, x):
        return x - self.mean.to(x.device)
model = Norm().cuda()
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
import torch.nn as nn
class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.mean = torch.tensor([0.5, 0.5])
    def forward(self, x):
        return x - self.mean
model = Norm().cuda()
""",
            line=6,
            col=9,
        ),
    )

    def check(self, facts: Facts, context: Context) -> Iterator[Report]:
        for cls in facts.classes:
            if cls.custom_apply:
                continue
            for attr in cls.init_attrs:
                if attr.shape != "tensor" or attr.attr not in cls.used_elsewhere:
                    continue
                if attr.attr in cls.moved_on_use:
                    continue
                message = (
                    f"`self.{attr.attr}` is a plain tensor attribute: `.to(device)` will not move "
                    f'it; use `self.register_buffer("{attr.attr}", ..., persistent=False)`'
                )
                yield Report(attr.statement, message)
