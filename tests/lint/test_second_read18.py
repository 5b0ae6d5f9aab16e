"""The second read of the eighteenth session's change: each program shows a defect the read
found in it (a real finding lost, or a wrong one made), now mended."""

from __future__ import annotations

from pathlib import Path

import pytest
from lint_lines import lines, project_lines
from test_heldout75 import HOOK

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths, lint_source

# a helper defined below the class reads a module-level tensor bound between the two:
# walked early it would not see it
P00 = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x) + report()


device = torch.device("cuda")
stats = torch.randn(4).to(device)


def report():
    return stats.numpy()
"""

# a subclass hook that only casts the batch's dtype moves nothing; one that moves one key of
# the batch and feeds the other unmoved (set 75's CSDI hook, bent)
P01 = HOOK.format(move=".to(torch.float32)")
P02 = HOOK.format(move="").replace('batch["y"].float()', 'batch["y"].to(self.device).float()')


# the class's own method that casts its input's dtype moves nothing
P03 = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 1)

    def prepare(self, x):
        return x.to(torch.float32)

    def forward(self, x):
        h = self.prepare(x)
        return self.net(h)


model = Net().to("cuda")
out = model(torch.randn(2, 4))
"""

# an index shifted by a device tensor is arithmetic on the device
P04 = """\
import torch
from torch import nn


class Picker(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, offset):
        idx = torch.arange(x.shape[0])
        rows = x[idx + offset]
        return self.fc(rows)


model = Picker().cuda()
x = torch.randn(8, 4).cuda()
offset = torch.zeros(8, dtype=torch.long).cuda()
out = model(x, offset)
"""

# a list of appended device tensors whose items are replaced by host copies
P05 = """\
import torch
from torch import nn

device = torch.device("cuda")
model = nn.Linear(4, 2).to(device)
outs = []
for _ in range(3):
    outs.append(model(torch.randn(3, 4).to(device)))
for i in range(len(outs)):
    outs[i] = outs[i].detach().cpu()
first = outs[0].numpy()
"""

# a list of appended device tensors cleared and refilled with host copies
P06 = """\
import numpy as np
import torch
from torch import nn

device = torch.device("cuda")
model = nn.Linear(4, 2).to(device)
outs = []
x = torch.randn(3, 4).to(device)
outs.append(model(x))
outs.clear()
outs.append(model(x).cpu())
first = outs[0].detach().numpy()
"""

# a Dataset that stores host copies of a tensor it made on the GPU
P07 = """\
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Pairs(Dataset):
    def __init__(self, x):
        t = torch.tensor(x, dtype=torch.float, device="cuda")
        self.x = (t / t.norm()).cpu()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, idx):
        return self.x[idx]


model = nn.Linear(8, 2).to("cuda")
loader = DataLoader(Pairs(np.zeros((16, 8))), batch_size=4)
for x in loader:
    out = model(x)
"""

# a parameter copied from a placed tensor through .cpu() is on the host
P08 = """\
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, weight):
        super().__init__()
        self.w = nn.Parameter(weight.detach().cpu().clone())

    def forward(self, x):
        return x @ self.w


backbone = nn.Linear(4, 4).cuda()
head = Head(backbone.weight)
out = head(torch.randn(2, 4).cuda())
"""

# a loss given weight= on the path that leaves it on the host
P09 = """\
import torch
from torch import nn

finetune = True
model = nn.Linear(8, 3)
criterion = nn.CrossEntropyLoss(weight=torch.load("class_weights.pt"))
if finetune:
    pass
else:
    criterion = criterion.cuda(0)
model = model.cuda(0)
x = torch.randn(4, 8).cuda(0)
y = torch.tensor([0, 1, 2, 0]).cuda(0)
loss = criterion(model(x), y)
"""

