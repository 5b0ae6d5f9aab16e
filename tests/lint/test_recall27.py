"""Recall regressions from the twenty-seventh recall set (real bug reports), reduced and
rewritten here: the bug each rule must report, next to the correct code it must leave alone."""

from __future__ import annotations

from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_source

# report 02 (EduNLP's set_device): the wrapped network's `.cuda` is returned, not called
SET_DEVICE = """\
import torch
from torch.nn import DataParallel
def set_device(_net, device_ids):
    return DataParallel(_net, device_ids){move}
def build(_net):
    net = torch.nn.Linear(4, 4){move}
    return net
"""


def test_a_move_method_of_what_torch_built_named_without_a_call() -> None:
    result = lint_source(SET_DEVICE.format(move=".cuda"), "x.py", LintConfig(select=("GPD111",)))
    assert [f.line for f in result.findings] == [4, 6]
    assert "`DataParallel(_net, device_ids).cuda` names the method" in result.findings[0].message
    assert lines(SET_DEVICE.format(move=".cuda()"), "GPD111") == []
