"""Precision regressions from the ninth held-out set of public repositories (a RetinaNet's
focal loss and detection head), reduced and rewritten here: correct code each rule must leave
alone, next to the bug it must still report."""

from __future__ import annotations

from lint_lines import lines

# a focal loss that builds its targets on the host and moves them when CUDA is available,
# with the same `torch.where` written once per arm of the availability test
FOCAL = """\
import torch
from torch import nn
class FocalLoss(nn.Module):
    def forward(self, classifications):
        classification = classifications[0]
        targets = {targets}
        if torch.cuda.is_available():
            targets = targets.cuda()
        cls_loss = targets * classification
        if torch.cuda.is_available():
            cls_loss = torch.where(targets > 0, cls_loss, torch.zeros(cls_loss.shape).cuda())
        else:
            cls_loss = torch.where(targets > 0, cls_loss, {cpu_zeros})
        return cls_loss.sum()
loss = FocalLoss()
x = torch.randn(2, 3, 4)
if torch.cuda.is_available():
    x = x.cuda()
print(loss(x))
"""


def test_arithmetic_on_a_factory_tensor_moved_later_is_placed() -> None:
    source = FOCAL.format(targets="torch.ones(classification.shape) * -1", cpu_zeros="0.0")
    assert lines(source, "GPD106") == []


def test_arithmetic_on_a_factory_tensor_never_moved_stays_gpd106() -> None:
    source = FOCAL.format(targets="torch.ones(classification.shape) * -1", cpu_zeros="0.0")
    source = source.replace("            targets = targets.cuda()\n", "            pass\n")
    assert lines(source, "GPD106") == [6]


def test_the_cpu_arm_of_an_availability_test_meets_no_gpu_tensor() -> None:
    source = FOCAL.format(targets="torch.ones(3, 4)", cpu_zeros="torch.zeros(cls_loss.shape)")
    assert lines(source, "GPD101") == []


def test_the_gpu_arm_still_reports_a_host_tensor() -> None:
    source = FOCAL.format(targets="torch.ones(3, 4)", cpu_zeros="0.0").replace(
        "torch.zeros(cls_loss.shape).cuda()", "torch.zeros(cls_loss.shape)"
    )
    # reported where the host tensor is made, as the factory's finding
    assert lines(source, "GPD106") == [11]
    assert lines(source, "GPD101") == []


# a detection head that also collects per-class results in a list it never reads again
HEAD = """\
import torch
from torch import nn
class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
    def forward(self, x):
        classification = self.fc(x)
        results = [[], []]
        for i in range(classification.shape[1]):
            scores = classification[:, i]
            results[0].extend(scores)
            results[1].extend(torch.tensor([i] * scores.shape[0]))
        return {returned}
model = Head().cuda()
print(model(torch.randn(2, 4).cuda()))
"""


def test_a_factory_tensor_put_in_a_list_never_read_meets_nothing() -> None:
    assert lines(HEAD.format(returned="classification"), "GPD106") == []


def test_the_list_returned_stays_gpd106() -> None:
    assert lines(HEAD.format(returned="classification, results"), "GPD106") == [13]
