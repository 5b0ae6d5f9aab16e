"""Regressions of held-out set 71 and its recall set, reduced and rewritten here: the bug each
rule must report, next to the correct code it must leave alone."""

from __future__ import annotations

from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_source

# bentrevett/pytorch-pos-tagging#4 (recall 71/11): an accuracy helper divides a device count by
# a legacy host tensor; the caller then reads the result with `.item()`, too late
ACCURACY = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 3).to(device)


def categorical_accuracy(preds, y):
    correct = preds.argmax(dim=1).eq(y)
    return correct.sum() / {denominator}


def train(model, batches):
    total = 0
    for text, tags in batches:
        predictions = model(text.to(device))
        acc = categorical_accuracy(predictions, tags.to(device))
        total += acc.item()
    return total


train(model, loader)
"""


def test_a_helper_whose_host_tensor_meets_the_device_before_the_item_read() -> None:
    legacy = ACCURACY.format(denominator="torch.FloatTensor([y.shape[0]])")
    assert lines(legacy, "GPD106") == [9]
    # a 0-dim host tensor is a number beside the device count
    assert lines(ACCURACY.format(denominator="torch.tensor(y.shape[0])"), "GPD106") == []
    # a host tensor only read back as a number never meets the device
    number = ACCURACY.replace("correct.sum() / ", "").format(
        denominator="torch.prod(torch.tensor(y.shape))"
    )
    assert lines(number, "GPD106") == []


# songyouwei/ABSA-PyTorch (set 71): the training method saves the best state and returns its
# path; `run()` reloads that file in the same process
RETURNED = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Instructor:
    def __init__(self, model):
        self.model = model.to(device)

    def _train(self):
        path = "state_dict/best_{{0}}".format(1)
        torch.save(self.model.state_dict(), {saved})
        return path

    def run(self):
        best_model_path = self._train()
        self.model.load_state_dict(torch.load(best_model_path))
"""


def test_a_path_returned_by_the_method_that_saved_there() -> None:
    assert lines(RETURNED.format(saved="path"), "GPD201") == []
    # the method saves elsewhere and returns a path of another run's file
    assert lines(RETURNED.format(saved='"state_dict/last"'), "GPD201") == [17]


# Kaixhin/ACER (set 71): a Hogwild worker's `rank` is its process index, not a GPU; a model
# parameter beside it is not typed as placed
WORKER = """\
import torch


def train({first}, shared_model):
    torch.manual_seed(1)
    hx = torch.zeros(1, 8)
    out = shared_model(torch.zeros(1, 8), hx)
"""


def test_a_rank_parameter_places_no_model() -> None:
    assert lines(WORKER.format(first="rank"), "GPD101") == []
    assert lines(WORKER.format(first="device"), "GPD101") == [7]


# mistralai/mistral-inference#252 (recall 71/12): a process group made without a backend, each
# rank on its GPU; a length broadcast as a CPU tensor
BROADCAST = """\
import torch
import torch.distributed as dist

torch.distributed.init_process_group({backend})
{pinned}
length_tensor = torch.tensor([5], dtype=torch.int)
dist.broadcast(length_tensor, src=0)
"""


def test_a_group_without_a_backend_on_ranks_that_set_their_gpu() -> None:
    pinned = "torch.cuda.set_device(dist.get_rank())"
    assert lines(BROADCAST.format(backend="", pinned=pinned), "GPD406") == [7]
    assert lines(BROADCAST.format(backend="", pinned=""), "GPD406") == []  # a CPU job: gloo
    assert lines(BROADCAST.format(backend='"gloo"', pinned=pinned), "GPD406") == []


# mazzzystar/randomCNN-voice-transfer#16 (recall 71/10): a tensor made to be optimized, moved
# to the GPU before the optimizer is built over the (non-leaf) copy
NON_LEAF = """\
import torch
from torch.autograd import Variable

cuda = torch.cuda.is_available()
a_G_var = Variable(torch.randn(1, 1, 8, 8) * 1e-3, requires_grad=True)
if cuda:
    a_G_var = a_G_var.cuda(){releafed}
optimizer = torch.optim.Adam([a_G_var])
"""


def test_a_moved_copy_of_a_tensor_made_to_be_optimized() -> None:
    assert lines(NON_LEAF.format(releafed=""), "GPD303") == [7]
    assert lines(NON_LEAF.format(releafed=".detach().requires_grad_()"), "GPD303") == []
    made_there = NON_LEAF.replace("* 1e-3, requires_grad=True", ", device='cuda'")
    assert lines(made_there.format(releafed=""), "GPD303") == []
    # moved under no_grad (richzhang/PerceptualSimilarity): a leaf, which no longer requires grad
    untracked = NON_LEAF.replace("if cuda:\n    a_G_var", "with torch.no_grad():\n    a_G_var")
    assert lines(untracked.format(releafed=""), "GPD303") == []


