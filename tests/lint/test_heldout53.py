"""Regressions of held-out set 53 (public repositories) and of the recall reports gathered
beside it, reduced and rewritten here: the reported bugs each rule now finds, next to the
correct code it must leave alone."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines, project_lines

# PyTorch's "What is torch.nn really?" tutorial (kaust-vislab's notebooks): batches come through
# a wrapper whose `__iter__` yields what a stored function makes of each batch
WRAPPED = """\
import torch
from torch import nn
from torch.utils import data


class Wrapped:
    def __init__(self, loader, func):
        self.loader = loader
        self.func = func

    def __iter__(self):
        for batch in self.loader:
            yield {produce}


def fit(model, loss_fn, loader, opt):
    for xb, yb in loader:
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()


dev = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
ds = data.TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
loader = Wrapped(data.DataLoader(ds, batch_size=8), lambda x, y: (x.to(dev), y.to(dev)))
net = nn.Linear(4, 2).to(dev)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
fit(net, nn.functional.cross_entropy, loader, opt)
"""


def test_a_wrapper_yields_what_its_iter_makes_of_each_batch() -> None:
    assert lines(WRAPPED.format(produce="self.func(*batch)"), "GPD101") == []
    # a wrapper that hands the loader's batches on as they are yields host batches
    assert lines(WRAPPED.format(produce="batch"), "GPD101") == [18]


# pytorch_GAN_zoo's metric helper: a GPU-only function whose count of GPUs sizes the workers
COUNTED = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader


def extract(model, dataset):
    device = torch.device("cuda:0")
    n_gpus = torch.cuda.device_count()
    par = nn.DataParallel(model).to(device)
    loader = DataLoader(dataset, batch_size=16, num_workers=n_gpus)
    {test}
    return [par(x).cpu() for x, _ in loader]
"""


def test_a_count_of_gpus_read_as_a_size_is_no_cpu_path() -> None:
    assert lines(COUNTED.format(test="pass"), "GPD203") == []
    assert lines(COUNTED.format(test="assert n_gpus > 0 or print('cpu')"), "GPD203") == [7]


# SincNet's legacy `flip`: the tuple of device names follows the input's device
FOLLOWED = """\
import torch
import torch.nn as nn


def flip(x):
    idx = getattr(torch.arange(x.size(0) - 1, -1, -1), {names}[x.is_cuda])()
    return x[idx]


class OldFilter(nn.Module):
    def forward(self, x):
        t = torch.linspace(1, 8, steps=8).cuda()
        return nn.functional.conv1d(x, flip(t).view(1, 1, -1))
"""


def test_device_names_indexed_by_the_inputs_is_cuda_are_no_cpu_path() -> None:
    assert lines(FOLLOWED.format(names='("cpu", "cuda")'), "GPD203") == []
    assert lines(FOLLOWED.format(names='["cpu", "cuda"]'), "GPD203") == []


# yet-another-pytorch-tutorial-v2's MLP: a staging list whose layers go into an nn.Sequential
STAGED = """\
import torch
import torch.nn as nn


class MLP(nn.Module):
    def __init__(self, dims=(784, 256, 10)):
        super().__init__()
        self.layer_list = []
        for a, b in zip(dims, dims[1:]):
            self.layer_list.append(nn.Linear(a, b))
        self.net = nn.Sequential()
        {register}

    def forward(self, x):
        for layer in self.layer_list:
            x = layer(x)
        return x


model = MLP().to(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
"""


def test_layers_registered_in_a_held_container_are_moved() -> None:
    loop = (
        "for i, layer in enumerate(self.layer_list):\n"
        '            self.net.add_module("l%d" % i, layer)'
    )
    assert lines(STAGED.format(register=loop), "GPD104") == []
    assert lines(STAGED.format(register="pass"), "GPD104") == [8]


# pytorch_GAN_zoo's nn_score: the head replaced after the optimizer was built, then the model
# wrapped in DataParallel and moved (the wrap keeps the same parameters)
HEAD = """\
import torch
import torch.nn as nn
import torchvision.models as models


def train(loader, n_out):
    device = torch.device("cuda:0")
    net = models.resnet18(pretrained=True)
    opt = torch.optim.Adam(net.parameters(), lr=1e-4)
    {head}
    net = nn.DataParallel(net).to(device)
    for x, y in loader:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(net(x.to(device)), y.to(device))
        loss.backward()
        opt.step()
"""


def test_a_head_replaced_after_the_optimizer_is_never_trained() -> None:
    assert lines(HEAD.format(head="net.fc = nn.Linear(net.fc.in_features, n_out)"), "GPD301") == [
        10
    ]
    # a wrap in DataParallel, then moved, is the same model
    assert lines(HEAD.format(head="pass"), "GPD301") == []
    # a part moved in place, or one without weights, leaves nothing untrained
    assert lines(HEAD.format(head="net.fc = net.fc.to(device)"), "GPD301") == []
    assert lines(HEAD.format(head="net.fc = nn.Identity()"), "GPD301") == []


def test_a_head_replaced_before_the_optimizer_is_fine() -> None:
    early = HEAD.replace(
        "    opt = torch.optim.Adam(net.parameters(), lr=1e-4)\n    {head}\n",
        "    net.fc = nn.Linear(net.fc.in_features, n_out)\n"
        "    opt = torch.optim.Adam(net.parameters(), lr=1e-4)\n",
    )
    assert lines(early, "GPD301") == []


