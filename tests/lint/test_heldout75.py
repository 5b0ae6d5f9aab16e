"""Regressions of held-out set 75, reduced and rewritten here: the correct code each rule must
leave alone, next to the bug it must still report."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines, project_lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths, lint_source

# TFC-pretraining (set 75): the Dataset makes its tensors on the GPU, so the DataLoader's
# batches (num_workers=0) are CUDA tensors already
DEVICE_DATASET = """\
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Pairs(Dataset):
    def __init__(self, x, y):
        device = "cuda"
        self.x = torch.tensor(x, dtype=torch.float{device})
        self.y = torch.tensor(y, dtype=torch.long{device})

    def __len__(self):
        return len(self.x)

    def __getitem__(self, idx):
        return self.x[idx], self.y[idx]


model = nn.Linear(8, 2).to("cuda")
loader = DataLoader(Pairs(np.zeros((16, 8)), np.zeros(16)), batch_size=4)
for x, y in loader:
    out = model(x)
"""


def test_a_dataset_that_makes_its_tensors_on_the_device_yields_device_batches() -> None:
    assert lines(DEVICE_DATASET.format(device=", device=device"), "GPD101") == []
    assert lines(DEVICE_DATASET.format(device=""), "GPD101") == [23]


# CSDI (set 75): the base class's forward calls a hook each subclass defines, which moves the
# batch's entries to the model's device
HOOK = """\
import torch
from torch import nn
from torch.utils.data import DataLoader


