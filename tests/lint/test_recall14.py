"""Recall regressions from the fourteenth recall set (bug reports on public repositories),
reduced and rewritten here: each bug must be reported, next to the correct code that must not."""

from __future__ import annotations

from lint_lines import lines

# an engine's step callable: the batch's first element moved, the result discarded
STEP = """\
import torch
class TrainStep:
    def __init__(self, model, opt, device=None):
        self.model = model
        self.opt = opt
        self.device = device
    def __call__(self, engine, batch):
        x = batch[{key}]
        if self.device: x.to(self.device)
        return self.model(x)
model = torch.nn.Linear(4, 2).to("cuda")
step = TrainStep(model, None, "cuda")
"""


def test_a_discarded_move_of_a_batch_element_bound_to_a_name() -> None:
    assert lines(STEP.format(key="0"), "GPD103") == [9]


def test_a_batch_entry_that_may_hold_a_module_is_not_typed_as_a_tensor() -> None:
    assert lines(STEP.format(key='"model"'), "GPD103") == []


# a training loop's meters: a model's outputs unpacked, then numbers and accuracies in one array
METERS = """\
import numpy as np
import torch
import torch.nn as nn
model = nn.Linear(4, 2).cuda()
meters = np.zeros(3)
for step in range(10):
    x = torch.randn(8, 4).cuda()
    loss, acc = model(x)
    meters = meters + np.array([loss.item(), {acc}, step])
"""


def test_a_device_tensor_among_numbers_in_an_array_display() -> None:
    assert lines(METERS.format(acc="acc * 100"), "GPD202") == [9]


def test_numbers_only_in_an_array_display() -> None:
    assert lines(METERS.format(acc="acc.item() * 100"), "GPD202") == []
