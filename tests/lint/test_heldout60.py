"""Regressions of held-out set 60 (public repositories) and of the recall reports of sets 59 and
60, reduced and rewritten here: the correct code each rule must leave alone, next to the bug it
finds."""

from __future__ import annotations

from pathlib import Path

import pytest
from lint_lines import lines, project_lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths

# pix2pixHD and SPADE (NVIDIA/pix2pixHD#159, NVlabs/SPADE#97): the options file offers the CPU
# ("use -1 for CPU"); a model file that reads the option hard-codes `.cuda()` elsewhere
OPTIONS = """\
import argparse


class BaseOptions:
    def __init__(self):
        self.parser = argparse.ArgumentParser()
        self.parser.add_argument("--gpu_ids", type=str, default="0", help="{help}")

    def parse(self):
        self.opt = self.parser.parse_args()
        ids = [int(i) for i in self.opt.gpu_ids.split(",")]
        self.opt.gpu_ids = [i for i in ids if i >= 0]
        return self.opt
"""

MODEL = """\
import torch
from torch import nn


class Pix2Pix(nn.Module):
    def initialize(self, opt):
        self.opt = opt
        self.{reads} = opt.gpu_ids
        self.net = nn.Conv2d(3, 3, 3)

    def encode_input(self, label_map):
        return label_map.data.cuda()
"""

LOSS = """\
import torch
from torch import nn


class VGGLoss(nn.Module):
    def __init__(self, {parameter}):
        super().__init__()
        self.vgg = nn.Conv2d(3, 3, 3).cuda()
"""

CPU_HELP = "gpu ids: e.g. 0  0,1,2, 0,2. use -1 for CPU"


def _gpd203(tmp_path: Path, model: str, help_text: str = CPU_HELP) -> list[int]:
    (tmp_path / ".git").mkdir(exist_ok=True)  # the project's root
    for folder in ("options", "models"):
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "options" / "base_options.py").write_text(OPTIONS.format(help=help_text))
    linted = tmp_path / "models" / "model.py"
    linted.write_text(model)
    result = lint_paths([str(linted)], LintConfig(select=("GPD203",)), jobs=1, use_cache=False)
    assert not result.errors
    return [finding.line for finding in result.findings]


def test_a_file_that_reads_the_projects_cpu_option_may_not_hard_code_cuda(
    tmp_path: Path,
) -> None:
    assert _gpd203(tmp_path, MODEL.format(reads="gpu_ids")) == [12]


def test_a_parameter_named_for_the_option_is_a_read_of_it(tmp_path: Path) -> None:
    assert _gpd203(tmp_path, LOSS.format(parameter="gpu_ids")) == [8]
    assert _gpd203(tmp_path, LOSS.format(parameter="layers")) == []


@pytest.mark.parametrize("help_text", ["gpu ids: e.g. 0  0,1,2, 0,2", "which GPUs to use"])
def test_an_option_that_only_picks_gpus_is_no_cpu_path(tmp_path: Path, help_text: str) -> None:
    assert _gpd203(tmp_path, MODEL.format(reads="gpu_ids"), help_text) == []


def test_a_file_that_never_reads_the_option_keeps_its_own_choice(tmp_path: Path) -> None:
    # a file naming none of the project's options is written for GPUs only
    unread = MODEL.replace("opt.gpu_ids", "opt.ids").replace("self.gpu_ids", "self.ids")
    assert _gpd203(tmp_path, unread.format(reads="ids")) == []


def test_the_cache_misses_when_the_options_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUDOC_CACHE_DIR", str(tmp_path / "cache"))
    assert _gpd203(tmp_path, MODEL.format(reads="gpu_ids")) == [12]
    linted = str(tmp_path / "models" / "model.py")
    config = LintConfig(select=("GPD203",))
    first = lint_paths([linted], config, jobs=1)
    options = tmp_path / "options" / "base_options.py"
    options.write_text(OPTIONS.format(help="which GPUs to use") + "\n")  # a new size: a new stamp
    second = lint_paths([linted], config, jobs=1)
    assert [f.line for f in first.findings] == [12]
    assert not second.files[0].cached
    assert second.findings == ()


# DavideZFC's exercises: a wrapper trains the module it keeps on an attribute, never moved
RUNNER = """\
import torch
import torch.nn as nn


class Runner:
    def __init__(self):
        self.net = nn.Linear(8, 3){move}

    def fit(self, loader, device="cpu"):
        loss_fn = nn.CrossEntropyLoss()
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            scores = self.net(xb)
            loss = loss_fn(scores, yb)
            loss.backward()
"""


def test_the_output_of_a_module_kept_on_an_attribute_is_that_modules_finding() -> None:
    # the module is GPD102's finding; its output at the loss is not reported again
    assert lines(RUNNER.format(move=""), "GPD102") == [7]
    assert lines(RUNNER.format(move=""), "GPD101") == []
    # a host tensor of the script's own at the loss still is
    half = RUNNER.format(move=".to('cuda')").replace("yb.to(device)", "yb")
    assert lines(half, "GPD101") == [14]


# wwangxinhao's DDP tutorial (set 59): each rank's device is chosen with a fallback
DDP_TUTORIAL = """\
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(rank, world):
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo", rank=rank,
                            world_size=world)
    dev = {device}
    net = nn.Linear(10, 2).to(dev)
    ddp = DDP(net)
    ddp(torch.randn(4, 10).to(dev)).sum().backward()


if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)
"""


@pytest.mark.parametrize(
    "device",
    [
        'torch.device(f"cuda:{rank}" if torch.cuda.is_available() else "cpu")',
        'f"cuda:{rank}" if torch.cuda.is_available() else "cpu"',
        'torch.device("cpu" if not torch.cuda.is_available() else "cuda:{}".format(rank))',
    ],
)
def test_a_per_rank_device_with_a_cpu_fallback_binds_each_rank(device: str) -> None:
    assert lines(DDP_TUTORIAL.format(device=device), "GPD404") == []


