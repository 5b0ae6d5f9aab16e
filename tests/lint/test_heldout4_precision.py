"""Precision regressions from the fourth held-out set of public repositories (old tutorials,
OCR training with CTC, YOLO heads with lazy grids, GAN augmentations, a perceptual loss that
places itself), reduced and rewritten here: correct code each rule must leave alone, next to
the bug it must still report."""

from __future__ import annotations

from pathlib import Path

import pytest
from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths


def project_lines(tmp_path: Path, files: dict[str, str], code: str) -> list[tuple[str, int]]:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    config = LintConfig(select=(code,))
    result = lint_paths([str(tmp_path / "train.py")], config, jobs=1, use_cache=False)
    return [(Path(f.path).name, f.line) for f in result.findings]


# a PyTorch 0.3 notebook: `loss.data[0]` was a number, also when a helper plots the history
LOSS_PLOT = """\
import matplotlib.pyplot as plt
import torch
model = torch.nn.Linear(4, 1)
if torch.cuda.is_available():
    model = model.cuda()
def plot(losses):
    plt.plot(losses)
losses = []
for step in range(10):
    x = torch.randn(8, 4)
    if torch.cuda.is_available():
        x = x.cuda()
    loss = model(x).pow(2).mean()
    losses.append({item})
plot(losses)
"""


def test_a_legacy_scalar_read_is_a_number_through_a_plotting_helper() -> None:
    assert lines(LOSS_PLOT.format(item="loss.data[0]"), "GPD202") == []


def test_device_losses_handed_to_a_plotting_helper_stay_a_finding() -> None:
    assert lines(LOSS_PLOT.format(item="loss.data"), "GPD202") == [7]


SAVE_EACH_EPOCH = """\
import torch
use_cuda = torch.cuda.is_available()
model = torch.nn.Linear(4, 2)
if use_cuda:
    model.cuda()
{resume}best = 0
for epoch in range(3):
    torch.save(model.state_dict(), "{{}}.pkl".format(epoch))
    best = epoch
model.load_state_dict(torch.load({path}))
"""


@pytest.mark.parametrize("path", ['"{}.pkl".format(best)', 'f"{best}.pkl"'])
def test_reloading_a_checkpoint_this_run_saved_is_not_gpd201(path: str) -> None:
    assert lines(SAVE_EACH_EPOCH.format(resume="", path=path), "GPD201") == []


def test_a_resume_above_the_saves_with_the_same_template_stays_gpd201() -> None:
    resume = 'model.load_state_dict(torch.load("{}.pkl".format(3)))\n'
    source = SAVE_EACH_EPOCH.format(resume=resume, path='"{}.pkl".format(best)')
    assert lines(source, "GPD201") == [6]


def test_a_template_that_names_nothing_is_not_taken_for_the_same_file() -> None:
    source = SAVE_EACH_EPOCH.format(resume="", path='f"{best}"').replace(
        '"{}.pkl".format(epoch)', 'f"{epoch}"'
    )
    assert lines(source, "GPD201") == [10]


CTC = """\
import torch
import torch.nn.functional as F
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
criterion = torch.nn.CTCLoss(zero_infinity=True).to(device)
model = torch.nn.Linear(16, 10).to(device)
def validation(images, text, length):
    images = images.to(device)
    preds = model(images).log_softmax(2)
    preds_size = torch.IntTensor([preds.size(1)] * images.size(0))
    return {loss}
"""


@pytest.mark.parametrize(
    "loss",
    [
        "criterion(preds.permute(1, 0, 2), text, preds_size, length)",
        "F.ctc_loss(preds.permute(1, 0, 2), text, preds_size, length)",
    ],
)
def test_ctc_lengths_and_targets_on_the_host_are_not_gpd101(loss: str) -> None:
    assert lines(CTC.format(loss=loss), "GPD101") == []


def test_host_lengths_in_another_loss_stay_gpd101() -> None:
    """Only CTC reads its lengths on the host: the exemption is CTC's, not the name's."""
    source = CTC.format(loss="F.nll_loss(preds.view(-1, 10), preds_size.long())")
    assert lines(source, "GPD101") == [10]


LAZY_GRID = """\
import torch
from torch import nn
class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.grid = torch.zeros(1)
    def forward(self, x):
        if self.grid.shape[2:4] != x.shape[2:4]:
            self.grid = {rebuild}
        return x + self.grid
    @staticmethod
    def make_grid(nx, ny):
        yv, xv = torch.meshgrid([torch.arange(ny), torch.arange(nx)], indexing="ij")
        return torch.stack((xv, yv), 2).float()
head = Head().to("cuda")
"""


def test_a_lazy_cache_rebuilt_on_the_inputs_device_is_not_gpd105() -> None:
    source = LAZY_GRID.format(rebuild="self.make_grid(4, 4).to(x.device)")
    assert lines(source, "GPD105") == []


def test_a_cache_rebuilt_on_the_host_stays_gpd105() -> None:
    assert lines(LAZY_GRID.format(rebuild="self.make_grid(4, 4)"), "GPD105") == [6]


GPU_ONLY = """\
import sys
import torch
{check}
net = torch.nn.Linear(4, 2)
net.load_state_dict(torch.load("./model/net.pth"))
net.cuda()
"""


