"""Recall regressions from the thirty-fifth recall set (bug reports of public projects), reduced
and rewritten here: the bug each rule must find, next to the correct code it must leave alone."""

from __future__ import annotations

from lint_lines import lines

# DALLE-pytorch: a 1-element legacy tensor of a number copied from `self` meets device logits
COPIED_NUMBER = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class VAE(nn.Module):
    def __init__(self, num_tokens=512, kl_weight=0.0):
        super().__init__()
        self.num_tokens = num_tokens
        self.kl_weight = kl_weight
        self.proj = nn.Linear(8, num_tokens)

    def forward(self, img):
        {copy}
        qy = F.softmax(self.proj(img), dim=-1)
        g = torch.log(torch.Tensor([1.0 / num_tokens]))
        return (qy * (torch.log(qy) - g)).sum() * kl_weight
"""


def test_a_legacy_tensor_of_a_number_copied_from_self() -> None:
    unpacked = "num_tokens, kl_weight = self.num_tokens, self.kl_weight"
    assert lines(COPIED_NUMBER.format(copy=unpacked), "GPD106") == [16]
    plain = "num_tokens = self.num_tokens; kl_weight = self.kl_weight"
    assert lines(COPIED_NUMBER.format(copy=plain), "GPD106") == [16]
    # a copy of something else than a number attribute: a list of labels, say
    other = "num_tokens, kl_weight = self.proj, self.kl_weight"
    assert lines(COPIED_NUMBER.format(copy=other), "GPD106") == []
