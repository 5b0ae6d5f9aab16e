"""GPD114: a legacy constructor handed the script's device raises on a GPU."""

from __future__ import annotations

import pytest
from lint_lines import lines

SOURCE = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
cpu = torch.device("cpu")
x = {call}
"""


@pytest.mark.parametrize(
    "call",
    [
        "torch.LongTensor([[0]], device=device)",
        "torch.Tensor([1.0, 2.0], device=device)",
        "torch.FloatTensor(3, 4, device='cuda')",
        "torch.Tensor([1.0], device=torch.device('cuda', 0))",
    ],
)
def test_a_legacy_constructor_given_a_gpu_device(call: str) -> None:
    assert lines(SOURCE.format(call=call), "GPD114") == [4]


@pytest.mark.parametrize(
    "call",
    [
        "torch.tensor([[0]], dtype=torch.long, device=device)",
        "torch.LongTensor([[0]], device='cpu')",
        "torch.Tensor([1.0], device=cpu)",
        "torch.Tensor([1.0], device=torch.device('cpu'))",
        "torch.cuda.LongTensor([[0]], device=device)",
        "torch.LongTensor([[0]])",
    ],
)
def test_what_builds_where_it_may(call: str) -> None:
    assert lines(SOURCE.format(call=call), "GPD114") == []


def test_the_advice_keeps_the_type() -> None:
    from gpudoc.lint.config import LintConfig
    from gpudoc.lint.engine import lint_source

    source = SOURCE.format(call="torch.LongTensor([[0]], device=device)")
    (finding,) = lint_source(source, "x.py", LintConfig(select=("GPD114",))).findings
    assert "torch.tensor(..., dtype=torch.long, device=device)" in finding.message
