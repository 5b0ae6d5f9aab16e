"""Precision regressions from the fourteenth held-out set of public repositories (a metric
learning library and its tests, a transformer library's training scripts, a textbook's
notebooks), reduced and rewritten here: correct code each rule must leave alone, next to the
bug it must still report."""

from __future__ import annotations

from lint_lines import lines

# a loss written as a module whose constructor keeps only what the caller gives it
CALLER_GIVEN = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
class Margin(torch.nn.Module):
    def __init__(self, centers, scale, eps=1e-6):
        super().__init__()
        self.scale = scale
        self.eps = eps
        self.centers = {kept}
        self.count = centers.size(0)
    def forward(self, x):
        return (x @ self.centers.t()).mean() * self.scale
centers = {centers}
criterion = Margin(centers, scale={scale})
print(criterion(torch.randn(5, 3, device=device)))
"""
NORMED = "centers / (centers.norm() + eps)"


def test_a_module_keeping_only_caller_values_holds_no_weights() -> None:
    on_device = "torch.nn.Parameter(torch.randn(4, 3, device=device))"
    for kept in (NORMED, "centers"):
        source = CALLER_GIVEN.format(kept=kept, centers=on_device, scale="0.5")
        assert lines(source, "GPD102") == [], kept


def test_a_module_given_a_module_or_a_host_parameter_is_weighted() -> None:
    host = "torch.nn.Parameter(torch.randn(4, 3))"
    assert lines(CALLER_GIVEN.format(kept="centers", centers=host, scale="0.5"), "GPD102") == [13]
    on_device = "torch.randn(4, 3, device=device)"
    layer = "torch.nn.Linear(3, 3)"
    source = CALLER_GIVEN.format(kept=NORMED, centers=on_device, scale=layer)
    assert lines(source, "GPD102") == [13]


# a loss made of another weightless loss and the numbers it was given
NESTED = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
class Focal(torch.nn.Module):
    def __init__(self, gamma=2.0, device="cuda:0"):
        super().__init__()
        self.gamma = gamma
        self.device = device
    def forward(self, p, t):
        return ((1 - p) ** self.gamma * t).sum()
class Detection(torch.nn.Module):
    def __init__(self, factor, overlap, device="cuda:0", **kwargs):
        super().__init__()
        self.focal = Focal(**kwargs)
        self.factor = factor
        self.overlap = overlap
        self.device = device
    def forward(self, p, t):
        return self.focal(p, t) * self.factor
criterion = Detection({factor}, overlap=0.5)
net = torch.nn.Linear(4, 4).to(device)
x = torch.randn(2, 4).to(device)
print(criterion(net(x), x))
"""


def test_a_loss_of_weightless_parts_and_numbers_is_not_moved() -> None:
    assert lines(NESTED.format(factor="5.0"), "GPD102") == []
    assert lines(NESTED.format(factor="torch.nn.Linear(4, 4)"), "GPD102") == [19]


def test_a_parameter_rebound_to_a_layer_is_a_weight() -> None:
    rebound = CALLER_GIVEN.replace(
        "super().__init__()", "super().__init__()\n        scale = torch.nn.Linear(3, 3)"
    )
    on_device = "torch.randn(4, 3, device=device)"
    assert lines(rebound.format(kept=NORMED, centers=on_device, scale="0.5"), "GPD102") == [14]
