"""Regressions of held-out set 56 (public repositories), reduced and rewritten here: the correct
code each rule must leave alone, next to the bug it still finds."""

from __future__ import annotations

from lint_lines import lines

# open_clip's text tower: a boolean mask built on the host indexes a device tensor
MASKED = """\
import torch
import torch.nn as nn


class ClsPool(nn.Module):
    cls_pos = 0

    def forward(self, h):
        return h[:, self.cls_pos]


class Tower(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.emb = nn.Embedding(100, dim)
        self.pool = ClsPool()

    def forward(self, ids):
        hidden = self.emb(ids)
        n = hidden.shape[1]
        return {use} if type(self.pool) == ClsPool else hidden
"""


def test_a_host_mask_used_only_as_an_index_needs_no_device() -> None:
    index = "hidden[:, torch.arange(n) != self.pool.cls_pos, :]"
    assert lines(MASKED.format(use=index), "GPD106") == []
    product = "hidden * (torch.arange(n) != self.pool.cls_pos)[None, :, None]"
    assert lines(MASKED.format(use=product), "GPD106") == [21]


# philtabor's TD3: target policy noise, one draw wrapped in a 0-dim tensor
NOISE = """\
import numpy as np
import torch as T
import torch.nn as nn


class Agent:
    def __init__(self):
        self.device = T.device("cuda:0" if T.cuda.is_available() else "cpu")
        self.target_actor = nn.Linear(3, 1).to(self.device)

    def learn(self, batch):
        act = self.target_actor(T.tensor(batch, dtype=T.float).to(self.device))
        return act + T.clamp(T.tensor({draw}), -0.5, 0.5)
"""


def test_one_numpy_draw_is_a_scalar_operand() -> None:
    assert lines(NOISE.format(draw="np.random.normal(scale=0.2)"), "GPD106") == []
    assert lines(NOISE.format(draw="np.random.normal(scale=0.2, size=1)"), "GPD106") == [13]
