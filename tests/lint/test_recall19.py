"""Recall regressions from the nineteenth recall set (real bug reports), reduced and rewritten
here: the bug each rule must report, next to the correct code it must leave alone."""

from __future__ import annotations

import pytest
from lint_lines import lines

# reports 01 and 03: layers appended to a plain list as [layer, activation] pairs, or through a
# name bound to the constructor
STACK = """\
import torch.nn as nn
class Stack(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.layers = {container}
        for n in sizes:
            layer = nn.Linear(n, n)
            self.layers.append({item})
    def forward(self, x):
        for pair in self.layers:
            x = pair[0](x) if isinstance(pair, list) else pair(x)
        return x
model = Stack([4, 4]).cuda()
"""


@pytest.mark.parametrize("item", ["layer", "[layer, nn.ReLU()]", "[nn.Linear(n, n), nn.Tanh()]"])
def test_modules_appended_by_name_or_in_pairs_to_a_plain_list(item: str) -> None:
    assert lines(STACK.format(container="[]", item=item), "GPD104") == [5]
    assert lines(STACK.format(container="nn.ModuleList()", item=item), "GPD104") == []


def test_stateless_layers_appended_by_name_lose_nothing() -> None:
    source = STACK.format(container="[]", item="act").replace(
        "layer = nn.Linear(n, n)", "act = nn.ReLU()"
    )
    assert lines(source, "GPD104") == []


# report 17: a module that moves itself only `if gpu:` (an __init__ parameter), while its loss
# moves the targets with an unconditional `.cuda()`
PREDICTOR = """\
import numpy as np
import torch
import torch.nn as nn
class Predictor(nn.Module):
    def __init__(self, n, gpu):
        super().__init__()
        self.gpu = gpu
        self.out = nn.Linear(n, 4)
        self.ce = nn.CrossEntropyLoss()
        if gpu:
            self.cuda()
    def loss(self, score, truth):
        target = torch.from_numpy(np.array(truth))
        {move}
        return self.ce(score, target)
"""


def test_a_move_under_the_classes_own_init_flag_is_its_cpu_path() -> None:
    source = PREDICTOR.format(move="target = target.cuda()")
    assert lines(source, "GPD203") == [14]
    guarded = PREDICTOR.format(move="target = target.cuda() if self.gpu else target")
    assert lines(guarded, "GPD203") == []


def test_layers_registered_one_by_one_with_setattr_are_kept() -> None:
    """A tutorial's batch-norm net keeps its layers in plain lists for iteration, and
    registers each with `setattr(self, "fc%i" % i, fc)`."""
    registered = STACK.format(container="[]", item="layer").replace(
        "            self.layers.append(layer)",
        '            setattr(self, "fc%i" % n, layer)\n            self.layers.append(layer)',
    )
    assert lines(registered, "GPD104") == []
