"""Defects the second read of the seventeenth session's change found, each as the program that
showed it: the parse without libcst's re-validation, and the session's new readings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lint_lines import lines, project_lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_source

REPO = Path(__file__).resolve().parents[2]

# valid Python that libcst's validation refuses (LibCST#1061), in a test the walk reads the
# children of, and in a helper of another file
REFUSED = """\
import torch

use_gpu = True
model = torch.nn.Linear(2, 2)
if torch.cuda.is_available() if use_gpu else(lambda: False)():
    model = model.cuda()
model(torch.zeros(2))
"""
HELPER = """\
import torch


def build(use_gpu):
    if torch.cuda.is_available() if use_gpu else(lambda: False)():
        return torch.nn.Linear(2, 2).cuda()
    return torch.nn.Linear(2, 2)
"""


def test_valid_python_libcst_would_refuse_is_analysed(tmp_path: Path) -> None:
    assert lines(REFUSED, "GPD101") == [7]
    script = (
        "import torch\nfrom helper import build\n\nmodel = build(True)\nmodel(torch.zeros(2))\n"
    )
    assert project_lines(tmp_path, {"helper.py": HELPER, "main.py": script}, "GPD101") == [5]


def test_text_python_refuses_is_still_refused() -> None:
    result = lint_source('import torch\npath = "weights" b".pt"\n', "x.py", LintConfig())
    assert result.error is not None
    assert "internal error" not in result.error


def test_a_helper_nested_past_the_parsers_stack_is_not_followed(tmp_path: Path) -> None:
    """libcst's native parser overflows the C stack (a segfault) on 3,000 nested brackets: a
    helper that deep is skipped as the linted file itself would be refused."""
    deep = "import torch\nX = " + "(" * 3000 + "1" + ")" * 3000
    deep += "\n\n\ndef build():\n    return torch.nn.Linear(2, 2).cuda()\n"
    (tmp_path / "deep.py").write_text(deep)
    script = "import torch\nfrom deep import build\n\nmodel = build()\nmodel(torch.zeros(2))\n"
    (tmp_path / "main.py").write_text(script)
    done = subprocess.run(
        [sys.executable, "-m", "gpudoc", "lint", "--no-cache", "main.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode in (0, 1), done.stderr


# a handler that gives up is no CPU fallback
EXITS = """\
import argparse
import sys

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--no-cuda", action="store_true")
args = parser.parse_args()
device = torch.device("cpu" if args.no_cuda else "cuda")


def main():
    try:
        model = torch.nn.Linear(2, 2).cuda()
        print(model(torch.zeros(2).cuda()))
    except Exception as error:
        {handled}


main()
"""


def test_a_handler_that_exits_or_only_logs_is_no_fallback() -> None:
    assert lines(EXITS.format(handled="print(error)\n        sys.exit(1)"), "GPD203") == [14, 15]
    assert lines(EXITS.format(handled="print(error)"), "GPD203") == [14, 15]
    fallback = "model = torch.nn.Linear(2, 2)\n        print(model(torch.zeros(2)))"
    assert lines(EXITS.format(handled=fallback), "GPD203") == []


# an optimizer built again on one branch only: the other path steps the restored state
RESET = """\
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--reset-optimizer", action="store_true")
args = parser.parse_args()
model = torch.nn.Linear(2, 2)
optimizer = torch.optim.Adam(model.parameters())
optimizer.load_state_dict(torch.load("last.pt", map_location="cpu"))
model.cuda()
if args.reset_optimizer:
    optimizer = torch.optim.Adam(model.parameters())
optimizer.step()
"""


def test_an_optimizer_built_again_on_one_branch_only() -> None:
    assert lines(RESET, "GPD302") == [10]


# an attribute bound on both arms of an `if` in `__init__`: the host one still meets the input
BRANCHED = """\
import torch
from torch import nn


class Normalize(nn.Module):
    def __init__(self, imagenet, device):
        super().__init__()
        if imagenet:
            self.mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
        else:
            self.mean = torch.zeros(3, 1, 1, device=device)

    def forward(self, x):
        return x - self.mean


device = torch.device("cuda")
model = Normalize(True, device).to(device)
"""


def test_an_attribute_bound_on_both_arms_keeps_the_host_one() -> None:
    assert lines(BRANCHED, "GPD105") == [9]


# a loss with a tensor pinned to the first GPU, beside a DataParallel it is not part of
LOSS = """\
import torch
from torch import nn


class WeightedLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.weights = torch.tensor([1.0, 2.0]).cuda()

    def forward(self, logits, target):
        return nn.functional.cross_entropy(logits, target, weight=self.weights)


net = nn.DataParallel({wrapped})
criterion = WeightedLoss()
"""


def test_only_a_class_that_is_replicated_is_reported_under_data_parallel() -> None:
    assert lines(LOSS.format(wrapped="nn.Linear(4, 2).cuda()"), "GPD105") == []
    assert lines(LOSS.format(wrapped="WeightedLoss()"), "GPD105") == [8]


# an instance bound on one path, `None` on the other: where it is used, it is that instance
OPTIONAL = """\
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--eval", action="store_true")
args = parser.parse_args()


class Evaluator:
    def run(self, model, batch):
        return model(batch)


model = torch.nn.Linear(2, 2).cuda()
evaluator = None
if args.eval:
    evaluator = Evaluator()
if evaluator is not None:
    evaluator.run(model, torch.zeros(2))
"""


def test_an_instance_or_none_is_that_instance() -> None:
    assert lines(OPTIONAL, "GPD101") == [12]


# an option read through the namespace's `__dict__`
BY_DICT = """\
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda", help="cuda or cpu")
args = parser.parse_args()
config = dict(args.__dict__)
weights = torch.ones(2).to(config["device"])
noise = torch.zeros(2).cuda()
"""


def test_an_option_read_through_the_namespace_dict() -> None:
    assert lines(BY_DICT, "GPD203") == [10]
