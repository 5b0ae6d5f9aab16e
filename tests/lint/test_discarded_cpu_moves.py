"""GPD103 on a discarded move to the CPU: a bug when the next read needs the host copy, nothing
lost when that read moves the tensor again (Graph-WaveNet's test.py: ``adp.to(device)`` with a
CPU ``device``, then ``adp = adp.cpu().detach().numpy()``; set 19, judged wrong)."""

from __future__ import annotations

import pytest
from lint_lines import lines

HEAD = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
cpu = torch.device("cpu")
model = torch.nn.Linear(4, 4).to(device)
z = model(torch.randn(2, 4).to(device))
"""


@pytest.mark.parametrize("move", ["z.to(cpu)", 'z.to("cpu")', "z.cpu()"])
def test_discarded_cpu_move_then_moved_again_is_clean(move: str) -> None:
    assert lines(HEAD + f"{move}\nw = z.cpu().detach().numpy()\n", "GPD103") == []


@pytest.mark.parametrize("move", ["z.to(cpu)", "z.cpu()"])
def test_discarded_cpu_move_then_read_in_place_is_reported(move: str) -> None:
    assert lines(HEAD + f"{move}\nw = z.detach().numpy()\n", "GPD103") == [6]


def test_discarded_device_move_then_moved_again_is_still_reported() -> None:
    # the read after it is not a move of the same tensor to the same place
    source = HEAD + "x = torch.randn(2, 4)\nx.to(device)\ny = model(x.to(device).half())\n"
    assert lines(source, "GPD103") == [7]
