"""Tensors a module's forward gets from elsewhere (issue 11, recall): a factory in a helper it
calls, in a model file that another file places, and a host table indexed by an input that the
module's callers pass on the device; next to the correct code each must leave alone."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths

PLACED = """\
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
"""

HELPER = """\
import torch
import torch.nn as nn
def zero_state(batch, hidden):
    {body}
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(8, 16, batch_first=True)
    def forward(self, x):
        y, _ = self.gru(x, zero_state(x.size(0), 16))
        return y
"""


def test_a_module_level_helper_of_forward_that_returns_a_host_tensor_is_gpd106() -> None:
    source = HELPER.format(body="return torch.zeros(1, batch, hidden)") + PLACED
    assert lines(source, "GPD106") == [4]


def test_a_helper_that_keeps_its_tensor_to_itself_is_not_gpd106() -> None:
    # vit-pytorch's dropout_layers: the tensor is a Python mask, forward gets a list
    body = "drop = torch.zeros(batch).uniform_(0, 1) < 0.1\n    return [h for h in drop if h]"
    assert lines(HELPER.format(body=body) + PLACED, "GPD106") == []


def test_a_helper_of_another_project_module_is_not_reported_there(tmp_path: Path) -> None:
    # DETR's d2 wrapper calls the dataset's convert_coco_poly_to_mask from forward: that
    # function serves the dataset too, where the CPU is right
    (tmp_path / "masks.py").write_text(
        "import torch\ndef empty_masks(h, w):\n    return torch.zeros(0, h, w)\n"
    )
    (tmp_path / "train.py").write_text(
        "import torch\nimport torch.nn as nn\nfrom masks import empty_masks\n"
        "class Net(nn.Module):\n    def forward(self, x):\n        return empty_masks(2, 3)\n"
        + PLACED
    )
    result = lint_paths([tmp_path], LintConfig(select=("GPD106",)), use_cache=False)
    assert [f for file in result.files for f in file.findings] == []


COORDS = """\
import torch
import torch.nn as nn
class CoordNet(nn.Module):
    def coords(self, x):
        b, _, h, w = x.shape
        ys = torch.linspace(-1, 1, h).view(1, 1, h, 1).expand(b, 1, h, w)
        return torch.cat([x, ys], dim=1)
    def forward(self, x):
        return self.coords(x)
"""


def test_linspace_in_a_helper_of_forward_is_gpd106() -> None:
    assert lines(COORDS + PLACED.replace("Net()", "CoordNet()"), "GPD106") == [6]


def test_a_model_file_placed_by_another_file_is_checked() -> None:
    # the project's script places the model: its forward meets the inputs there
    assert lines(COORDS, "GPD106") == [6]


def test_a_model_file_leaves_what_other_step_methods_return_to_their_callers() -> None:
    # `model.init_hidden(b).to(device)` in the script that imports it
    source = (
        "import torch\nimport torch.nn as nn\nclass RNN(nn.Module):\n"
        "    def init_hidden(self, b):\n        return torch.zeros(1, b, 8)\n"
    )
    assert lines(source, "GPD106") == []


def test_a_script_that_places_nothing_runs_on_the_cpu() -> None:
    assert lines(COORDS + "print(CoordNet()(torch.rand(1, 1, 4, 4)))\n", "GPD106") == []


ADD_COORDS = """\
import torch
import torch.nn as nn
class AddCoords(nn.Module):
    def forward(self, x):
        b, _, h, w = x.size()
        xx = torch.arange(h).repeat(1, w, 1)
        xx = xx.float() / (h - 1)
        xx = xx * 2 - 1
        xx = xx.repeat(b, 1, 1, 1)
        {use}
        freqs = torch.exp(-3.0 * torch.arange(0, w, dtype=torch.float32) / w).to(x.device)
        return torch.cat([x, xx, freqs.expand(b, 1, h, w)], dim=1)
""" + PLACED.replace("Net()", "AddCoords()")


def test_a_factory_tensor_computed_on_and_then_moved_is_placed() -> None:
    # CoordConv-pytorch's AddCoords: `xx_channel.type_as(input_tensor)` after the arithmetic;
    # DiT's timestep_embedding: `torch.exp(c * torch.arange(...) / half).to(t.device)`
    source = ADD_COORDS.format(use="xx = xx.type_as(x)")
    assert lines(source, "GPD106") == []


def test_a_factory_tensor_computed_on_and_never_moved_stays_gpd106() -> None:
    assert lines(ADD_COORDS.format(use="pass"), "GPD106") == [6]


BANK = """\
import torch
import torch.nn as nn
class MemoryBank(nn.Module):
    def __init__(self, size, dim):
        super().__init__()
        self.features = torch.randn(size, dim)
    def forward(self, feats, index):
        return feats * self.features[index]
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
bank = MemoryBank(100, 8).to(device)
feats = torch.randn(4, 8, device=device)
index = torch.randint(0, 100, (4,)){move}
out = bank(feats, index)
"""


def test_a_host_table_indexed_by_a_device_input_of_forward_is_gpd108() -> None:
    assert lines(BANK.format(move=".to(device)"), "GPD108") == [8]


def test_a_host_table_indexed_by_a_host_input_is_not_gpd108() -> None:
    assert lines(BANK.format(move=""), "GPD108") == []


def test_a_registered_table_indexed_by_a_device_input_is_not_gpd108() -> None:
    source = BANK.format(move=".to(device)").replace(
        "self.features = torch.randn(size, dim)",
        'self.register_buffer("features", torch.randn(size, dim))',
    )
    assert lines(source, "GPD108") == []


GRID = (
    """\
import torch
import torch.nn as nn
class Net(nn.Module):
    def grid(self, h, w):
        return torch.zeros(1, 1, h, w)
    def forward(self, x):
        g = self.grid(x.size(2), x.size(3))
        {move}
        return torch.cat([x, g], 1)
"""
    + PLACED
)


def test_a_helper_s_tensor_that_the_caller_moves_by_name_is_placed() -> None:
    assert lines(GRID.format(move="g = g.to(x.device)"), "GPD106") == []


def test_a_helper_s_tensor_that_the_caller_never_moves_stays_gpd106() -> None:
    assert lines(GRID.format(move="pass"), "GPD106") == [5]