# a helper named cpu_to_gpu makes no host copies
P10 = """\
import torch
from torch import nn


def cpu_to_gpu(state):
    return {k: v.to("cuda") for k, v in state.items()}


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 4).to(device)
model.load_state_dict(torch.load("pretrained.pt"))
torch.save(cpu_to_gpu(model.state_dict()), "model.pt")
"""


@pytest.mark.parametrize(
    ("source", "code", "expected"),
    [
        (P00, "GPD202", [19]),
        (P01, "GPD101", [26]),
        (P02, "GPD101", [26]),
        (P03, "GPD101", [19]),
        (P04, "GPD106", [11]),
        (P05, "GPD202", []),
        (P06, "GPD202", []),
        (P07, "GPD101", [22]),
        (P08, "GPD102", [15]),
        (P09, "GPD102", [10]),
        (P10, "GPD201", [11]),
    ],
)
def test_the_second_reads_programs(source: str, code: str, expected: list[int]) -> None:
    assert lines(source, code) == expected


REEXPORT = {
    "main.py": """\
import torch

from models.zoo import GMPTV

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = GMPTV().to(device)
out = model(torch.randn(2, 4).to(device))
print(out)
""",
    "models/__init__.py": """\
from .gmptv import GMPTV
""",
    "models/gmptv.py": """\
import torch
from torch import nn


class GMPTV(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        noise = torch.randn(x.shape).cuda()
        return self.fc(x + noise)
""",
    "models/zoo.py": """\
from models.gmptv import GMPTV

__all__ = ["GMPTV"]
""",
}

ORDER = {
    "helpers.py": """\
import utils


def log(x):
    return utils.fmt(x)
""",
    "model.py": """\
from torch import nn

from op import FusedLeakyReLU


class Gen(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act = FusedLeakyReLU()

    def forward(self, x):
        return self.act(self.fc(x))
""",
    "op/__init__.py": """\
from .fused_act import FusedLeakyReLU
""",
    "op/fused_act.py": """\
import os

import torch
from torch import nn
from torch.utils.cpp_extension import load

module_path = os.path.dirname(__file__)
fused = load(
    "fused",
    sources=[
        os.path.join(module_path, "fused_bias_act.cpp"),
        os.path.join(module_path, "fused_bias_act_kernel.cu"),
    ],
)


class FusedLeakyReLU(nn.Module):
    def forward(self, x):
        return fused.fused_bias_act(x)
""",
    "train.py": """\
import torch


from model import Gen

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
gen = Gen().to(device)
ckpt = torch.load("gen.pt")
gen.load_state_dict(ckpt)
out = gen(torch.randn(2, 4).to(device))
helpers.log(out)
""",
    "utils.py": """\
import op


def fmt(x):
    return str(x)
""",
}

CONDITIONAL_SOURCE = {
    **{name: ORDER[name] for name in ("model.py", "op/__init__.py")},
    "op/fused_act.py": """\
import os

import torch
from torch import nn
from torch.utils.cpp_extension import load

here = os.path.dirname(__file__)
fused = load(
    "fused",
    sources=[os.path.join(here, "fused.cpp")]
    + ([os.path.join(here, "fused_kernel.cu")] if torch.cuda.is_available() else []),
    extra_cflags=["-DWITH_CUDA"] if torch.cuda.is_available() else [],
)


class FusedLeakyReLU(nn.Module):
    def forward(self, x):
        return fused.fused_bias_act(x)
""",
    "train.py": ORDER["train.py"].replace("helpers.log(out)\n", ""),
}


def _write(tmp_path: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)


def test_a_model_file_reached_through_a_module_that_re_exports_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `from models.gmptv import GMPTV` in a module between: the script still reaches the class
    _write(tmp_path, REEXPORT)
    monkeypatch.chdir(tmp_path)
    config = LintConfig(select=("GPD203",))
    result = lint_paths([str(tmp_path / "models" / "gmptv.py")], config, jobs=1, use_cache=False)
    assert [f.line for f in result.findings] == [11]


