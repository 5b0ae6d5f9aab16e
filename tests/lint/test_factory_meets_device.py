"""GPD106 beyond forward(): a factory's host tensor that meets a device tensor in one operation,
in any function the walk reaches with device values (a library's loss, a test's reference
implementation), and the look-alikes that run fine on a GPU."""

from __future__ import annotations

import libcst as cst
from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import python_findings
from gpudoc.lint.fix import fix_source
from gpudoc.lint.model import Finding

# a loss function of a library (recall set 14, report 09), called on the device
LOSS = """\
import torch
import torch.nn as nn
def ordinal_loss(logits, labels):
    first = {first}
    pi = torch.cat([first, labels[:, :-1]], dim=1)
    return (pi * logits).sum()
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(10, 4).to(device)
x = torch.randn(3, 10).to(device)
y = torch.randn(3, 4).to(device)
loss = ordinal_loss(model(x), y)
"""


def test_a_host_factory_concatenated_with_a_device_argument() -> None:
    assert lines(LOSS.format(first="torch.ones((labels.shape[0], 1))"), "GPD106") == [4]
    # nothing else reports the same tensor where it meets the labels
    assert lines(LOSS.format(first="torch.ones((labels.shape[0], 1))"), "GPD101") == []


def test_placed_or_like_factories_are_quiet() -> None:
    for first in (
        "torch.ones((labels.shape[0], 1), device=labels.device)",
        "torch.ones_like(labels[:, :1])",
        "torch.ones((labels.shape[0], 1)).to(labels.device)",
        "labels.new_ones((labels.shape[0], 1))",
    ):
        assert lines(LOSS.format(first=first), "GPD106") == [], first


def test_called_only_with_host_tensors_it_is_quiet() -> None:
    source = LOSS.format(first="torch.ones((labels.shape[0], 1))")
    source = source.replace(".to(device)", "")
    assert lines(source, "GPD106") == []


def lint(text: str) -> list[Finding]:
    return python_findings(text, "example.py", LintConfig(select=("GPD106",)))


def test_the_fix_creates_it_on_the_tensor_it_meets() -> None:
    source = LOSS.format(first="torch.ones((labels.shape[0], 1))")
    result = fix_source(source, lint, unsafe=True)
    cst.parse_module(result.fixed)
    assert "first = torch.ones((labels.shape[0], 1), device=labels.device)" in result.fixed
    assert result.remaining == ()
    assert not fix_source(result.fixed, lint, unsafe=True).changed


# a test's reference attention (recall set 14, report 19): the bias follows the query's device
REFERENCE = """\
import torch
def reference_attention(query, key, value):
    L, S = query.size(-2), key.size(-2)
    bias = torch.zeros(L, S, dtype=query.dtype, device=query.device)
    mask = {mask}
    bias.masked_fill_(mask.logical_not(), float("-inf"))
    weights = torch.softmax(query @ key.transpose(-2, -1) + bias, dim=-1)
    return weights @ value
"""


def test_a_mask_beside_a_bias_made_on_the_inputs_device() -> None:
    assert lines(REFERENCE.format(mask="torch.ones(L, S, dtype=torch.bool).tril()"), "GPD106") == [
        5
    ]
    placed = "torch.ones(L, S, dtype=torch.bool, device=query.device).tril()"
    assert lines(REFERENCE.format(mask=placed), "GPD106") == []


def test_without_a_sibling_on_the_inputs_device_nothing_says_device() -> None:
    source = REFERENCE.format(mask="torch.ones(L, S, dtype=torch.bool).tril()")
    source = source.replace(", device=query.device", "")
    assert lines(source, "GPD106") == []


MEETS = """\
import torch
import torch.autograd as autograd
USE_CUDA = torch.cuda.is_available()
Variable = lambda *a: autograd.Variable(*a).cuda() if USE_CUDA else autograd.Variable(*a)
FloatTensor = torch.cuda.FloatTensor if USE_CUDA else torch.FloatTensor
def step(q, x):
    {line}
    return (q * x).sum()
device = torch.device("cuda")
step(torch.randn(4, 4, device=device), torch.randn(4, 4, device=device))
"""


def test_reductions_type_conversions_and_placing_helpers_meet_nothing() -> None:
    quiet = (
        # a full reduction is a 0-dim tensor: an operand on any device
        "q = q * torch.sum(torch.zeros(4))",
        "s = torch.zeros(4)\n    s = torch.sum(s)\n    q = q + s",
        # `.type(FloatTensor)` with a CUDA type moves it
        "z = torch.zeros(4).type(FloatTensor)\n    q = q + z",
        # moved by a chain that ends in `.to()`
        "a = torch.rand(4, 1)\n    a = a.expand_as(q).to(q.device)\n    q = a * q",
        # the file's `Variable` moves it when CUDA is in use
        "q = Variable(torch.zeros(4, 4)) * q",
        # a number-valued 0-dim tensor
        "q = q * torch.tensor(0.5)",
    )
    for line in quiet:
        assert lines(MEETS.format(line=line), "GPD106") == [], line
    assert lines(MEETS.format(line="q = q + torch.zeros(4, 4)"), "GPD106") == [7]
    assert lines(MEETS.format(line="q = torch.add(torch.zeros(4, 4), q)"), "GPD106") == [7]


def test_the_keyword_goes_after_a_parenthesised_shape() -> None:
    source = """\
import torch
import torch.nn as nn
class RNN(nn.Module):
    def forward(self, x):
        h = torch.zeros( (x.size(0), 8) )
        return x + h
model = RNN().cuda()
"""
    result = fix_source(source, lint, unsafe=True)
    assert "h = torch.zeros( (x.size(0), 8), device=x.device )" in result.fixed
    assert result.remaining == ()
