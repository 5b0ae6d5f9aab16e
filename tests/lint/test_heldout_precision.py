"""Precision regressions from a held-out triage of public repositories (seq2seq tutorials,
video-classification training loops, textbook notebooks), reduced and rewritten here: correct
code each rule must leave alone, next to the bug it must still report."""

from __future__ import annotations

import pytest

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_source


def lines(source: str, code: str) -> list[int]:
    result = lint_source(source, "x.py", LintConfig(select=(code,)))
    return [finding.line for finding in result.findings]


RNN_HEAD = """\
import torch
import torch.nn as nn
from torch.autograd import Variable
USE_CUDA = torch.cuda.is_available()
class Encoder(nn.Module):
    def __init__(self, n, hidden_size):
        super().__init__()
        self.use_cuda = USE_CUDA
        self.hidden_size = hidden_size
        self.gru = nn.GRU(n, hidden_size)
"""
RNN_TAIL = """\
encoder = Encoder(10, 8)
if USE_CUDA:
    encoder.cuda()
"""

MOVED_LATER = {
    "one-line if": """\
    def init_hidden(self):
        hidden = Variable(torch.zeros(1, 1, self.hidden_size))
        if USE_CUDA: hidden = hidden.cuda()
        return hidden
""",
    "block if on an attribute flag": """\
    def init_hidden(self, batch_size):
        h = torch.zeros(1, batch_size, self.hidden_size)
        if self.use_cuda:
            h = h.cuda()
        return h
""",
    "availability test": """\
    def forward(self, x):
        h = torch.zeros(1, x.size(1), self.hidden_size)
        if torch.cuda.is_available():
            h = h.cuda()
        return self.gru(x, h)
""",
    "conditional return": """\
    def init_hidden(self):
        h = torch.zeros(1, 1, self.hidden_size)
        return h.cuda() if USE_CUDA else h
""",
    "to(device) later in a loop": """\
    def forward(self, x):
        energies = Variable(torch.zeros(x.size(0), x.size(1)))
        if USE_CUDA:
            energies = energies.to(x.device)
        for i in range(x.size(0)):
            energies[i] = x[i].sum()
        return energies
""",
}


@pytest.mark.parametrize("body", MOVED_LATER.values(), ids=list(MOVED_LATER))
def test_factory_moved_later_in_the_same_function_is_placed(body: str) -> None:
    assert lines(RNN_HEAD + body + RNN_TAIL, "GPD106") == []


def test_factory_never_moved_stays_a_finding() -> None:
    body = """\
    def forward(self, x):
        h = torch.zeros(1, x.size(1), self.hidden_size)
        other = torch.ones(3)
        if USE_CUDA:
            other = other.cuda()
        return self.gru(x, h)
"""
    assert lines(RNN_HEAD + body + RNN_TAIL, "GPD106") == [12]


def test_a_move_of_another_binding_of_the_name_does_not_count() -> None:
    body = """\
    def forward(self, x):
        h = torch.zeros(1, x.size(1), self.hidden_size)
        out, _ = self.gru(x, h)
        h = torch.ones(2)
        h = h.cuda()
        return out + h
"""
    assert lines(RNN_HEAD + body + RNN_TAIL, "GPD106") == [12]