def test_one_device_with_a_cpu_fallback_binds_no_rank() -> None:
    device = 'torch.device("cuda" if torch.cuda.is_available() else "cpu")'
    assert lines(DDP_TUTORIAL.format(device=device), "GPD404") == [9]


# metehancekic's VOneNet filter bank (set 59): a placeholder that initialize() registers
FILTER_BANK = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class FilterBank(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.weight = torch.zeros((4, 3, k, k))

    def initialize(self, values):
        self.weight[:, 0] = values
        self.weight = {wrapped}

    def forward(self, x):
        return F.conv2d(x, self.weight)
"""


def test_a_tensor_placeholder_that_a_method_registers_as_a_parameter_moves() -> None:
    wrapped = "nn.Parameter(self.weight, requires_grad=False)"
    assert lines(FILTER_BANK.format(wrapped=wrapped), "GPD105") == []
    # kept a plain tensor: still not moved with the module
    assert lines(FILTER_BANK.format(wrapped="self.weight * 2"), "GPD105") == [9]


# venkatKrishnan86's tutorials (set 59): data a script beside it prepares with NumPy and saves
MAKE_DATA = """\
import numpy as np
import torch

samples = np.random.randn(1000, 2)
torch.save(torch.tensor(samples, dtype=torch.float32){moved}, "data/points.pt")
"""

TRAIN_ON_POINTS = """\
import torch
import torch.nn as nn

dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
points = torch.load("data/points.pt").to(dev)
net = nn.Linear(2, 2).to(dev)
net(points).sum().backward()
"""


def test_a_file_that_a_device_free_script_beside_it_writes_loads_anywhere(
    tmp_path: Path,
) -> None:
    files = {"make_data.py": MAKE_DATA.format(moved=""), "main.py": TRAIN_ON_POINTS}
    assert project_lines(tmp_path, files, "GPD201") == []
    # saved from the GPU, it needs a map_location on a host without one
    files["make_data.py"] = MAKE_DATA.format(moved=".cuda()")
    assert project_lines(tmp_path, files, "GPD201") == [5]


# venkatKrishnan86's diffusion UNet (set 59): forward moves the time steps itself
TIME_NET = """\
import torch
import torch.nn as nn


class TimeNet(nn.Module):
    def __init__(self, device="cuda"):
        super().__init__()
        self.device = device
        self.body = nn.Linear(5, 4)

    def forward(self, x, t):
        t = {moved}
        return self.body(torch.cat([x, t], dim=1))


device = "cuda" if torch.cuda.is_available() else "cpu"
model = TimeNet(device=device).to(device)
x = torch.randn(8, 4).to(device)
t = torch.randint(1, 50, (8,))
model(x, t).sum().backward()
"""


def test_an_input_that_forward_moves_at_the_end_of_a_chain_needs_no_move() -> None:
    moved = "t.unsqueeze(-1).type(torch.float).to(self.device)"
    assert lines(TIME_NET.format(moved=moved), "GPD101") == []
    # a chain that never moves it: the host time steps meet the device batch
    assert lines(TIME_NET.format(moved="t.unsqueeze(-1).float()"), "GPD101") == [20]


# isc-demos' detection transforms (set 58): a random zoom drawn against a range of numbers
ZOOM = """\
from typing import Tuple

import torch
from torch import nn


class RandomZoomOut(nn.Module):
    def __init__(self, side_range{annotation} = (1.0, 4.0)):
        super().__init__()
        self.side_range = side_range

    def forward(self, image):
        r = self.side_range[0] + torch.rand(1) * (self.side_range[1] - self.side_range[0])
        width = int(image.shape[-1] * r)
        return image[..., :width]
"""


@pytest.mark.parametrize("annotation", ["", ": Tuple[float, float]"])
def test_a_draw_scaled_by_a_range_of_numbers_stays_a_number(annotation: str) -> None:
    assert lines(ZOOM.format(annotation=annotation), "GPD106") == []
    # a range the text cannot show is numbers may be a tensor on the input's device
    unknown = ZOOM.format(annotation=annotation).replace(" = (1.0, 4.0)", "")
    assert lines(unknown.replace(": Tuple[float, float]", ""), "GPD106") == [13]


# KateSawada's conditional MuseGAN (set 59): a penalty helper left from an earlier version
LEFTOVER = """\
import torch
import torch.nn as nn


def penalty(critic, real):
    mix = torch.rand(real.size(0), 1).cuda()
    return critic(mix * real).mean()


def main():
    on_gpu = torch.cuda.is_available()
    critic = nn.Linear(8, 1)
    if on_gpu:
        critic = critic.cuda()
    real = torch.randn(4, 8)
    if on_gpu:
        real = real.cuda()
    critic(real).mean().backward(){call}


if __name__ == "__main__":
    {entry}
"""


def test_cuda_in_a_function_the_script_never_calls_never_runs_on_the_cpu(tmp_path: Path) -> None:
    script = LEFTOVER.format(call="", entry="main()")
    assert lines(script, "GPD203") == []
    called = LEFTOVER.format(call="\n    penalty(critic, real)", entry="main()")
    assert lines(called, "GPD203") == [6]
    # `fire.Fire()` makes every function a command
    fired = LEFTOVER.format(call="", entry="import fire\n    fire.Fire()")
    assert lines(fired, "GPD203") == [6]
    # a script of the project that names it may import it
    files = {"main.py": script, "evaluate.py": "from main import penalty\n"}
    assert project_lines(tmp_path, files, "GPD203") == [6]
