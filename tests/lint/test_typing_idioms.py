"""Everyday idioms the walk types: legacy constructors, indexing, model-zoo lookups, move
chains. Each case is the shape real scripts use."""

from __future__ import annotations

import textwrap

import pytest

from gpudoc.lint.engine import lint_source

HEADER = """\
import torch
import torch.nn as nn
import torchvision.models as models
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
"""


def findings(body: str) -> set[tuple[int, str]]:
    result = lint_source(HEADER + textwrap.dedent(body), "case.py")
    assert result.error is None, result.error
    offset = HEADER.count("\n")
    return {(f.line - offset, f.code) for f in result.findings}


@pytest.mark.parametrize(
    "expression",
    [
        "torch.LongTensor([1, 2, 3])",
        "torch.FloatTensor(3, 4)",
        "torch.Tensor(3, 4)",
        "torch.linspace(0, 1, 4)[..., None]",
        "torch.randn(3, 4).float()[:, :4]",
    ],
)
def test_host_tensors_fed_to_a_placed_model(expression: str) -> None:
    assert findings(f"x = {expression}\nmodel(x)\n") == {(2, "GPD101")}


def test_a_legacy_cuda_constructor_is_on_the_device() -> None:
    # no GPD101: it is on the device; GPD203: the script offers the CPU, where it fails
    assert findings("x = torch.cuda.FloatTensor(3, 4)\nmodel(x)\n") == {(1, "GPD203")}


@pytest.mark.parametrize(
    "constructor",
    ['models.__dict__["resnet18"]()', 'getattr(models, "resnet18")()', "models.resnet18()"],
)
def test_model_zoo_lookups_build_host_modules(constructor: str) -> None:
    body = f"net = {constructor}\nnet(torch.randn(1, 3, 8, 8).to(device))\n"
    assert findings(body) == {(1, "GPD102")}


def test_a_factory_at_the_start_of_a_moved_chain_is_placed() -> None:
    assert (
        findings(
            """\
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                pos = torch.arange(x.size(1)).unsqueeze(0).repeat(x.size(0), 1).to(x.device)
                m = torch.log(torch.tril(torch.ones(4, 4))).to(x.device)
                return self.fc(x) + pos + m
        M().to(device)
        """
        )
        == set()
    )


@pytest.mark.parametrize(
    "literal",
    [
        '"cuda"',
        "'cpu'",
        '"""abc"""',
        "'''x'''",
        '""',
        '""""""',
        'r"a\\b"',
        'b"x"',
        '"a\\nb"',
        'u"x"',
    ],
)
def test_string_values_read_without_compiling_match_libcst(literal: str) -> None:
    import libcst as cst

    from gpudoc.lint.analysis.expressions import string_value

    node = cst.parse_expression(literal)
    assert isinstance(node, cst.SimpleString)
    expected = node.evaluated_value
    assert string_value(node) == (expected if isinstance(expected, str) else None)