# huggingface/transformers#4450 (recall 71/06, reduced to one file): the project's own AdamW,
# an Optimizer subclass, restores its state before the model is moved
OWN_OPTIMIZER = """\
import torch
from torch.optim import Optimizer


class AdamW(Optimizer):
    def __init__(self, params, lr=1e-3):
        super().__init__(params, dict(lr=lr))


class {name}:
    def __init__(self, params):
        self.params = list(params)

    def load_state_dict(self, state):
        self.state = state


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2)
optimizer = {built}(model.parameters())
optimizer.load_state_dict(torch.load("optimizer.pt", map_location="cpu"))
model.to(device)
"""


def test_an_optimizer_class_of_the_project_restored_before_the_move() -> None:
    assert lines(OWN_OPTIMIZER.format(name="Tracker", built="AdamW"), "GPD302") == [21]
    # a plain class with a `load_state_dict` of its own is no optimizer
    assert lines(OWN_OPTIMIZER.format(name="Tracker", built="Tracker"), "GPD302") == []


# clovaai/deep-text-recognition-benchmark (re-scored this session): the label converter is one
# of two classes, chosen by an option; their `encode` return host and device tensors
CONVERTERS = """\
import numpy as np
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class HostConverter:
    def encode(self, text):
        return torch.from_numpy(np.array(text)), len(text)


class DeviceConverter:
    def encode(self, text):
        return torch.LongTensor(text).to(device), len(text)


class OtherDeviceConverter:
    def encode(self, text):
        return torch.tensor(text, device=device), len(text)


def validate(model, criterion, converter, images, labels):
    preds = model(images.to(device))
    text_for_loss, length = converter.encode(labels)
    target = text_for_loss[:, 1:]
    return criterion(preds.view(-1, 2), target.contiguous().view(-1))


model = torch.nn.Linear(4, 2).to(device)
criterion = torch.nn.CrossEntropyLoss()
{chosen}
validate(model, criterion, converter, torch.zeros(2, 4), [0, 1])
"""


def test_an_instance_of_one_of_two_classes_walks_both() -> None:
    either = "if opt.ctc:\n    converter = {}()\nelse:\n    converter = DeviceConverter()"
    # both classes encode onto the device (the join once kept whichever came first)
    assert lines(CONVERTERS.format(chosen=either.format("OtherDeviceConverter")), "GPD101") == []
    # one of them leaves its labels on the host: the batch is on the host on that path
    assert lines(CONVERTERS.format(chosen=either.format("HostConverter")), "GPD101") == [26]
    assert lines(CONVERTERS.format(chosen="converter = HostConverter()"), "GPD101") == [26]


# hzwer/ECCV2022-RIFE (re-scored this session): a kernel made on the host in `__init__`, then
# rebound there to its moved copy: the module's methods read the moved one
SOBEL = """\
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SOBEL(nn.Module):
    def __init__(self):
        super().__init__()
        self.kernelX = torch.tensor([[1, 0, -1], [2, 0, -2], [1, 0, -1]]).float()
        {rebound}

    def forward(self, img):
        return F.conv2d(img, self.kernelX, padding=1)


sobel = SOBEL().to(device)
"""


def test_a_kernel_rebound_to_its_moved_copy_in_init() -> None:
    moved = "self.kernelX = self.kernelX.unsqueeze(0).unsqueeze(0).to(device)"
    assert lines(SOBEL.format(rebound=moved), "GPD105") == []
    assert lines(SOBEL.format(rebound="pass"), "GPD105") == [11]


# HoyTta0/KnowledgeDistillation#6 (recall 71/13): the batch handed to the model is a list of
# host tensors: the advice moves each of them (a list has no `.to()`)
LISTED = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)
a, b, c = torch.zeros(2, 4), torch.zeros(2, 4), torch.zeros(2, 4)
out = model([a, b, c])
"""


def test_a_list_of_host_tensors_is_moved_tensor_by_tensor() -> None:
    result = lint_source(LISTED, "x.py", LintConfig(select=("GPD101",)))
    (finding,) = result.findings
    assert "`[a.to(device), b.to(device), c.to(device)]`" in finding.message
    assert "]).to(" not in finding.message
