"""Recall regressions from a triage of real device-bug reports (recall set 12), reduced and
rewritten here: rules that stayed silent because the file "placed nothing" itself, or because an
optimizer's parameters came in groups. Each bug sits next to the correct code the rule must
still leave alone."""

from __future__ import annotations

from lint_lines import lines

# GPD103: a discarded move of the file's own tensor, in a file that places nothing itself
# (accelerate or a caller placed the batch)

TIMESTEPS_TO_BATCH = """\
import torch
def step(batch):
    t = torch.randint(0, 1000, (batch.shape[0],))
    t.to(batch.device)
    return t
"""


def test_discarded_move_to_a_batchs_device_without_placement() -> None:
    assert lines(TIMESTEPS_TO_BATCH, "GPD103") == [4]


INHERITED_SAMPLER = """\
import numpy as np
import torch
from accelerate import Accelerator


class Sampler:
    def sample(self, n):
        indices = torch.from_numpy(np.random.choice(10, size=(n,))).long()
        weights = torch.ones(n)
        return indices, weights


class UniformSampler(Sampler):
    def __init__(self, steps):
        self.steps = steps


class Loop:
    def __init__(self, model, data):
        self.accelerator = Accelerator()
        self.sampler = UniformSampler(1000)
        self.model, self.data = self.accelerator.prepare(model, data)

    def step(self, batch):
        t, weights = self.sampler.sample(batch.shape[0])
        t.to(batch.device)
        return self.model(batch, t) * weights
"""


def test_discarded_move_of_what_an_inherited_method_returns() -> None:
    """``sample`` is defined on the plain base class: the subclass's instance runs it."""
    assert lines(INHERITED_SAMPLER, "GPD103") == [26]


def test_own_method_wins_over_the_inherited_one() -> None:
    overridden = INHERITED_SAMPLER.replace(
        "        self.steps = steps\n",
        "        self.steps = steps\n\n    def sample(self, n):\n        return None, None\n",
    )
    assert lines(overridden, "GPD103") == []


def test_discarded_moves_that_change_nothing_without_placement_stay_silent() -> None:
    source = """\
import torch
def step(batch, x):
    model = torch.nn.Linear(4, 2)
    model.to(batch.device)
    t = torch.zeros(4)
    t.cpu()
    t.to("cpu", non_blocking=True)
    x.to(batch.device)
    return model(t)
"""
    # a module moves in place; the file's own tensors are on the CPU already; `x` is a tensor
    # only by its name and may be an object whose `.to()` works in place
    assert lines(source, "GPD103") == []


# GPD104: the Trainer places a LightningModule, so its plain lists of modules matter in a file
# that places nothing

LIGHTNING_CRITERIA = """\
import torch
import pytorch_lightning as pl


class Reader(pl.LightningModule):
    def __init__(self, positions):
        super().__init__()
        self.head = torch.nn.Linear(64, 94)
        self.criterions = []
        for _ in range(positions):
            self.criterions.append(torch.nn.CrossEntropyLoss(weight=torch.ones(94)))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return self.criterions[0](self.head(x), y)
"""


def test_plain_list_in_a_lightning_module_without_placement() -> None:
    assert lines(LIGHTNING_CRITERIA, "GPD104") == [9]


def test_module_list_in_a_lightning_module_stays_silent() -> None:
    source = LIGHTNING_CRITERIA.replace(
        "self.criterions = []", "self.criterions = torch.nn.ModuleList()"
    )
    assert lines(source, "GPD104") == []


# GPD302 / GPD301: an optimizer built from parameter groups belongs to the model

RESUME_GROUPS = """\
import torch
import torch.nn as nn


class SegNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.base = nn.Conv2d(3, 8, 3)
        self.head = nn.Conv2d(8, 2, 1)

    def get_basenet_params(self):
        return self.base.parameters()

    def forward(self, x):
        return self.head(self.base(x))


def main(args):
    model = SegNet()
    {groups}
    if args.resume:
        checkpoint = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(checkpoint["state_dict"])
        optimizer.load_state_dict(checkpoint["optimizer"])
    model = model.cuda()
"""

LOAD_STATE = '        optimizer.load_state_dict(checkpoint["optimizer"])'
GROUPS = {
    "a model method, in a variable": (
        "groups = [{'params': model.get_basenet_params(), 'lr': args.lr},"
        " {'params': model.head.parameters(), 'lr': args.lr * 10}]\n"
        "    optimizer = torch.optim.SGD(groups, lr=args.lr, momentum=0.9)"
    ),
    "inline": "optimizer = torch.optim.Adam([{'params': model.parameters(), 'lr': 1e-3}])",
    "a parameter": "optimizer = torch.optim.SGD([{'params': model.head.weight}], lr=0.1)",
}


def test_optimizer_state_loaded_before_placement_with_param_groups() -> None:
    for shape, groups in GROUPS.items():
        source = RESUME_GROUPS.format(groups=groups)
        load = source.split("\n").index(LOAD_STATE) + 1
        assert lines(source, "GPD302") == [load], shape


def test_param_groups_of_an_unrelated_object_are_not_the_models() -> None:
    groups = (
        "extra = build()\n    optimizer = torch.optim.SGD([{'params': extra.get_params()}], lr=0.1)"
    )
    assert lines(RESUME_GROUPS.format(groups=groups), "GPD302") == []


def test_optimizer_of_a_replaced_model_with_param_groups() -> None:
    source = """\
import torch
net = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD([{"params": net.parameters(), "lr": 0.1}], momentum=0.9)
net = torch.nn.Linear(4, 2).cuda()
optimizer.step()
"""
    assert lines(source, "GPD301") == [4]
