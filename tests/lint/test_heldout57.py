"""Regressions of held-out set 57 (public repositories), reduced and rewritten here: the correct
code each rule must leave alone, next to the bug it still finds."""

from __future__ import annotations

from lint_lines import lines

# a diffusion tutorial: the noise schedule is built on the device the constructor is given
SCHEDULE = """\
import torch
import torch.nn as nn

dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Schedule(nn.Module):
    def __init__(self, net, steps=100, device="cuda"):
        super().__init__()
        self.net = net
        b = torch.linspace(1e-4, 0.02, steps){move}
        self.root_b = torch.sqrt(b)

    def forward(self, x):
        t = torch.randint(0, 100, (x.shape[0],), device=x.device)
        return self.net(x * self.root_b[t].view(-1, 1))


sched = Schedule(nn.Linear(4, 4).to(dev), device=dev).to(dev)
out = sched(torch.randn(8, 4).to(dev))
"""


def test_a_tensor_derived_from_one_built_on_the_device_is_placed() -> None:
    assert lines(SCHEDULE.format(move=".to(device)"), "GPD105") == []
    assert lines(SCHEDULE.format(move=""), "GPD105") == [12]
    # a device that defaults to None (recall 49/07, flamo's filters): built on the CPU then
    optional = SCHEDULE.format(move=".to(device)").replace('device="cuda"', "device=None")
    assert lines(optional, "GPD105") == [12]


# PyTorch's style-transfer tutorial: the normalisation copies the device tensors it is given
NORMALIZATION = """\
import torch
import torch.nn as nn

dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
mean_t = torch.tensor([0.485, 0.456, 0.406]){move}
std_t = torch.tensor([0.229, 0.224, 0.225]){move}


class Normalization(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.mean = torch.tensor(mean).view(-1, 1, 1)
        self.std = torch.tensor(std).view(-1, 1, 1)

    def forward(self, img):
        return (img - self.mean) / self.std


norm = Normalization(mean_t, std=std_t).to(dev)
print(norm(torch.rand(1, 3, 8, 8).to(dev)).shape)
"""


def test_a_copy_of_what_every_construction_passes_on_the_device_is_placed() -> None:
    assert lines(NORMALIZATION.format(move=".to(dev)"), "GPD105") == []
    assert lines(NORMALIZATION.format(move=""), "GPD105") == [12, 13]
    # one construction with host statistics is enough for the bug
    host = NORMALIZATION.format(move=".to(dev)") + "other = Normalization([0.5] * 3, std_t)\n"
    assert lines(host, "GPD105") == [12]


# tez: a trainer library whose loaders go through Accelerator.prepare; nothing builds it here
PREPARED = """\
import torch
from accelerate import Accelerator


class Runner:
    def __init__(self, model, train_loader, eval_loader):
        self.acc = Accelerator(device_placement=True)
        self.model, self.train_loader, self.eval_loader = self.acc.prepare(
            model, train_loader, eval_loader
        )

    def run_model(self, batch):
        return self.model(**batch)

    def evaluate(self, loader):
        total = 0.0
        for batch in loader:
            with torch.no_grad():
                total += self.run_model(batch).item()
        return total

    def fit(self):
        for batch in self.train_loader:
            self.acc.backward(self.run_model(batch))
        return self.evaluate({loader})
"""


def test_a_helper_method_is_walked_with_what_the_class_own_driver_passes() -> None:
    assert lines(PREPARED.format(loader="self.eval_loader"), "GPD101") == []
    # the driver hands the helper a loader that is not prepared: reported
    unprepared = PREPARED.format(loader="torch.utils.data.DataLoader(range(4))")
    assert lines(unprepared, "GPD101") == [13]
