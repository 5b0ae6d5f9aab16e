"""GPD302 through a helper: ``load_checkpoint(path, model, optimizer)`` restores the
optimizer's state while the caller's model is still on the host; the model moves later."""

from __future__ import annotations

from gpudoc.lint.engine import lint_source

SCRIPT = """\
import torch
import torch.nn as nn


def load_checkpoint(path, model, optimizer):
    state = torch.load(path, map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return state["epoch"]


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Linear(8, 2)
{early}opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
epoch = load_checkpoint("last.pt", net, opt)
{late}"""


def codes(early: str, late: str) -> set[tuple[int, str]]:
    result = lint_source(SCRIPT.format(early=early, late=late), "train.py")
    return {(f.line, f.code) for f in result.findings}


def test_a_helper_that_restores_the_state_before_the_model_moves() -> None:
    assert codes("", "net.to(device)\n") == {(15, "GPD302")}


def test_a_helper_called_once_the_model_is_placed() -> None:
    assert codes("net.to(device)\n", "") == set()


def test_a_model_never_moved_keeps_its_state_where_it_is() -> None:
    assert codes("", "") == set()
