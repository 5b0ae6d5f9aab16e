"""A placed model's own members: a submodule called directly (``model.encoder(x)``) and a
method that runs ``self.forward`` (``model.score(x)``) take the caller's host tensor to the
device, and the finding belongs on the caller's line, not inside the class."""

from __future__ import annotations

from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_source

NET = """\
import torch
import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(4, 4)
        self.head = nn.Linear(4, 2)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.head(self.encoder(x))

    def score(self, x):
        h = self.forward(x)
        return h.sum()

    def probe(self):
        return self.forward(torch.randn(2, 4))

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
x = torch.randn(2, 4)
"""


def test_submodule_of_a_placed_model_called_on_a_host_tensor() -> None:
    assert lines(NET + "features = model.encoder(x)\n", "GPD101") == [24]


def test_submodule_call_on_a_moved_tensor_or_a_weightless_member_is_clean() -> None:
    source = NET + "features = model.encoder(x.to(device))\nrelu = model.act(x)\n"
    assert lines(source, "GPD101") == []


def test_wrapped_model_submodule_is_not_judged() -> None:
    # DataParallel(...).module is the inner model; its class is not read through the wrapper
    source = NET + "dp = nn.DataParallel(Net()).to(device)\nf = dp.module.encoder(x)\n"
    assert lines(source, "GPD101") == []


def test_method_running_forward_reports_at_the_callers_argument() -> None:
    result = lint_source(NET + "s = model.score(x)\n", "x.py", LintConfig(select=("GPD101",)))
    assert [(f.line, f.col) for f in result.findings] == [(24, 17)]
    assert "`model` is on the device" in result.findings[0].message


def test_method_feeding_forward_its_own_host_tensor_reports_in_the_method() -> None:
    # the host tensor is made inside `probe`: that line is the bug, not the caller's
    assert lines(NET + "p = model.probe()\n", "GPD101") == [19]


def test_head_replaced_after_the_move_is_reported_with_a_plain_message() -> None:
    source = NET + "model.encoder = nn.Linear(4, 4)\nf = model.encoder(x.to(device))\n"
    result = lint_source(source, "x.py", LintConfig(select=("GPD102",)))
    assert [f.line for f in result.findings] == [24]
    assert "but its input is on the device" in result.findings[0].message
