"""Precision regressions from the sixth held-out set of public repositories (an ImageNet
training script, a course notebook with a CPU-only second section, a WaveNet vocoder's
evaluation and losses), reduced and rewritten here: correct code each rule must leave alone,
next to the bug it must still report."""

from __future__ import annotations

import pytest
from lint_lines import lines

BOTH_BRANCHES = """\
import torch
import torchvision.models as models
use_cuda = torch.cuda.is_available()
def main(args):
    model = models.__dict__[args.arch]()
    if args.arch.startswith("vgg"):
        model.features = torch.nn.DataParallel(model.features)
        model.cuda()
    else:
        {other}
    x = torch.randn(2, 3)
    if use_cuda:
        x = x.cuda()
    return model(x)
"""


def test_a_module_moved_in_both_branches_is_moved() -> None:
    source = BOTH_BRANCHES.format(other="model = torch.nn.DataParallel(model).cuda()")
    assert lines(source, "GPD102") == []


def test_a_module_moved_in_one_branch_only_stays_gpd102() -> None:
    source = BOTH_BRANCHES.format(other="model = torch.nn.DataParallel(model)")
    assert lines(source, "GPD102") == [8]


# a course notebook: a GPU regression section, then an Iris section trained on the CPU
NEXT_SECTION = """\
import torch
import torch.nn as nn
device = "cuda" if torch.cuda.is_available() else "cpu"
x = torch.randn(10, 7).to(device)
model = nn.Sequential(nn.Linear(7, 1)).to(device)
print(model(x))
x = torch.randn(10, 4)
model = nn.Sequential(nn.Linear(4, 3))
{setup}
for epoch in range(3):
    output = model(x)
"""


def test_a_new_model_trained_from_scratch_on_the_cpu_is_not_stale() -> None:
    setup = "optimizer = torch.optim.Adam(model.parameters(), lr=0.01)"
    assert lines(NEXT_SECTION.format(setup=setup), "GPD101") == []
    assert lines(NEXT_SECTION.format(setup=setup), "GPD102") == []


def test_a_model_recreated_and_reloaded_stays_a_finding() -> None:
    setup = 'model.load_state_dict(torch.load("model.pt", map_location=device))'
    assert lines(NEXT_SECTION.format(setup=setup), "GPD102") == [8]


RELOAD_BY_DEVICE = """\
import torch
use_cuda = torch.cuda.is_available()
device = torch.device("cuda" if use_cuda else "cpu")
model = torch.nn.Linear(4, 2).to(device)
if use_cuda:
    checkpoint = torch.load("ckpt.pth")
else:
    checkpoint = {cpu_load}
model.load_state_dict(checkpoint["state_dict"])
"""


def test_a_load_on_the_gpu_arm_of_a_device_test_is_not_gpd201() -> None:
    cpu_load = 'torch.load("ckpt.pth", map_location=lambda storage, loc: storage)'
    assert lines(RELOAD_BY_DEVICE.format(cpu_load=cpu_load), "GPD201") == []


def test_a_load_on_the_cpu_arm_stays_gpd201() -> None:
    source = RELOAD_BY_DEVICE.format(cpu_load='torch.load("ckpt.pth")')
    assert lines(source, "GPD201") == [8]


# WaveNet's losses: modules that hold only a loss without weights run wherever their inputs are
LOSS_WRAPPER = """\
import torch
import torch.nn as nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
class MaskedLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.criterion = {inner}
    def forward(self, input, target):
        return self.criterion(input, target).mean()
model = nn.Linear(4, 3).to(device)
criterion = MaskedLoss()
x, y = torch.randn(2, 4).to(device), torch.randint(0, 3, (2,)).to(device)
loss = criterion(model(x), y)
"""


@pytest.mark.parametrize(
    "inner", ["nn.CrossEntropyLoss(reduction='none')", "nn.NLLLoss()", "nn.Softmax(dim=1)"]
)
def test_a_module_holding_a_loss_without_weights_is_not_gpd102(inner: str) -> None:
    assert lines(LOSS_WRAPPER.format(inner=inner), "GPD102") == []


@pytest.mark.parametrize(
    "inner",
    ["nn.Linear(3, 3)", "nn.PReLU()", "nn.CrossEntropyLoss(weight=torch.ones(3))"],
)
def test_a_module_holding_weights_stays_gpd102(inner: str) -> None:
    assert lines(LOSS_WRAPPER.format(inner=inner), "GPD102") == [11]
