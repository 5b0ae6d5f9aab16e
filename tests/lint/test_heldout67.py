"""Regressions of held-out set 67, reduced and rewritten here: the bug each rule must report,
next to the correct code it must leave alone."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines, project_lines

# pytorch_e2e (set 67): the lengths `pad_packed_sequence` returns are a CPU tensor wherever
# the packed batch is
PADDED = """\
import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(8, 16, batch_first=True)

    def forward(self, padded, lengths):
        padded = padded.to(next(self.parameters()).device)
        out, _ = self.rnn(pack_padded_sequence(padded, lengths, batch_first=True))
        out_pad, out_lens = pad_packed_sequence(out, batch_first=True)
        return np.fromiter({converted}, dtype=np.float32)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
tagger = Tagger().to(device)
print(tagger(torch.randn(2, 5, 8), torch.tensor([5, 3])))
"""


def test_the_lengths_of_a_padded_packed_sequence_are_on_the_host() -> None:
    assert lines(PADDED.format(converted="out_lens"), "GPD202") == []
    # the padded outputs are where the packed batch was: on the device
    assert lines(PADDED.format(converted="out_pad.flatten()"), "GPD202") == [16]


# pytorch_e2e (set 67): the CPU arm maps the checkpoint, the GPU arm does not need to
ARMS = """\
import argparse

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--gpus", type=int, default=0)
parser.add_argument("--ckpt", default="net.pt")
opts = parser.parse_args()
net = nn.Linear(4, 2)
if opts.gpus <= 0:
    net.load_state_dict(torch.load({mapped}, map_location="cpu"))
else:
    net.load_state_dict(torch.load(opts.ckpt))
device = torch.device("cuda" if opts.gpus > 0 else "cpu")
print(net.to(device)(torch.randn(1, 4).to(device)))
"""


def test_a_load_whose_other_arm_maps_the_same_path_to_the_cpu() -> None:
    assert lines(ARMS.format(mapped="opts.ckpt"), "GPD201") == []
    # under a test about something else, another file on the other arm says nothing about
    # this one (under `opts.gpus <= 0` the load is on the GPU arm whatever the other arm reads)
    unrelated = ARMS.format(mapped='"pretrained.pt"').replace("opts.gpus <= 0", "opts.fast")
    assert lines(unrelated, "GPD201") == [14]
    assert lines(ARMS.format(mapped='"pretrained.pt"'), "GPD201") == []


# the same, as pytorch_e2e has it: the model and its helper in one file, the calls in another
HELPER_MODEL = """\
import torch
from torch import nn


def to_cuda(module, tensor):
    device = next(module.parameters()).device
    return tensor.to(device)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = nn.Linear(8, 2)

    def forward(self, feats):
        {move}
        return self.out(feats)
"""

TRAIN = """\
import torch

from model import Net

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = Net().to(device)
print(net(torch.randn(4, 8)))
"""


def test_a_forward_that_moves_its_input_through_a_helper_of_its_own_file(
    tmp_path: Path,
) -> None:
    moved = HELPER_MODEL.format(move="feats = to_cuda(self, feats)")
    assert project_lines(tmp_path, {"model.py": moved, "main.py": TRAIN}, "GPD101") == []
    unmoved = HELPER_MODEL.format(move="pass")
    assert project_lines(tmp_path, {"model.py": unmoved, "main.py": TRAIN}, "GPD101") == [7]


# pytorch_e2e (set 67): `forward` moves its inputs to its own device through a helper of its
# file; here the script is in that file too
SCRIPT = """\


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = Net().to(device)
print(net(torch.randn(4, 8)))
"""


def test_a_forward_that_moves_its_input_through_a_helper() -> None:
    moved = HELPER_MODEL.format(move="feats = to_cuda(self, feats)") + SCRIPT
    assert lines(moved, "GPD101") == []
    assert lines(HELPER_MODEL.format(move="pass") + SCRIPT, "GPD101") == [22]


# OpenNMT's SRU (set 67): a function of the file that answers whether CUDA can be used is a
# guard where it is called
REQUIREMENT = """\
import subprocess

import torch


