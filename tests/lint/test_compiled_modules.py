"""``torch.compile(model)``, ``torch.jit.script(model)`` and ``torch.jit.trace``: what they return
runs the module's own parameters, so it is wherever the module is (recall set 24, report 08:
wsinfer's ``mjit(test_input)`` with a host example after the model was placed)."""

from __future__ import annotations

import pytest
from lint_lines import lines

HEAD = """\
import torch
from torchvision.models import resnet18
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
model = resnet18()
"""


@pytest.mark.parametrize(
    "compiler", ["torch.compile(model)", "torch.jit.script(model)", "torch.jit.trace(model, x)"]
)
def test_compiled_module_of_a_placed_model_gets_a_host_tensor(compiler: str) -> None:
    source = (
        HEAD + f"model.to(device)\nx = torch.ones(1, 3, 224, 224)\nfast = {compiler}\nfast(x)\n"
    )
    assert lines(source, "GPD101") == [8]


def test_module_compiled_before_the_move_moves_with_it() -> None:
    # the scripted module shares the parameter objects that `.to()` moves in place
    source = (
        HEAD + "mjit = torch.jit.script(model)\nmodel.to(device)\nmjit(torch.ones(1, 3, 8, 8))\n"
    )
    assert lines(source, "GPD101") == [7]


def test_compiled_module_on_a_moved_input_is_clean() -> None:
    source = (
        HEAD
        + "model.to(device)\nfast = torch.compile(model)\nfast(torch.ones(1, 3, 8, 8).to(device))\n"
    )
    assert lines(source, "GPD101") == []