@pytest.mark.parametrize(
    "check",
    [
        'assert torch.cuda.is_available(), "CUDA not found"',
        'if not torch.cuda.is_available():\n    sys.exit("this script needs a GPU")',
        'if __name__ == "__main__":\n    assert torch.cuda.is_available()',
    ],
)
def test_a_script_that_stops_without_cuda_has_no_cpu_path(check: str) -> None:
    assert lines(GPU_ONLY.format(check=check), "GPD201") == []


@pytest.mark.parametrize(
    "check",
    [
        "use_cuda = torch.cuda.is_available()\nkwargs = {'pin_memory': True} if use_cuda else {}",
        "if len(sys.argv) > 1:\n    assert torch.cuda.is_available()",
        "if not torch.cuda.is_available():\n    print('running on the CPU')",
    ],
)
def test_an_availability_test_that_does_not_stop_is_a_cpu_path(check: str) -> None:
    assert lines(GPU_ONLY.format(check=check), "GPD201") != []


# stylegan2's augmentations: helpers take `device="cpu"` and some callers leave it out
CPU_DEFAULT = """\
import torch
def category_sample(size, categories, device="cpu"):
    category = torch.tensor(categories, device=device)
    sample = torch.randint(high=len(categories), size=(size,), device=device)
    return category[sample]
def flip(size):
    eye = torch.eye(4).unsqueeze(0).repeat(size, 1, 1)
    return eye * category_sample(size, (0, 1){device}).view(-1, 1, 1)
def mat_apply(p, transform, prev, eye):
    return (p * transform + (1 - p) * eye) @ prev
def sample_color(p, size):
    C = torch.eye(4).unsqueeze(0).repeat(size, 1, 1)
    eye = C
    Cc = flip(size)
    C = mat_apply(p, Cc, C, eye)
    C = mat_apply(p, Cc, C, eye)
    return C
"""


def test_a_cpu_default_left_out_keeps_the_helper_on_the_host() -> None:
    assert lines(CPU_DEFAULT.format(device=""), "GPD112") == []


def test_a_device_passed_for_the_same_parameter_still_places() -> None:
    source = CPU_DEFAULT.format(device=', device="cuda"')
    assert lines(source, "GPD112") == [13]


# lpips: a perceptual loss of the project's own package moves its network while it sets up
PERCEPTUAL = """\
import torch
from torch import nn
class Dist:
    def initialize(self, net, use_gpu=False):
        self.net = net
        if use_gpu:
            self.net.to("cuda:0")
class PerceptualLoss(nn.Module):
    def __init__(self, use_gpu=True):
        super().__init__()
        self.w = nn.Linear(4, 4)
        {setup}
    def setup(self, use_gpu):
        if use_gpu:
            self.w.to("cuda:0")
    def forward(self, a, b):
        return (self.w(a) - self.w(b)).abs().mean()
"""
PERCEPTUAL_USER = """\
import torch
import lp
device = "cuda" if torch.cuda.is_available() else "cpu"
percept = lp.PerceptualLoss(use_gpu=device.startswith("cuda"))
x = torch.randn(2, 4).to(device)
print(percept(x, x))
"""


@pytest.mark.parametrize(
    "setup",
    [
        "self.setup(use_gpu)",
        "self.model = Dist()\n        self.model.initialize(self.w, use_gpu=use_gpu)",
        "self.cuda()",
        "self.w = self.w.cuda()",
    ],
)
def test_another_files_module_that_places_itself_is_not_gpd102(tmp_path: Path, setup: str) -> None:
    files = {"lp.py": PERCEPTUAL.format(setup=setup), "train.py": PERCEPTUAL_USER}
    assert project_lines(tmp_path, files, "GPD102") == []


def test_another_files_module_that_never_moves_stays_gpd102(tmp_path: Path) -> None:
    files = {"lp.py": PERCEPTUAL.format(setup="pass"), "train.py": PERCEPTUAL_USER}
    assert project_lines(tmp_path, files, "GPD102") == [("train.py", 4)]


# a class imported from a helper file whose base is defined in that same helper file
BASES = """\
import torch.nn as nn
{lightning}
class Base({base}):
    pass
class Net(Base):
    def forward(self, x):
        return x
"""
BASE_USER = """\
import torch
from nets import Net
device = "cuda" if torch.cuda.is_available() else "cpu"
net = Net()
net.load_state_dict(torch.load("net.pt", map_location=device))
x = torch.randn(2, 4).to(device)
print(net(x))
"""


def test_a_base_class_defined_in_the_imported_file_makes_a_module(tmp_path: Path) -> None:
    files = {"nets.py": BASES.format(lightning="", base="nn.Module"), "train.py": BASE_USER}
    assert project_lines(tmp_path, files, "GPD102") == [("train.py", 4)]


def test_a_lightning_base_in_the_imported_file_leaves_placement_to_lightning(
    tmp_path: Path,
) -> None:
    nets = BASES.format(lightning="import lightning as L", base="L.LightningModule")
    files = {"nets.py": nets, "train.py": BASE_USER}
    assert project_lines(tmp_path, files, "GPD102") == []
