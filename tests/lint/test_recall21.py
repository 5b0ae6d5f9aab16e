"""Recall regressions from the twenty-first recall set (real bug reports), reduced and rewritten
here: the bug each rule must report, next to the correct code it must leave alone."""

from __future__ import annotations

from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_source
from gpudoc.lint.fix import fix_source

# report 16: a library picks its default device with `torch.cuda.is_available` never called
AVAILABLE = """\
import torch
{line}
"""


def test_an_availability_test_that_is_never_called_is_always_true() -> None:
    uncalled = (
        "device = torch.cuda.current_device() if torch.cuda.is_available else 'cpu'",
        "if torch.cuda.is_available:\n    model = torch.nn.Linear(2, 2).cuda()",
        "use_cuda = not args.no_cuda and torch.cuda.is_available",
        "if not torch.backends.mps.is_available:\n    print('no mps')",
    )
    for line in uncalled:
        assert lines(AVAILABLE.format(line=line), "GPD111") == [2], line
    called = (
        "device = torch.cuda.current_device() if torch.cuda.is_available() else 'cpu'",
        # the function handed on, to be called later, is no condition
        "available = torch.cuda.is_available\nif available():\n    print('gpu')",
        "checks = [torch.cuda.is_available, torch.backends.mps.is_available]",
    )
    for line in called:
        assert lines(AVAILABLE.format(line=line), "GPD111") == [], line


def test_the_uncalled_availability_test_is_fixed_by_calling_it() -> None:
    source = AVAILABLE.format(line="device = 'cuda' if torch.cuda.is_available else 'cpu'")

    def lint(text: str) -> list:  # type: ignore[type-arg]
        return list(lint_source(text, "x.py", LintConfig(select=("GPD111",))).findings)

    fixed = fix_source(source, lint).fixed
    assert "torch.cuda.is_available()" in fixed
    assert fix_source(fixed, lint).fixed == fixed


# report 19: Adagrad makes its state in its constructor, before the model is moved
ADAGRAD = """\
import torch
from torch import nn, optim
device = torch.device("cuda:0")
x = torch.randn(10, 2).to(device)
linear = nn.Linear(2, 4){early}
o = optim.{optimizer}(linear.parameters())
linear.to(device)
linear(x).mean().backward()
o.step()
"""


def test_an_optimizer_that_builds_its_state_eagerly_before_the_move_is_reported() -> None:
    assert lines(ADAGRAD.format(early="", optimizer="Adagrad"), "GPD302") == [6]
    # Adam makes its state at the first step, on the parameters' device by then
    assert lines(ADAGRAD.format(early="", optimizer="Adam"), "GPD302") == []
    assert lines(ADAGRAD.format(early=".to(device)", optimizer="Adagrad"), "GPD302") == []


# report 11: torch's private device count initialises CUDA like the public one
def test_the_private_cuda_device_count_initialises_cuda() -> None:
    source = """\
import os
import torch
os.environ["CUDA_VISIBLE_DEVICES"] = "0,1"
print(torch._C._cuda_getDeviceCount())
os.environ["CUDA_VISIBLE_DEVICES"] = "0"
"""
    assert lines(source, "GPD403") == [5]
