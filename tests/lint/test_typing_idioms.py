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


CAPTIONS = """\
import torch
from torch.autograd import Variable
from torch.nn.utils.rnn import pack_padded_sequence
from data import get_loader
from model import Decoder

decoder = Decoder(256, 512)
if torch.cuda.is_available():
    decoder.cuda()
criterion = torch.nn.CrossEntropyLoss()
for images, captions, lengths in get_loader("train"):
    captions = Variable(captions)
    targets = pack_padded_sequence(captions, lengths, batch_first=True)[0]
    if torch.cuda.is_available():
        captions = captions.cuda()
    outputs = decoder(captions, lengths)
    loss = criterion(outputs, targets)
"""


def test_a_batch_the_script_moves_itself_was_on_the_host_before() -> None:
    """yunjey/pytorch-tutorial's captioning bug: the loader and the model come from files the
    linter cannot read, but the script moves both itself; `targets`, packed from `captions`
    before the move, stays behind, and the moved decoder's outputs are on the device."""
    result = lint_source(CAPTIONS, "train.py")
    assert {(f.line, f.code) for f in result.findings} == {(13, "GPD112")}


def test_a_batch_packed_after_its_move_is_placed() -> None:
    fixed = CAPTIONS.replace(
        "    targets = pack_padded_sequence(captions, lengths, batch_first=True)[0]\n", ""
    ).replace(
        "    outputs = decoder",
        "    targets = pack_padded_sequence(captions, lengths)[0]\n    outputs = decoder",
    )
    assert lint_source(fixed, "train.py").findings == ()


def test_a_moved_callable_of_unknown_class_is_a_placed_module() -> None:
    """`net = build().to(device)`: only a module is called after a move; its outputs are on
    the device, so a host tensor combined with them in a loss is reported."""
    source = HEADER + textwrap.dedent(
        """\
        from zoo import build
        net = build("resnet").to(device)
        loss = torch.nn.functional.mse_loss(net(torch.ones(2, 4).to(device)), torch.zeros(2, 2))
        """
    )
    found = {(f.line, f.code) for f in lint_source(source, "case.py").findings}
    assert (HEADER.count("\n") + 3, "GPD101") in found
