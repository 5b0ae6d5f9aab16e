"""Recall regressions from the twentieth recall set (real bug reports), reduced and rewritten
here: the bug each rule must report, next to the correct code it must leave alone."""

from __future__ import annotations

from lint_lines import lines

# report 05: a GAN's noise helper hands back the bound method instead of a moved tensor
NOISE = """\
import torch
def noise(size):
    n = torch.randn(size, 100)
    {body}
    return n
"""


def test_a_move_method_returned_or_bound_on_one_line_is_not_called() -> None:
    assert lines(NOISE.format(body="if torch.cuda.is_available(): return n.cuda"), "GPD111") == [4]
    assert lines(NOISE.format(body="if torch.cuda.is_available(): n = n.cuda"), "GPD111") == [4]
    called = "if torch.cuda.is_available(): return n.cuda()"
    assert lines(NOISE.format(body=called), "GPD111") == []