def check_sru_requirement(abort=False):
    try:
        subprocess.check_output("pip freeze | grep cupy", shell=True)
    except subprocess.CalledProcessError:
        return False
    if {missing}:
        if not abort:
            return False
        raise AssertionError("SRU needs CUDA")
    return True


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
if check_sru_requirement():
    warm_up = torch.rand(1, 1).cuda()
"""


def test_cuda_under_a_function_that_answers_whether_cuda_is_available() -> None:
    for missing in ("torch.cuda.is_available() is False", "not torch.cuda.is_available()"):
        assert lines(REQUIREMENT.format(missing=missing), "GPD203") == []
    # a requirement about something else guards nothing
    assert lines(REQUIREMENT.format(missing="shutil.which('nvcc') is None"), "GPD203") == [20]


def test_a_comparison_with_false_flips_an_availability_test() -> None:
    script = """\
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Linear(4, 2).to(device)
out = net(torch.randn(3, 4).to(device))
if torch.cuda.is_available() {op}:
    print(out.detach().numpy())
"""
    # `is False`, `== False`: the arm without CUDA, where the output is on the host
    assert lines(script.format(op="is False"), "GPD202") == []
    assert lines(script.format(op="== False"), "GPD202") == []
    assert lines(script.format(op="is True"), "GPD202") == [8]
    assert lines(script.format(op="is not False"), "GPD202") == [8]


# PyTorch-Notebooks (set 67): a placeholder model of weightless layers runs where its input is
PLACEHOLDER = """\
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.randn(100, 3).to(device)
y = torch.randn(100, 1).to(device)
model = nn.Sequential(nn.Linear(3, 1)).to(device)
loss_fn = nn.MSELoss()
print(loss_fn(model(X), y))
model = nn.Sequential({layers})
y_hat = model(X)
print(loss_fn(y_hat, y))
"""


def test_a_placeholder_sequential_of_weightless_layers_needs_no_move() -> None:
    assert lines(PLACEHOLDER.format(layers="nn.Identity()"), "GPD1") == []
    assert lines(PLACEHOLDER.format(layers="nn.Flatten(), nn.ReLU()"), "GPD1") == []
    # a weighted layer in it: the re-created model is on the host
    assert lines(PLACEHOLDER.format(layers="nn.Identity(), nn.Linear(3, 1)"), "GPD102") == [10]


# recall set 67 (MIMAMO-Net): the device comes from a project helper that picks the CPU
# where no GPU is, so the script runs on the CPU too and its checkpoint must be mapped
PICKER = """\
import torch


def get_device():
    if torch.cuda.device_count() > 0:
        return torch.device("cuda:0")
    return {other}
"""
TESTER = """\
import torch
from torch import nn

from utils import get_device

device = get_device()


class Tester:
    def __init__(self, model_path):
        self.model = nn.Linear(4, 2)
        self.model.load_state_dict(torch.load(model_path))
        self.model.to(device)
"""


def test_a_load_in_a_script_whose_device_helper_falls_back_to_the_cpu(tmp_path: Path) -> None:
    picker = PICKER.format(other='torch.device("cpu")')
    assert project_lines(tmp_path, {"utils.py": picker, "main.py": TESTER}, "GPD201") == [12]
    # a helper that only ever picks a GPU offers no CPU path
    gpu_only = PICKER.format(other='torch.device("cuda:1")')
    assert project_lines(tmp_path, {"utils.py": gpu_only, "main.py": TESTER}, "GPD201") == []


# recall set 67 (a demo script): torch and the device both come from `from config import *`
CONFIG = """\
import torch
device = torch.device({device})
MODEL = "model.pth"
"""
DEMO = """\
from config import *

model = torch.load(MODEL)
model = model.to(device)
"""


def test_a_load_whose_torch_and_device_come_from_a_star_import(tmp_path: Path) -> None:
    falls_back = CONFIG.format(device='"cuda" if torch.cuda.is_available() else "cpu"')
    assert project_lines(tmp_path, {"config.py": falls_back, "main.py": DEMO}, "GPD201") == [3]
    gpu_only = CONFIG.format(device='"cuda"')
    assert project_lines(tmp_path, {"config.py": gpu_only, "main.py": DEMO}, "GPD201") == []