# yet-another-diffusion-models: a CPU notebook's steps converted with `.type(torch.long)`, then
# a gather brought back with `.to(steps.device)`
DTYPE = """\
import numpy as np
import matplotlib.pyplot as plt
import torch


def gather(values, steps):
    out = torch.gather(values, -1, steps.cpu())
    return out.reshape(steps.shape[0], 1).to(steps.device)


alphas = torch.linspace(0.9, 0.1, 100)
steps = torch.linspace(0, 99, 4).type({dtype})
x_t = gather(alphas, steps) * torch.randn(4, 50)
plt.plot(np.arange(50), x_t[0])


def embed(steps):
    device = steps.device
    return torch.arange(8, device=device)
"""


def test_a_dtype_conversion_keeps_a_tensor_where_it_is() -> None:
    assert lines(DTYPE.format(dtype="torch.long"), "GPD202") == []
    assert lines(DTYPE.format(dtype="torch.cuda.LongTensor"), "GPD202") == [14]


# pytorch/pytorch#102435: a validation loss reduced across ranks in a copy nothing keeps
REDUCED = """\
import torch
import torch.distributed as dist


def validate(model, loader, device):
    total = torch.zeros(1)
    for x, y in loader:
        total += (model(x.to(device)) - y.to(device)).pow(2).mean().cpu()
    dist.all_reduce({tensor}, op=dist.ReduceOp.AVG)
    return total
"""


def test_a_collective_on_a_moved_copy_reduces_nothing_kept() -> None:
    assert lines(REDUCED.format(tensor="total.cuda()"), "GPD103") == [9]
    assert lines(REDUCED.format(tensor="tensor=total.to(device)"), "GPD103") == [9]
    assert lines(REDUCED.format(tensor="total"), "GPD103") == []


# DH_live (recall set 53): the device comes from the project's utils, which falls back to the CPU
RENDER = """\
import torch

from model_utils import {name}


class Render:
    def load(self, net, path):
        self.net = net.to({name})
        self.net.load_state_dict(torch.load(path))
"""


def test_a_device_imported_from_a_project_file_that_picks_the_cpu(tmp_path: Path) -> None:
    utils = 'import torch\n\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n'
    files = {"main.py": RENDER.format(name="device"), "model_utils.py": utils}
    assert project_lines(tmp_path, files, "GPD201") == [9]
    # a GPU-only utils file, or a name that is no device, is no CPU path
    gpu_only = {**files, "model_utils.py": 'import torch\n\ndevice = torch.device("cuda:0")\n'}
    assert project_lines(tmp_path, gpu_only, "GPD201") == []
    other = {"main.py": RENDER.format(name="scale"), "model_utils.py": utils + "scale = 2\n"}
    assert project_lines(tmp_path, other, "GPD201") == []


# attention-transfer (re-scored set 24): cifar.py moves through `utils.cast`, which uses CUDA
# only where it exists (its `--cuda` option, never read, is no reason of its own)
OPTION = """\
import argparse

import torch

import utils

parser = argparse.ArgumentParser()
parser.add_argument("--cuda", action="store_true")
parser.add_argument("--resume", default="")


def main():
    opt = parser.parse_args()
    print("options", vars(opt))
    params = {params}
    state = torch.load(opt.resume)
    {read}
"""
CAST = (
    "import torch\n\n\ndef cast(params):\n"
    "    return {k: v.cuda() if torch.cuda.is_available() else v for k, v in params.items()}\n"
)


def test_a_project_helper_that_moves_only_where_cuda_is_is_a_cpu_path(tmp_path: Path) -> None:
    cast = OPTION.format(params="utils.cast({'w': torch.ones(2)})", read="pass")
    cast = cast.replace('parser.add_argument("--cuda", action="store_true")\n', "")
    files = {"main.py": cast, "utils.py": CAST}
    assert project_lines(tmp_path, files, "GPD201") == [15]
    always = CAST.replace(" if torch.cuda.is_available() else v", "")
    assert project_lines(tmp_path, {**files, "utils.py": always}, "GPD201") == []


# DecisionTransformerInterpretability (recall set 54): in the arm where `isinstance(x,
# torch.Tensor)` holds, `x` is a tensor, whatever its name suggests
NARROWED = """\
import numpy as np
import torch


def to_device(rtg, device):
    if isinstance(rtg, torch.Tensor):
        rtg.to(dtype=torch.float32, device=device)
    else:
        rtg = torch.from_numpy(rtg).to(device)
    return rtg
"""


def test_a_type_test_says_the_name_holds_a_tensor() -> None:
    assert lines(NARROWED, "GPD103") == [7]
    assert lines(NARROWED.replace("isinstance(rtg, torch.Tensor)", "rtg is None"), "GPD103") == []


# hpanwar08's torchtext notebook (recall set 40): a wrapper handing on the fields of another
# library's batches leaves them typed as before, by the loop's names (host batches)
FIELDS = """\
import torch
from torchtext import data

device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


class BatchGenerator:
    def __init__(self, dl, x_field, y_field):
        self.dl, self.x_field, self.y_field = dl, x_field, y_field

    def __iter__(self):
        for batch in self.dl:
            yield getattr(batch, self.x_field), getattr(batch, self.y_field)


def fit(model, train_dl):
    for X, y in train_dl:
        pred = model(X)


train_dl = data.BucketIterator(trainds, batch_size=64, device=0)
model = torch.nn.Linear(4, 2).to(device)
fit(model, BatchGenerator(train_dl, "text", "label"))
"""


def test_a_wrapper_handing_on_an_unknown_loaders_fields_keeps_the_names_typing() -> None:
    assert lines(FIELDS, "GPD101") == [18]
