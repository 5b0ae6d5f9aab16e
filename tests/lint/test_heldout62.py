"""Regressions of held-out set 62 and its recall reports, reduced and rewritten here: the correct
code each rule must leave alone, next to the bug it finds."""

from __future__ import annotations

from lint_lines import lines

# CWT-for-FSS (a recall report): the support labels go to this rank's GPU by its number
RANK_MOVE = """\
import torch
import torch.distributed as dist
import torch.nn as nn

dist.init_process_group("nccl")
head = nn.Conv2d(8, 2, 1).cuda(dist.get_rank())
criterion = nn.CrossEntropyLoss()
for feats, labels in [(torch.rand(1, 8, 4, 4), torch.zeros(1, 4, 4))]:
    feats = feats.to(dist.get_rank(), non_blocking=True)
    labels = labels.to({target}).long()
    loss = criterion(head(feats), labels)
"""


def test_a_move_to_the_rank_a_call_returns_is_a_move() -> None:
    assert lines(RANK_MOVE.format(target="dist.get_rank()"), "GPD101") == []
    assert lines(RANK_MOVE.format(target="torch.cuda.current_device()"), "GPD101") == []
    # a conversion a helper names is no move
    assert lines(RANK_MOVE.format(target="get_dtype()"), "GPD101") == [11]


# yolov5's select_device (ultralytics/yolov5#6431): the mask is set after an assert that asked CUDA
VISIBLE_AFTER_ASSERT = """\
import os
import torch


def select_device(device):
    if device:
        {check}
        os.environ["CUDA_VISIBLE_DEVICES"] = device
    return torch.device("cuda:0" if device else "cpu")
"""


def test_cuda_asked_in_an_assert_is_initialised() -> None:
    asserted = 'assert torch.cuda.is_available(), "CUDA is not available"'
    assert lines(VISIBLE_AFTER_ASSERT.format(check=asserted), "GPD403") == [8]
    # NVML counts the devices without starting CUDA, in an assert as anywhere
    counted = "assert torch.cuda.device_count() > 0"
    assert lines(VISIBLE_AFTER_ASSERT.format(check=counted), "GPD403") == []


# pggan's equalized layers (set 62): a 0-dim scale kept as a plain attribute, used as a number
SCALE = """\
import torch
import torch.nn as nn


class Equalized(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)
        self.scale = torch.mean(self.lin.weight.data ** 2) ** 0.5
        self.lin.weight.data.copy_(self.lin.weight.data / self.scale)

    def forward(self, x):
        return {use}


layer = Equalized(4).to("cuda")
"""


def test_a_zero_dim_attribute_used_as_a_number_is_no_finding() -> None:
    for use in ("self.lin(x.mul(self.scale))", "self.lin(x) * self.scale"):
        assert lines(SCALE.format(use=use), "GPD105") == []


def test_a_zero_dim_attribute_handed_elsewhere_is_reported() -> None:
    # `torch.where`'s branches are no arithmetic operands: they must be on x's device
    used = "torch.where(x > 0, self.lin(x), self.scale)"
    assert lines(SCALE.format(use=used), "GPD105") == [9]


# DropEdge (set 62): a flag that can only be true with CUDA guards the `.cuda()` under it
FLAG_GUARD = """\
import argparse
import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--no_cuda", action="store_true")
parser.add_argument("--mixmode", action="store_true")
args = parser.parse_args()
args.cuda = not args.no_cuda and torch.cuda.is_available()
args.mixmode = {mixmode}
net = nn.Linear(8, 2)
if args.cuda:
    net.cuda()
adj = torch.rand(8, 8)
if args.mixmode:
    adj = adj.cuda()
"""


def test_a_flag_true_only_with_cuda_guards_cuda() -> None:
    available = "args.no_cuda and args.mixmode and torch.cuda.is_available()"
    assert lines(FLAG_GUARD.format(mixmode=available), "GPD203") == []
    # the option alone, chosen on a machine without a GPU, fails there
    assert lines(FLAG_GUARD.format(mixmode="args.mixmode"), "GPD203") == [16]


# lightning-bolts (set 62): a helper of a Lightning step copies a batch's tensor
BATCH_COPY = """\
import torch
import torch.nn as nn
from pytorch_lightning import LightningModule


def weighted_loss(batch, batch_weights, net):
    states, targets = batch
    batch_weights = torch.tensor({weights})
    return (batch_weights * (net(states) - targets) ** 2).mean()


class Agent(LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 1)

    def training_step(self, batch, _):
        samples, weights = batch
        return weighted_loss(samples, weights, self.net)
"""


def test_a_copy_of_a_lightning_batch_tensor_is_where_lightning_put_it() -> None:
    assert lines(BATCH_COPY.format(weights="batch_weights"), "GPD106") == []
    assert lines(BATCH_COPY.format(weights="[1.0, 0.5]"), "GPD106") == [8]


# LAVSE (set 62): video moved under `if av:` and read only under `if av:` again
SAME_FLAG = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader


def fit(device, model, dataset, criterion, av):
    for clean, video in DataLoader(dataset, batch_size=4):
        clean = clean.to(device)
        if av:
            video = video.to(device)
        {between}
        if av:
            loss = criterion(model(clean), video)
        else:
            loss = criterion(model(clean), clean)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Linear(3, 3).to(device)
fit(device, net, None, nn.MSELoss(), True)
"""


def test_a_tensor_moved_under_a_flag_is_on_the_device_under_the_same_flag() -> None:
    assert lines(SAME_FLAG.format(between="pass"), "GPD101") == []


def test_another_flag_or_a_flag_set_again_is_no_such_path() -> None:
    assert lines(SAME_FLAG.format(between="av = len(clean) > 2"), "GPD101") == [13]
    other = SAME_FLAG.replace("if av:\n            loss", "if clean.ndim:\n            loss")
    assert lines(other.format(between="pass"), "GPD101") == [13]


# The BERT fine-tuning notebooks (set 62): the first cell stops without a GPU
GPU_REQUIRED = """\
import tensorflow as tf
import torch
import torch.nn as nn

{check}
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Linear(10, 2)
losses = torch.load("training_loss.pt")
net.cuda()
"""


def test_a_notebook_that_stops_without_a_gpu_offers_no_cpu_path() -> None:
    check = (
        'if tf.test.gpu_device_name() != "/device:GPU:0":\n'
        '    raise SystemError("GPU device not found")'
    )
    for code in ("GPD201", "GPD203"):
        assert lines(GPU_REQUIRED.format(check=check), code) == []
    assert lines(GPU_REQUIRED.format(check=""), "GPD201") == [8]
    assert lines(GPU_REQUIRED.format(check=""), "GPD203") == [9]


# TSAI-DeepNLP's attention notebook (set 62): after `fit`, Lightning's teardown put the module back
# on the host, and a method the notebook calls builds its tensors on `self.device`, the CPU
AFTER_FIT = """\
import torch
import torch.nn as nn
import pytorch_lightning as pl


class Seq2Seq(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(5, 5)

    def training_step(self, batch, batch_idx):
        return self.enc(batch[0]).pow(2).mean()

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())

    def attend(self, ids):
        return torch.zeros(4, 4, device=self.device)


model = Seq2Seq()
pl.Trainer(accelerator="gpu", max_epochs=1).fit(model, None)
{move}
weights = model.attend([1, 2, 3])
print(weights.numpy())
"""


def test_a_lightning_module_the_script_left_on_the_host_builds_on_the_host() -> None:
    assert lines(AFTER_FIT.format(move=""), "GPD202") == []
    assert lines(AFTER_FIT.format(move="model.cuda()"), "GPD202") == [25]
