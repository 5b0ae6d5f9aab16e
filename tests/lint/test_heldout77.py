"""Regressions of held-out set 77, reduced and rewritten here: the correct code each rule must
leave alone, next to the bug it must still report."""

from __future__ import annotations

from lint_lines import lines

# flowtron's style-transfer notebook (set 77): `_ = model.eval().cuda()` moves `model` in place
# (`eval()` returns the module itself)
EVAL_THEN_CUDA = """\
import torch
import torch.nn as nn

model = nn.Linear(4, 2)
_ = model.eval(){move}
x = torch.randn(3, 4).cuda()
with torch.no_grad():
    y = model(x)
"""


def test_a_move_at_the_end_of_a_chain_of_the_modules_own_methods() -> None:
    assert lines(EVAL_THEN_CUDA.format(move=".cuda()"), "GPD102") == []
    assert lines(EVAL_THEN_CUDA.format(move=".cuda()"), "GPD203") == []
    assert lines(EVAL_THEN_CUDA.format(move=""), "GPD102") == [4]
