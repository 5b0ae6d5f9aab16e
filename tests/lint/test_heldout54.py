"""Regressions of held-out set 54 (public repositories), reduced and rewritten here: the correct
code each rule must leave alone, next to the bug it still finds."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines, project_lines

# PyTorch_Guide's CIFAR-10 notebook: the labels moved, then copied with torch.tensor for the loss
COPIED = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(64, 10), torch.randint(0, 3, (64,))), batch_size=8)
model = nn.Linear(10, 3).to(device)
for x, y in loader:
    x = x.to(device)
    {move}
    loss = nn.functional.cross_entropy(model(x), torch.tensor(y, dtype=torch.long))
"""


def test_a_tensor_copied_with_torch_tensor_stays_where_it_was() -> None:
    assert lines(COPIED.format(move="y = y.to(device)"), "GPD101") == []
    assert lines(COPIED.format(move="pass"), "GPD101") == [11]


# easy-rl's NoisyDQN: forward copies a registered buffer with torch.tensor
NOISY = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class NoisyLinear(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.w_mu = nn.Parameter(torch.zeros(n_out, n_in))
        self.w_sigma = nn.Parameter(torch.full((n_out, n_in), 0.1))
        self.register_buffer("w_eps", torch.randn(n_out, n_in))

    def forward(self, x):
        w = self.w_mu + self.w_sigma.mul(torch.tensor({data}))
        return F.linear(x, w)
"""


def test_a_copy_of_a_buffer_is_where_the_module_is() -> None:
    assert lines(NOISY.format(data="self.w_eps"), "GPD106") == []
    assert lines(NOISY.format(data="[0.5, 0.5]"), "GPD106") == [14]


# llama2.c's rotary table: the positions are made on the frequencies' device, both on the host
ROTARY = """\
import torch


def rotary_table(dim, end, theta=10000.0):
    inv = 1.0 / (theta ** (torch.arange(0, dim, 2)[: dim // 2].float() / dim))
    pos = torch.arange(end, device={device})
    ang = torch.outer(pos, inv).float()
    return torch.polar(torch.ones_like(ang), ang)
"""


def test_a_tensor_made_on_a_host_factorys_device_is_on_the_host() -> None:
    assert lines(ROTARY.format(device="inv.device"), "GPD106") == []


# Hands-on-RL's model-based chapters: every weight is made on the device in __init__
STACKED = """\
import numpy as np
import torch
import torch.nn as nn

device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


class Stacked(nn.Module):
    def __init__(self, n_in, n_out, k):
        super().__init__()
        self.w = nn.Parameter(torch.randn(k, n_in, n_out){place})
        self.b = nn.Parameter(torch.zeros(k, n_out){place})

    def forward(self, x):
        return torch.bmm(x, self.w) + self.b[:, None, :]


class Dynamics:
    def __init__(self, n_in, n_out, k=5):
        self.k = k
        self.net = Stacked(n_in, n_out, k)

    def fit(self, xs):
        batch = torch.from_numpy(xs).float().to(device)
        return self.net(batch[None].repeat(self.k, 1, 1))
"""


def test_a_module_whose_weights_are_made_on_the_device_is_placed() -> None:
    assert lines(STACKED.format(place=".to(device)"), "GPD102") == []
    assert lines(STACKED.format(place=""), "GPD102") == [21]


# lightweight-gan: a weightless wrapper of a part built after `self.cuda(rank)`
WRAPPER = """\
import torch
import torch.nn as nn


class Flip(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, images):
        return self.inner(images.flip(3))


class Pair(nn.Module):
    def __init__(self, rank=0):
        super().__init__()
        self.D = nn.Sequential(nn.Flatten(), nn.Linear(12, 1))
        self.cuda(rank)
        self.D_aug = Flip({part})
"""


def test_a_wrapper_of_a_moved_part_needs_no_move() -> None:
    assert lines(WRAPPER.format(part="self.D"), "GPD102") == []
    assert lines(WRAPPER.format(part="nn.Linear(12, 1)"), "GPD102") == [19]


# pytorch/examples' fast_neural_style: the model is brought to the CPU before every save
STYLE = """\
import argparse
import torch
import torch.nn as nn


def train(args, device):
    net = nn.Conv2d(3, 3, 3).to(device)
    {back}
    torch.save(net.state_dict(), args.save_model)


def stylize(args, device):
    net = nn.Conv2d(3, 3, 3)
    net.load_state_dict(torch.load(args.model))
    return net.to(device)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--model")
    p.add_argument("--save-model")
    p.add_argument("--accel", action="store_true")
    args = p.parse_args()
    device = torch.device("cuda") if args.accel else torch.device("cpu")
    train(args, device)
"""


def test_state_saved_after_moving_the_module_to_the_cpu_loads_anywhere() -> None:
    assert lines(STYLE.format(back="net.eval().cpu()"), "GPD201") == []
    assert lines(STYLE.format(back="net.eval()"), "GPD201") == [14]
    # moved back to the device before the save: its state is on the GPU again
    back = "net.cpu()\n    net.to(device)"
    assert lines(STYLE.format(back=back), "GPD201") == [15]


# PyTorch_Guide's text classification notebook: `train` names the data, then the function
REBOUND = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def collate(batch):
    texts = torch.stack([torch.tensor(t) for t, _ in batch])
    labels = torch.tensor([label for _, label in batch])
    return texts.to(device), labels{moved}


train = [([1, 2, 3], 0), ([4, 5, 6], 1)] * 8
loader = DataLoader(list(train), batch_size=4, collate_fn=collate)
model = nn.Sequential(nn.Embedding(10, 4), nn.Flatten(), nn.Linear(12, 2)).to(device)
criterion = nn.CrossEntropyLoss()


def train(dataloader):
    for text, label in dataloader:
        loss = criterion(model(text), label)


train(loader)
"""


def test_a_function_defined_over_a_name_is_what_later_calls_call() -> None:
    assert lines(REBOUND.format(moved=".to(device)"), "GPD101") == []


# MiDaS: the model loader compares the device it is given with torch.device("cuda")
LOADER = """\
import torch
import torch.nn as nn


def build(device, optimize=True):
    net = nn.Conv2d(3, 1, 3).eval()
    if optimize and {test}:
        net = net.half()
    return net.to(device)
"""
RUN = """\
import torch
from loader import build

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = build(device)
"""


def test_a_device_made_to_compare_with_touches_no_gpu(tmp_path: Path) -> None:
    compared = {"main.py": RUN, "loader.py": LOADER.format(test='device == torch.device("cuda")')}
    assert project_lines(tmp_path, compared, "GPD203") == []
    moved = {"main.py": RUN, "loader.py": LOADER.format(test="torch.ones(1).cuda().sum() > 0")}
    assert project_lines(tmp_path, moved, "GPD203") == [7]


# ast's loss helper: an accumulator typed like the similarity matrix, in a one-process script
TYPED = """\
import torch
import torch.nn as nn
{setup}

def pair_hinge(sim, margin):
    total = torch.zeros(1).type(sim.data.type())
    for i in range(sim.size(0)):
        total = total + (sim[i, (i + 1) % sim.size(0)] + margin).clamp(min=0)
    return total


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    enc = nn.DataParallel(nn.Linear(8, 4)).to(device)
    a = enc(torch.randn(5, 8).to(device))
    pair_hinge(a @ a.t(), 0.5).backward()
"""


def test_a_typed_factory_in_a_one_gpu_scripts_helper_is_where_the_gpu_is() -> None:
    assert lines(TYPED.format(setup=""), "GPD106") == []
    # in a process group, the current device is cuda:0 on every rank that never set its own
    ranks = "import torch.distributed as dist\ndist.init_process_group('nccl')\n"
    assert lines(TYPED.format(setup=ranks), "GPD106") == [8]
