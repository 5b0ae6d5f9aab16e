"""Precision regressions from the fourteenth held-out set of public repositories (metric
learning losses, transformer wrappers, notebooks), reduced and rewritten here: correct code each
rule must leave alone, next to the bug it must still report."""

from __future__ import annotations

from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_source

# an encoder of sentences: its first input is a list of strings, its second a tensor
SENTENCES = """\
import torch
import torch.nn as nn
class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 8)
    def forward(self, sentences, lengths):
        ids = torch.tensor([[hash(w) % 100 for w in s.split()] for s in sentences])
        return self.emb(ids).sum(1) + lengths.float()[:, None]
model = Encoder().cuda()
"""


def test_a_fix_takes_the_device_of_a_tensor_input_not_of_a_list_of_strings() -> None:
    result = lint_source(SENTENCES, "x.py", LintConfig(select=("GPD106",)))
    assert [f.line for f in result.findings] == [8]
    assert "lengths.device" in result.findings[0].message
    assert "sentences.device" not in result.findings[0].message


def test_no_fix_without_an_input_known_to_be_a_tensor() -> None:
    source = SENTENCES.replace(", lengths", "").replace(" + lengths.float()[:, None]", "")
    result = lint_source(source, "x.py", LintConfig(select=("GPD106",)))
    assert [f.line for f in result.findings] == [8]
    assert result.findings[0].fix is None
    assert "sentences.device" not in result.findings[0].message


# a stub text encoder of a test: no weights, its input a list of strings
STUB = """\
import torch
class TextModel(torch.nn.Module):
    def forward(self, list_of_text):
        return torch.randn(len(list_of_text), 32)
"""


def test_a_weightless_module_fed_no_tensor_meets_no_device() -> None:
    assert lines(STUB, "GPD106") == []
    assert lines(STUB.replace("list_of_text", "x"), "GPD106") == [4]
