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


# gnn-model-explainer: each pooling layer's head, built by the base class's method, is kept in a
# plain list (only the last one is registered, through the attribute reassigned each turn)
APPENDED_ATTRIBUTE = """\
import torch.nn as nn


class Encoder(nn.Module):
    def build_pred_layers(self, dim, hidden):
        return nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, 1))


class SoftPooling(Encoder):
    def __init__(self, dim, hidden, layers):
        super().__init__()
        self.assign_pred_modules = []
        for i in range(layers):
            self.assign_pred = self.build_pred_layers(dim, hidden)
            self.assign_pred_modules.append({item})
"""


def test_an_attribute_built_by_a_base_class_method_appended_to_a_plain_list() -> None:
    assert lines(APPENDED_ATTRIBUTE.format(item="self.assign_pred"), "GPD104") == [12]
    # the same list of numbers is no container of modules
    assert lines(APPENDED_ATTRIBUTE.format(item="i"), "GPD104") == []


# Real-Time-Voice-Cloning: a second reference to a registered RNN, kept to flatten its parameters
SECOND_REFERENCE = """\
import torch.nn as nn


class CBHG(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self._to_flatten = []
        self.rnn = nn.GRU(channels, channels, batch_first=True, bidirectional=True)
        self._to_flatten.append(self.rnn)
"""


def test_a_registered_module_appended_once_is_a_second_reference() -> None:
    assert lines(SECOND_REFERENCE, "GPD104") == []
