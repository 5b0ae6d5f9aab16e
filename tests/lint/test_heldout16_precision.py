"""Precision regressions from the sixteenth held-out set (public repositories linted before any
tuning, every finding judged): minimal programs of our own for each cause of a wrong finding,
beside the variant that must still be reported."""

from __future__ import annotations

from lint_lines import lines

# a plotting helper moves its input to the device the layer's own parameters are on
OWN_PARAMETERS = """\
import torch
import torch.nn as nn
def transformed(layer):
    device = {device}
    corners = torch.tensor([[-1.0, -1.0], [1.0, 1.0]])
    return layer(corners.to(device)).detach().cpu().numpy()
device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Linear(2, 2).to(device)
print(transformed(nn.Linear(2, 2)))
"""


def test_an_input_moved_to_the_module_s_own_device_meets_it() -> None:
    for own in (
        "next(layer.parameters()).device",
        "list(layer.parameters())[0].device",
        "list(layer.parameters())[0].device.type",
    ):
        assert lines(OWN_PARAMETERS.format(device=own), "GPD102") == [], own
    # moved to the script's GPU device instead: the host layer meets a device input
    assert lines(OWN_PARAMETERS.format(device='"cuda"'), "GPD102") == [6]


# a detection head's grid, moved by `.type(x.type())` (a type name that names the device too)
GRID = """\
import torch
import torch.nn as nn
class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 2, 1)
    def grid(self, out, dtype):
        grids = []
        for h, w in [out.shape[-2:]]:
            yv, xv = torch.meshgrid([torch.arange(h), torch.arange(w)], indexing="ij")
            grids.append(torch.stack((xv, yv), 0))
        return torch.cat(grids){move}
    def forward(self, x):
        out = self.conv(x)
        return out + self.grid(out, x.type())
model = Head().cuda()
"""


def test_a_grid_moved_by_a_tensor_type_name_is_on_the_input_s_device() -> None:
    assert lines(GRID.format(move=".type(dtype)"), "GPD106") == []
    assert lines(GRID.format(move=".to(out.device)"), "GPD106") == []
    assert lines(GRID.format(move=""), "GPD106") == [10, 10]


# (set 3, PyTorch-VAE's tests) each unittest test starts from a fresh setUp: one test's
# `self.model.cuda()` is not the next test's model
UNIT_TESTS = """\
import torch
import unittest
from models import BetaVAE
class TestVAE(unittest.TestCase):
    def setUp(self):
        self.model = BetaVAE(3, 64)
    def test_sample(self):
        self.model.cuda()
        print(self.model.sample(8, "cuda").shape)
    def test_forward(self):
        x = torch.randn(16, 3, 64, 64)
        print(self.model(x)[0].size())
"""


def test_each_unit_test_starts_from_its_set_up() -> None:
    assert lines(UNIT_TESTS, "GPD101") == []
    # one test that moves the model and then feeds it host data: reported
    one_test = UNIT_TESTS.replace("    def test_forward(self):\n", "")
    assert lines(one_test, "GPD101") == [11]
