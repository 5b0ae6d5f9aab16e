"""Precision regressions from the twenty-ninth held-out set (public repositories), reduced and
rewritten here: correct code each rule must leave alone, next to the bug it still finds."""

from __future__ import annotations

import json
from pathlib import Path

from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths, lint_source

SELECT_101 = LintConfig(select=("GPD101",))

# dlwpt-code's tensors notebook: a result copied back to the host under another name is no CPU
# path of a lesson that runs on the GPU
COPY_BACK = """\
import torch
points = torch.ones(3, 2)
points_gpu = points.to(device="cuda")
points_gpu = points_gpu * 2
{back}
"""


def test_a_result_copied_back_to_the_host_is_no_cpu_path() -> None:
    assert lines(COPY_BACK.format(back='points_cpu = points_gpu.to(device="cpu")'), "GPD203") == []
    # moving the one model to the CPU is a choice of device: the script runs there too
    chosen = COPY_BACK.format(back='net_cpu = net.to(device="cpu")')
    assert lines(chosen, "GPD203") == [3]


# uvadlc's neural ODE: the attribute is moved where it is used, through a conditional alias
ALIASED = """\
import torch
import torch.nn as nn
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.span = torch.tensor([0.0, 1.0])
    def forward(self, x, span=None):
        span = self.span if span is None else span
        {use}
        return self.lin(x) * span[1]
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print(Block().to(device)(torch.ones(4, 2, device=device)))
"""


def test_an_attribute_moved_through_a_conditional_alias_is_moved_on_use() -> None:
    assert lines(ALIASED.format(use="span = span.to(x.device)"), "GPD105") == []
    assert lines(ALIASED.format(use="pass"), "GPD105") == [7]


# Autoformer's predict notebook: an availability test printed, not used to choose
PRINTED = """\
import torch
print(torch.cuda.is_available())
print(torch.cuda.get_device_name())
{choice}
"""


def test_a_printed_availability_test_is_no_cpu_path() -> None:
    assert lines(PRINTED.format(choice="torch.cuda.set_device(0)"), "GPD205") == []
    fallback = 'device = "cuda" if torch.cuda.is_available() else "cpu"'
    assert lines(PRINTED.format(choice=fallback), "GPD205") == [3]


def notebook(path: Path, *sources: str) -> Path:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    data = {"cells": [dict(cell, source=s) for s in sources], "metadata": {}, "nbformat": 4}
    path.write_text(json.dumps({**data, "nbformat_minor": 5}))
    return path


# Autoformer's predict notebook: the parser's `parse_args()` is commented out, `args` set by hand
NEVER_PARSED = """\
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument("--use_gpu", type=bool, default=True)
{parse}
device = torch.device("cuda" if args.use_gpu else "cpu")
"""


def test_a_notebook_that_never_parses_its_options_misreads_no_flag(tmp_path: Path) -> None:
    by_hand = NEVER_PARSED.format(parse="args = argparse.Namespace(use_gpu=True)")
    quiet = notebook(tmp_path / "by_hand.ipynb", by_hand)
    assert lint_paths([str(quiet)], jobs=1, use_cache=False).findings == ()
    # a script may be imported and parsed by another: it is still checked
    assert lines(by_hand, "GPD503") == [4]


# recall set 29, report 01 (a captcha trainer): the model's forward moves its own input
SELF_MOVING = """\
import torch
import torch.nn as nn
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
    def forward(self, x, mask):
        x = x.to(device)
        return self.fc(x) * mask
net = Net().to(device)
for inputs, labels in torch.utils.data.DataLoader(data):
    outputs = net(inputs, labels)
"""


def test_an_input_the_module_moves_itself_is_no_unmoved_input() -> None:
    # `inputs` is moved by forward; `labels`, passed as the mask, is not
    assert lines(SELF_MOVING, "GPD101") == [13]
    positions = [f.col for f in lint_source(SELF_MOVING, "x.py", SELECT_101).findings]
    assert positions == [27]  # `labels`, not `inputs` (column 19)