class Base(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.device = device
        self.net = nn.Linear(4, 1)

    def forward(self, batch):
        x, y = self.process_data(batch)
        return ((self.net(x) - y) ** 2).mean()


class Air(Base):
    def process_data(self, batch):
        return batch["x"]{move}.float(), batch["y"]{move}.float()


device = "cuda:0"
model = Air(device).to(device)
data = [{{"x": torch.randn(4), "y": torch.randn(1)}} for _ in range(8)]
for batch in DataLoader(data, batch_size=4):
    loss = model(batch)
"""


def test_a_subclass_hook_that_moves_the_batch_for_its_bases_forward() -> None:
    assert lines(HOOK.format(move=".to(self.device)"), "GPD101") == []
    assert lines(HOOK.format(move=""), "GPD101") == [26]


# neuralop (set 75): an embedding that stores only numbers, below an abstract nn.Module base
ABSTRACT = """\
from abc import ABC, abstractmethod

import torch
from torch import nn


class Embedding(nn.Module, ABC):
    @property
    @abstractmethod
    def out_channels(self):
        pass


class Sinusoidal(Embedding):
    def __init__(self, n):
        super().__init__()
        self.n = n
{weights}
    @property
    def out_channels(self):
        return 2 * self.n

    def forward(self, x):
        freqs = 2 ** torch.arange(self.n, device=x.device) * torch.pi
        return torch.einsum("bi,k->bik", x, freqs).sin()


embed = Sinusoidal(3)
out = embed(torch.rand(2, 3).to("cuda"))
"""


def test_a_module_with_nothing_to_move_below_an_abstract_base() -> None:
    assert lines(ABSTRACT.format(weights=""), "GPD102") == []
    weighted = ABSTRACT.format(weights="        self.proj = nn.Linear(3, 3)\n")
    assert lines(weighted, "GPD102") == [29]


# GCC (set 75): the criterion holds no weights on the path that leaves it on the host
ONE_ARM = """\
import torch
from torch import nn

finetune = True
model = nn.Linear(8, 3)
if finetune:
    criterion = {host}
else:
    criterion = nn.MSELoss()
    criterion = criterion.cuda(0)
model = model.cuda(0)
x = torch.randn(4, 8).cuda(0)
y = torch.tensor([0, 1, 2, 0]).cuda(0)
loss = criterion(model(x), y)
"""


def test_a_weightless_module_left_on_the_host_on_one_path_is_fine() -> None:
    assert lines(ONE_ARM.format(host="nn.CrossEntropyLoss()"), "GPD102") == []
    assert lines(ONE_ARM.format(host="nn.Linear(3, 3)"), "GPD102") == [7]


ELSE_MOVE = """\
import torch
from torch import nn

finetune = True
model = nn.Linear(8, 3)
if finetune:
    pass
else:
    model = model.cuda(0)
y = model(torch.randn(4, 8).cuda(0))
"""


def test_a_move_in_the_else_arm_is_said_to_happen_when_the_test_is_false() -> None:
    config = LintConfig(select=("GPD102",))
    found = lint_source(ELSE_MOVE, "x.py", config).findings
    assert [(f.line, f.message.split(",")[0]) for f in found] == [
        (9, "`model` is moved to the device only when `finetune` is false")
    ]
    swapped = ELSE_MOVE.replace(
        "    pass\nelse:\n    model = model.cuda(0)", "    model = model.cuda(0)\nelse:\n    pass"
    )
    found = lint_source(swapped, "x.py", config).findings
    assert [f.message.split(",")[0] for f in found] == [
        "`model` is moved to the device only when `finetune`"
    ]


# GCC (set 75): a script with a CPU path imports the losses but never builds them; the one
# script that does is GPU-only
LOSSES = """\
import torch
from torch import nn


class NCELoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.criterion = nn.CrossEntropyLoss()

    def forward(self, x):
        label = torch.zeros([x.shape[0]]).cuda().long()
        return self.criterion(x, label)
"""

CPU_SCRIPT = """\
import argparse

import torch
from torch import nn

from losses import NCELoss

parser = argparse.ArgumentParser()
parser.add_argument("--gpu", type=int, default=None)
args = parser.parse_args()
device = torch.device("cpu") if args.gpu is None else torch.device(args.gpu)
model = nn.Linear(4, 4).to(device)
print(model(torch.randn(2, 4, device=device)))
"""


def test_an_import_the_cpu_script_never_uses_reaches_nothing(tmp_path: Path) -> None:
    (tmp_path / "losses.py").write_text(LOSSES)
    (tmp_path / "generate.py").write_text(CPU_SCRIPT)
    config = LintConfig(select=("GPD203",))
    found = lint_paths([str(tmp_path / "losses.py")], config, jobs=1, use_cache=False).findings
    assert not found
    (tmp_path / "generate.py").write_text(CPU_SCRIPT + "criterion = NCELoss()\n")
    found = lint_paths([str(tmp_path / "losses.py")], config, jobs=1, use_cache=False).findings
    assert [f.line for f in found] == [11]


# TFC-pretraining (set 75): an index shifted by numbers (`B + i - 1`) is an index still
SHIFTED_INDEX = """\
import torch
import torch.nn.functional as F
from torch import nn


class InstanceLoss(nn.Module):
    def instance_loss(self, z1, z2):
        B, T = z1.size(0), z1.size(1)
        z = torch.cat([z1, z2], dim=0).transpose(0, 1)
        logits = -F.log_softmax(torch.matmul(z, z.transpose(1, 2)), dim=-1)
        i = torch.arange(B)
        return (logits[:, i, B + i - 1].mean() + logits[:, B + i, i].mean()) / 2

    def forward(self, z1, z2):
        return self.instance_loss(z1, z2)


loss = InstanceLoss().cuda()(torch.randn(2, 3, 4).cuda(), torch.randn(2, 3, 4).cuda())
"""


def test_an_index_shifted_by_numbers_is_still_an_index() -> None:
    assert lines(SHIFTED_INDEX, "GPD106") == []
    # added to a tensor made here, it is arithmetic on the device, not an index
    mixed = SHIFTED_INDEX.replace("B + i - 1]", "z1[0, :, 0].long() + i]")
    assert lines(mixed, "GPD106") == [11]


# TabSurvey's STG (set 75) and KAIR (set 73): what the class saves is copied to the host first
SAVED_ON_CPU = """\
import torch
from torch import nn


def state_dict(model, cpu=True):
    sd = model.state_dict()
    if cpu:
        sd = {{k: v.cpu() for k, v in sd.items()}}
    return sd


class Trainer:
    def __init__(self):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = nn.Linear(4, 2).to(self.device)

    def save_checkpoint(self, filename):
{save}

    def load_checkpoint(self, filename):
        checkpoint = torch.load(filename)
        self.model.load_state_dict(checkpoint["model"])
"""


def test_a_checkpoint_saved_through_a_host_copy_loads_anywhere() -> None:
    jacinle = '        torch.save({"model": state_dict(self.model, cpu=True)}, filename)'
    assert lines(SAVED_ON_CPU.format(save=jacinle), "GPD201") == []
    as_cpu = '        torch.save({"model": as_cpu(self.model.state_dict())}, filename)'
    assert lines(SAVED_ON_CPU.format(save=as_cpu), "GPD201") == []
    kair = (
        "        sd = self.model.state_dict()\n"
        "        for key, param in sd.items():\n"
        "            sd[key] = param.cpu()\n"
        "        torch.save(sd, filename)"
    )
    assert lines(SAVED_ON_CPU.format(save=kair), "GPD201") == []
    on_device = '        torch.save({"model": state_dict(self.model, cpu=False)}, filename)'
    assert lines(SAVED_ON_CPU.format(save=on_device), "GPD201") == [21]
    no_copy = kair.replace("param.cpu()", "param")
    assert lines(SAVED_ON_CPU.format(save=no_copy), "GPD201") == [24]


# KAIR's face enhancement (set 73): the script imports a model whose `op` package compiles a
# CUDA-only extension at import, so its `is_available()` fallback never runs without CUDA
FUSED_ACT = """\
import os

from torch.utils.cpp_extension import load

module_path = os.path.dirname(__file__)
fused = load(
    "fused",
    sources=[
        os.path.join(module_path, "fused_bias_act.cpp"),
        os.path.join(module_path, "fused_bias_act_kernel.cu"),
    ],
)
"""

ENHANCER = """\
import torch

from op import fused
"""

FACE_SCRIPT = """\
import torch

from enhancer import fused

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Conv2d(3, 3, 1).to(device)
model.load_state_dict(torch.load("GPEN-BFR-512.pth"))
detector = torch.nn.Conv2d(3, 2, 1).cuda()
"""


def test_a_script_that_compiles_a_cuda_extension_at_import_is_gpu_only(tmp_path: Path) -> None:
    (tmp_path / "op").mkdir()
    (tmp_path / "op" / "__init__.py").write_text("from .fused_act import fused\n")
    (tmp_path / "op" / "fused_act.py").write_text(FUSED_ACT)
    (tmp_path / "enhancer.py").write_text(ENHANCER)
    (tmp_path / "main.py").write_text(FACE_SCRIPT)
    for code in ("GPD201", "GPD203"):
        assert project_lines(tmp_path, {}, code) == []
    # built only where CUDA exists, the extension leaves the CPU path open
    guarded = FUSED_ACT.replace("fused = load(", "if torch.cuda.is_available():\n  fused = load(")
    (tmp_path / "op" / "fused_act.py").write_text("import torch\n" + guarded)
    assert project_lines(tmp_path, {}, "GPD201") == [7]
    assert project_lines(tmp_path, {}, "GPD203") == [8]


# consistency_models (set 73): a module whose one parameter is a copy of a tensor the caller
# gives lives where that tensor is
COPIED_WEIGHT = """\
import torch
from torch import nn


class Softmax(nn.Module):
    def __init__(self, weight):
        super().__init__()
        self.weight = nn.Parameter(weight.detach().clone())

    def forward(self, x):
        return torch.softmax(x @ self.weight.t(), dim=1)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
backbone = nn.Linear(8, 4){move}
head = Softmax(backbone.weight)
probs = head(torch.randn(2, 8).to(device))
"""


def test_a_parameter_copied_from_a_placed_tensor_is_placed() -> None:
    assert lines(COPIED_WEIGHT.format(move=".to(device)"), "GPD102") == []
    assert lines(COPIED_WEIGHT.format(move=""), "GPD102") == [16]


# muzero-general (set 74): the weights are copied to the host by a helper before the save
HELPER_COPY = """\
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"


def {helper}(state):
    return {{k: v.cpu() for k, v in state.items()}}


def train(model, path):
    model.to(device)
    torch.save({helper}(model.state_dict()), path)


def load_model(path):
    return torch.load(path)
"""


def test_a_save_of_copies_made_by_a_helper_named_for_the_cpu() -> None:
    assert lines(HELPER_COPY.format(helper="dict_to_cpu"), "GPD201") == []
    assert lines(HELPER_COPY.format(helper="snapshot"), "GPD201") == [16]
