"""Wrong findings of the twenty-sixth held-out set (public repositories), reduced and rewritten
here: correct code each rule must leave alone, next to the bug it must still report."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths

# depth-completion: a loss keeps its result on `self` for logging; it holds no parameters
LOSSES = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
class MaskedL1Loss(nn.Module):
    def forward(self, pred, target):
        valid = (target > 0).detach()
        self.loss = {result}
        return self.loss
"""
TRAIN = """\
import torch
import torch.nn as nn
from losses import MaskedL1Loss
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Conv2d(1, 1, 3, padding=1).to(device)
criterion = MaskedL1Loss()
x = torch.rand(2, 1, 8, 8).to(device)
loss = criterion(model(x), torch.rand(2, 1, 8, 8).to(device))
"""


def _masked_loss(root: Path, result: str) -> list[int]:
    (root / "losses.py").write_text(LOSSES.format(result=result))
    (root / "train.py").write_text(TRAIN)
    config = LintConfig(select=("GPD102",))
    return [f.line for f in lint_paths([str(root / "train.py")], config, use_cache=False).findings]


def test_a_loss_that_keeps_its_computed_result_holds_nothing(tmp_path: Path) -> None:
    assert _masked_loss(tmp_path, "(target - pred)[valid].abs().mean()") == []
    assert _masked_loss(tmp_path, "F.l1_loss(pred[valid], target[valid])") == []
    assert _masked_loss(tmp_path, "nn.Parameter(torch.ones(1))") == [6]


# NASBench: `torch.tensor(self.out_channels[t])` of a list of numbers is a 0-dim tensor, only
# compared and used as a slice bound
CELL = """\
import torch
import torch.nn as nn
def truncate(inputs, channels):
    if inputs.size()[1] < channels:
        raise ValueError("input channels < output channels")
    return inputs[:, :channels]
class Cell(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3, padding=1)
        self.out_channels = [8, 7]
    def forward(self, x):
        kept = truncate(x, torch.tensor({size}))
        return self.conv(x) + kept
model = Cell().cuda()
model(torch.randn(1, 8, 4, 4).cuda())
"""


def test_a_tensor_of_one_number_from_a_list_of_numbers_is_a_number() -> None:
    assert lines(CELL.format(size="self.out_channels[1]"), "GPD106") == []
    assert lines(CELL.format(size="self.out_channels"), "GPD106") == [13]


# sub-sentence-encoder: the loader's collate_fn builds a batch object whose `.to()` moves it in
# place (a project class returning `self`, or a BatchEncoding)
DATA = """\
import torch
class ModelInput:
    def __init__(self, ids):
        self.ids = ids
    def to(self, device):
        self.ids = self.ids.to(device)
        return self
def collate(rows):
    return ModelInput(torch.tensor([r["ids"] for r in rows]))
"""
ENCODE = """\
import torch
from torch.utils.data import DataLoader
from data import collate
def encode(rows, model, cuda):
    for batch in DataLoader(rows, batch_size=2{collate}):
        if cuda:
            batch.to("cuda")
        model(batch.ids.float())
"""


def _encode(root: Path, collate: str) -> list[int]:
    (root / "data.py").write_text(DATA)
    (root / "encode.py").write_text(ENCODE.format(collate=collate))
    config = LintConfig(select=("GPD103",))
    return [f.line for f in lint_paths([str(root / "encode.py")], config, use_cache=False).findings]


def test_a_batch_a_collate_fn_built_may_move_in_place(tmp_path: Path) -> None:
    assert _encode(tmp_path, ", collate_fn=collate") == []
    assert _encode(tmp_path, "") == [7]


# LiquidNet (a miss): a helper that forward calls builds parameters on the CPU on every call and
# multiplies them with the inputs; the `nn.Parameter(...)` wrapper hid the factory
LIQUID = """\
import torch
import torch.nn as nn
class Cell(nn.Module):
    def __init__(self, num_units):
        super().__init__()
        self.fc = nn.Linear(num_units, num_units)
    def _map_inputs(self, inputs):
        w = nn.Parameter(torch.ones(inputs.shape[-1]))
        return inputs * w
    def forward(self, inputs):
        return self.fc(self._map_inputs(inputs))
device = "cuda" if torch.cuda.is_available() else "cpu"
model = Cell(16).to(device)
model(torch.rand(4, 16).to(device))
"""


def test_a_parameter_built_on_the_cpu_in_forward_meets_the_inputs() -> None:
    assert lines(LIQUID, "GPD106") == [8]
    moved = LIQUID.replace(
        "torch.ones(inputs.shape[-1])", "torch.ones(inputs.shape[-1], device=inputs.device)"
    )
    assert lines(moved, "GPD106") == []


# SCINet (RevIN's baselines): the experiment's base class keeps a `_acquire_device` that could
# pick the CPU, but nothing calls it: its `__init__` builds the model with `.cuda()`
SCINET = """\
import torch
class Exp_Basic(object):
    def __init__(self, args):
        self.args = args
        {init}
    def _build_model(self):
        return torch.nn.Linear(4, 4)
    def _acquire_device(self):
        if self.args.use_gpu:
            return torch.device("cuda:0")
        return torch.device("cpu")
    def predict(self, path):
        self.model.load_state_dict(torch.load(path))
"""


def test_a_cpu_choice_in_a_method_nothing_calls_is_no_cpu_path() -> None:
    uncalled = SCINET.format(init="self.model = self._build_model().cuda()")
    assert lines(uncalled, "GPD203") == []
    assert lines(uncalled, "GPD201") == []
    called = SCINET.format(
        init="self.device = self._acquire_device()\n        self.model = self._build_model().cuda()"
    )
    assert lines(called, "GPD203") == [6]