def test_a_cuda_extension_found_whatever_the_order_of_the_imports(tmp_path: Path) -> None:
    # `helpers` reaches the `op` package first, at the depth limit, through `utils`
    script = ORDER["train.py"].replace("import torch\n", "import helpers\nimport torch\n", 1)
    _write(tmp_path, {**ORDER, "main.py": script})
    assert project_lines(tmp_path, {}, "GPD201") == []


def test_cuda_sources_added_only_where_cuda_exists(tmp_path: Path) -> None:
    _write(tmp_path, {**CONDITIONAL_SOURCE, "main.py": CONDITIONAL_SOURCE["train.py"]})
    assert project_lines(tmp_path, {}, "GPD201") == [8]


# VQGAN+CLIP's resample (aiaiart, found by the corpus comparison): `ramp()`'s host tensor goes
# through `lanczos()` and the result is moved before it meets the input
RESAMPLE = """\
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def sinc(x):
    return torch.where(x != 0, torch.sin(math.pi * x) / (math.pi * x), x.new_ones([]))


def lanczos(x, a):
    cond = torch.logical_and(-a < x, x < a)
    out = torch.where(cond, sinc(x) * sinc(x / a), x.new_zeros([]))
    return out / out.sum()


def ramp(ratio, width):
    n = math.ceil(width / ratio + 1)
    out = torch.empty([n])
    cur = 0
    for i in range(out.shape[0]):
        out[i] = cur
        cur += ratio
    return torch.cat([-out[1:].flip([0]), out])[1:-1]


def resample(input, size):
    n, c, h, w = input.shape
    dh, dw = size
    input = input.view([n * c, 1, h, w])
    if dh < h:
        kernel_h = lanczos(ramp(dh / h, 2), 2).to(input.device, input.dtype)
        input = F.conv2d(input, kernel_h[None, None, :, None])
    return input


class MakeCutouts(nn.Module):
    def __init__(self, cut_size):
        super().__init__()
        self.cut_size = cut_size

    def forward(self, input):
        return resample(input, (self.cut_size, self.cut_size))


cut = MakeCutouts(8).cuda()
cut(torch.randn(1, 3, 32, 32).cuda())
"""


def test_a_helpers_tensor_moved_after_another_helper() -> None:
    assert lines(RESAMPLE, "GPD106") == []
    unmoved = RESAMPLE.replace(".to(input.device, input.dtype)", "")
    assert lines(unmoved, "GPD106") == [20]


# deeplearningzerotoall's batch-norm lab (found by the corpus comparison): a list of the epochs'
# device losses, taken apart into lists by a plotting helper; `.cpu()` of a list would raise
PLOTTED_LISTS = """\
import matplotlib.pyplot as plt
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Linear(4, 2).to(device)
train_losses = []
for epoch in range(3):
    bn_loss = model(torch.randn(8, 4).to(device)).sum()
    nn_loss = model(torch.randn(8, 4).to(device)).mean()
    train_losses.append([bn_loss, nn_loss])


def plot_compare(loss_list):
    bn = [i[0] for i in loss_list]
    plt.plot(bn)


plot_compare(train_losses)
"""


def test_a_list_of_device_tensors_gets_no_cpu_fix() -> None:
    found = lint_source(PLOTTED_LISTS, "x.py", LintConfig(select=("GPD202",))).findings
    assert [(f.line, f.fix is None) for f in found] == [(15, True)]
    assert "[t.detach().cpu() for t in bn]" in found[0].message


def test_an_animation_hands_its_frames_arguments_on() -> None:
    source = (
        "import matplotlib.animation as animation\nimport matplotlib.pyplot as plt\nimport torch\n"
        "sample = torch.randn(5, 2).cuda()\nfig = plt.figure()\n"
        "def update(i, data):\n    return data[i].cpu().numpy()\n"
        "ani = animation.FuncAnimation(fig, update, frames=range(5), fargs=(sample,))\n"
    )
    assert lines(source, "GPD202") == []
