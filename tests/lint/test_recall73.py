"""Recall sets 73 and 74: real device bugs (from fix commits and issue threads) reduced to their
shape, each next to the correct code the rule must leave alone."""

from __future__ import annotations

from lint_lines import lines

# lukemelas/EfficientNet-PyTorch#29 (recall 73/01): drop_connect starts its mask from a number
# and adds the random tensor in place, on the host, then scales the device input by it
DROP_CONNECT = """\
import torch
from torch import nn


def drop_connect(inputs, p, training):
    if not training:
        return inputs
    keep_prob = 1 - p
    random_tensor = keep_prob
    random_tensor += torch.rand([inputs.shape[0], 1, 1, 1], dtype=inputs.dtype{device})
    binary_tensor = torch.floor(random_tensor)
    return inputs / keep_prob * binary_tensor


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3)

    def forward(self, x):
        return drop_connect(self.conv(x), 0.2, self.training)


model = Block(3).cuda()
model(torch.randn(1, 3, 8, 8).cuda())
"""


def test_a_number_made_a_host_tensor_by_an_augmented_add() -> None:
    assert lines(DROP_CONNECT.format(device=""), "GPD106") == [10]
    assert lines(DROP_CONNECT.format(device=", device=inputs.device"), "GPD106") == []
    # the same number bound to the sum in one statement was already reported
    one_statement = DROP_CONNECT.format(device="").replace(
        "random_tensor = keep_prob\n    random_tensor += ", "random_tensor = keep_prob + "
    )
    assert lines(one_statement, "GPD106") == [9]


def test_a_number_made_a_host_tensor_then_moved_is_placed() -> None:
    moved = DROP_CONNECT.format(device="").replace(
        "torch.floor(random_tensor)", "torch.floor(random_tensor).to(inputs.device)"
    )
    assert lines(moved, "GPD106") == []


# asteroid-team/asteroid#603 (recall 74a/02): forward calls a padding helper defined below its
# class; the body runs once the module is loaded, when the helper exists
PADDER = """\
import torch
from torch import nn


class Padder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(1, 4, 3)

    def forward(self, x):
        x = pad(x, 8)
        return self.conv(x)


def pad(x, lcm):
    padding = torch.zeros(list(x.shape[:-1]) + [lcm]{device})
    return torch.cat([x, padding], dim=-1)


model = Padder().cuda()
model(torch.randn(1, 1, 30).cuda())
"""


def test_a_helper_defined_below_the_method_that_calls_it() -> None:
    assert lines(PADDER.format(device=""), "GPD106") == [16]
    assert lines(PADDER.format(device=", device=x.device"), "GPD106") == []


def test_module_level_code_above_a_definition_does_not_call_it() -> None:
    # a call above the `def` at module level would fail with NameError first: not walked
    source = "import torch\n\nx = make(torch.randn(2).cuda())\n\n\ndef make(t):\n" + (
        "    return t + torch.zeros(2)\n"
    )
    assert lines(source, "GPD106") == []


# allenai/allennlp#5656 (recall 74a/04, its core): device outputs collected with `append`, then
# converted one by one
COLLECTED = """\
import numpy as np
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
outs = []
for x in [torch.randn(3, 4) for _ in range(5)]:
    out = model(x.to(device))
    outs.append(out{host})
first = outs[0].detach().numpy()
every = np.concatenate([o.detach().numpy() for o in outs])
whole = np.concatenate(outs)
"""


def test_tensors_collected_by_append_keep_their_device() -> None:
    assert lines(COLLECTED.format(host=""), "GPD202") == [11, 12, 13]
    assert lines(COLLECTED.format(host=".detach().cpu()"), "GPD202") == []
    # a number per step (`loss.item()`) makes a list of numbers
    assert lines(COLLECTED.format(host=".sum().item()"), "GPD202") == []
