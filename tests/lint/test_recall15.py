"""Recall regressions from the fifteenth recall set (real bug reports), reduced and rewritten
here: the bug each rule must report, next to the correct code it must leave alone."""

from __future__ import annotations

from lint_lines import lines

# report 03 (and set 14's 16): a helper returns a torch.device, which is then compared with text
HELPER_DEVICE = """\
import torch
def get_torch_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    return {cpu}
class Pipeline:
    def __init__(self):
        device = get_torch_device()
        if device != "cpu":
            print("half precision")
"""


def test_a_device_returned_by_a_helper_is_a_torch_device() -> None:
    assert lines(HELPER_DEVICE.format(cpu='torch.device("cpu")'), "GPD501") == [9]
    # a helper that may return a string compares right with one
    assert lines(HELPER_DEVICE.format(cpu='"cpu"'), "GPD501") == []


# report 11: the subclass's `_forward`, which the base class's forward calls
HOOK = """\
import torch
from torch import nn
class LossFunction(nn.Module):
    def forward(self, prediction, target):
        return self._forward(prediction, target).mean()
class CrossEntropy(LossFunction):
    def __init__(self, options):
        super().__init__()
        self._options = options
    def _forward(self, prediction, target):
        index = torch.tensor([self._options.index(v) for v in target]{device})
        return nn.functional.cross_entropy(prediction, index)
"""


def test_a_forward_hook_of_a_subclass_is_part_of_forward() -> None:
    assert lines(HOOK.format(device=""), "GPD106") == [11]
    assert lines(HOOK.format(device=", device=prediction.device"), "GPD106") == []
