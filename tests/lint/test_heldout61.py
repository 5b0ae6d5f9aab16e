"""Regressions of held-out set 61 and of the recall reports of the sets before it, reduced and
rewritten here: the correct code each rule must leave alone, next to the bug it finds."""

from __future__ import annotations

from pathlib import Path

import pytest
from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths

# CoordConv (a recall report): the grid is moved where it joins the input, then used again
# unmoved where it joins the input's concatenation
COORDS = """\
import torch
import torch.nn as nn


class AddCoords(nn.Module):
    def forward(self, x):
        b, _, h, w = x.size()
        xx = torch.arange(h).repeat(1, w, 1)
        xx = xx.float() / (h - 1)
        out = torch.cat([x, xx.type_as(x)], dim=1)
        {second}
        return out
"""


def test_a_factory_moved_at_one_use_and_not_at_another_is_reported() -> None:
    assert lines(COORDS.format(second="out = torch.cat([out, xx], dim=1)"), "GPD106") == [8]


def test_a_factory_moved_at_each_use_is_not() -> None:
    moved = "out = torch.cat([out, xx.type_as(x)], dim=1)"
    assert lines(COORDS.format(second=moved), "GPD106") == []
    rebound = "xx = xx.type_as(x)\n        out = torch.cat([out, xx], dim=1)"
    assert lines(COORDS.format(second=rebound), "GPD106") == []


# ludwig (a recall report): a helper of `utils/` builds its row vector on the host; a module's
# forward in another package calls it with a batch column
HELPER = """\
import torch


def sequence_mask(lengths, maxlen=None):
    if maxlen is None:
        maxlen = lengths.max()
    row = torch.arange(0, maxlen, 1)
    return row < torch.unsqueeze(lengths, dim=-1)
"""

ENCODER = """\
import torch
from pkg.utils import torch_utils


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(16, 8)

    def {caller}(self, inputs):
        mask = torch_utils.sequence_mask(inputs[:, 0], 15)
        return self.embed(inputs) * mask.unsqueeze(-1)
"""

TRAIN = """\
import torch
from pkg.encoders.encoder import Encoder

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Encoder().to(device)
"""


def _helper_lines(
    tmp_path: Path, caller: str, namespace: bool = False, helper: str = HELPER
) -> list[int]:
    (tmp_path / "setup.py").write_text("")
    for folder in ("pkg", "pkg/utils", "pkg/encoders"):
        (tmp_path / folder).mkdir(exist_ok=True)
        if not namespace:
            (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "pkg/utils/torch_utils.py").write_text(helper)
    (tmp_path / "pkg/encoders/encoder.py").write_text(ENCODER.format(caller=caller))
    (tmp_path / "train.py").write_text(TRAIN)
    helper = str(tmp_path / "pkg/utils/torch_utils.py")
    result = lint_paths([helper], LintConfig(select=("GPD106",)), jobs=1, use_cache=False)
    assert not result.errors
    return [finding.line for finding in result.findings]


@pytest.mark.parametrize("namespace", [False, True])
def test_a_helper_another_package_calls_from_forward_runs_on_its_inputs(
    tmp_path: Path, namespace: bool
) -> None:
    # also where the packages have no `__init__.py` (namespace packages)
    assert _helper_lines(tmp_path, "forward", namespace) == [7]


def test_a_helper_called_outside_forward_is_its_callers_choice(tmp_path: Path) -> None:
    # a dataset's or a preprocessing step's call may want the mask on the host
    assert _helper_lines(tmp_path, "collate") == []


def test_the_cache_misses_when_a_caller_of_the_helper_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUDOC_CACHE_DIR", str(tmp_path / "cache"))
    assert _helper_lines(tmp_path, "forward") == [7]
    helper = str(tmp_path / "pkg/utils/torch_utils.py")
    config = LintConfig(select=("GPD106",))
    first = lint_paths([helper], config, jobs=1)
    encoder = tmp_path / "pkg/encoders/encoder.py"
    encoder.write_text(ENCODER.format(caller="prepare") + "\n")  # a new size: a new stamp
    second = lint_paths([helper], config, jobs=1)
    assert [f.line for f in first.findings] == [7]
    assert not second.files[0].cached
    assert second.findings == ()


# a neural ODE block (held-out set 59): the integration times only go to torchdiffeq, which
# moves them to the state's device
ODE = """\
import torch
import torch.nn as nn
from torchdiffeq import odeint_adjoint as odeint


class Block(nn.Module):
    def __init__(self, field):
        super().__init__()
        self.field = field
        self.times = torch.tensor([0.0, 1.0])

    def forward(self, x):
        return {use}


block = Block(nn.Linear(4, 4)).cuda()
"""


def test_times_handed_to_a_torchdiffeq_solver_need_no_buffer() -> None:
    assert lines(ODE.format(use="odeint(self.field, x, self.times)[1]"), "GPD105") == []
    assert lines(ODE.format(use="x * self.times[1]"), "GPD105") == [10]


def test_a_helper_its_own_file_also_calls_outside_forward_is_not_reported(
    tmp_path: Path,
) -> None:
    # the dataset beside it builds masks on the host with the same helper
    helper = HELPER + "\n\ndef collate(batch):\n    return sequence_mask(batch, 4)\n"
    assert _helper_lines(tmp_path, "forward", helper=helper) == []


# Comprehensive-Transformer-TTS's coordconv (set 61): the grid is built from two host factories
# through `torch.matmul` and a list comprehension, then moved as a whole
DEPTH_GRID = """\
import torch
import torch.nn as nn


class AddDepthGrid(nn.Module):
    def forward(self, vol):
        n, c, d, h, w = vol.shape
        ones = torch.ones([1, 1, 1, 1, w], dtype=torch.int32)
        rows = torch.arange(h, dtype=torch.int32)[None, None, None, :, None]
        plane = torch.matmul(rows, ones)
        grid = torch.cat([plane + i for i in range(d)], dim=2)
        {move}
        return torch.cat([vol, grid.float().repeat(n, 1, 1, 1, 1)], dim=1)


model = AddDepthGrid().cuda()
"""


def test_a_grid_made_of_several_factories_moves_as_one() -> None:
    assert lines(DEPTH_GRID.format(move="grid = grid.to(vol.device)"), "GPD106") == []
    assert lines(DEPTH_GRID.format(move="pass"), "GPD106") == [8, 9]


CTC = """\
import torch
import torch.nn as nn


class AlignLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.ctc = nn.CTCLoss(zero_infinity=True)

    def forward(self, logprob, in_lens, out_lens):
        total = 0.0
        for b in range(logprob.shape[0]):
            targets = torch.arange(1, in_lens[b] + 1).unsqueeze(0)
            cur = logprob[b, : out_lens[b], : in_lens[b] + 1].unsqueeze(1)
            total += {loss}
        return total


loss = AlignLoss().cuda()
"""


def test_ctc_targets_may_stay_on_the_host() -> None:
    # ATen's ctc_loss copies host targets to the log-probabilities' device itself
    ctc = "self.ctc(cur.log_softmax(-1), targets, out_lens[b:b + 1], in_lens[b:b + 1])"
    assert lines(CTC.format(loss=ctc), "GPD106") == []
    other = "(cur.log_softmax(-1) * targets).sum()"
    assert lines(CTC.format(loss=other), "GPD106") == [13]


PLACEHOLDER = """\
import torch
import torch.nn as nn


class FullAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, qk, v):
        dots = torch.einsum("bie,bje->bij", self.proj(qk), qk).softmax(dim=-1)
        return torch.einsum("bij,bje->bie", dots, v), dots, torch.{factory}


attn = FullAttention(16).cuda()
"""


def test_an_empty_placeholder_has_nothing_to_misplace() -> None:
    assert lines(PLACEHOLDER.format(factory="empty(0)"), "GPD106") == []
    assert lines(PLACEHOLDER.format(factory="zeros([0])"), "GPD106") == []
    assert lines(PLACEHOLDER.format(factory="zeros(4)"), "GPD106") == [12]


# keitakurita's Transformer-XL notebooks (set 61): a DataLoader of the project's own that puts
# the whole corpus on the device and yields slices of it
CHUNKS = """\
import torch
import torch.nn as nn
from torch.utils import data

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ChunkLoader(data.DataLoader):
    def __init__(self, tokens, batch_size, bptt, device=torch.device("cpu")):
        self.bptt = bptt
        steps = tokens.size(0) // batch_size
        self.data = tokens[: steps * batch_size].view(batch_size, steps).t(){move}

    def __iter__(self):
        for start in range(0, self.data.size(0) - 1, self.bptt):
            end = min(start + self.bptt, self.data.size(0) - 1)
            yield self.data[start:end], self.data[start + 1 : end + 1], end - start


def run_epoch(model: nn.Module, loader: data.DataLoader):
    for i, (batch, target, seq_len) in enumerate(loader):
        out = model(batch)


train_iter = ChunkLoader(torch.randint(0, 100, (1000,)), 4, 10, device=device)
lm = nn.Embedding(100, 8)
if torch.cuda.is_available():
    lm.cuda()
run_epoch(lm, train_iter)
"""


def test_a_loader_subclass_that_moves_its_data_yields_device_batches() -> None:
    assert lines(CHUNKS.format(move=".contiguous().to(device)"), "GPD101") == []
    assert lines(CHUNKS.format(move=".contiguous()"), "GPD101") == [22]


FORWARD_FUNCTION = """\
import torch
import torch.nn as nn


def forward({params}):
    x = x.view(-1, 28 * 28)
    return nn.Linear(784, 10)(x)


print(forward({args}torch.rand(1, 28, 28).cuda()))
"""


def test_a_notebooks_forward_function_is_no_modules_forward() -> None:
    assert lines(FORWARD_FUNCTION.format(params="x", args=""), "GPD109") == []
    # d2l's `@add_to_class` methods are written at the top level and take `self`
    attached = FORWARD_FUNCTION.format(params="self, x", args="None, ")
    assert lines(attached, "GPD109") == [7]


# LaneNet's loss (recall set 61): class weights from counts of the labels, plus a 0-dim host
# constant; arithmetic takes it as a number beside CUDA operands, a clamp bound does not
WEIGHTS = """\
import torch
import torch.nn as nn


class Weighted(nn.Module):
    def forward(self, logits, labels):
        _, counts = torch.unique(labels, return_counts=True)
        counts = counts.float()
        weights = {expression}
        return nn.functional.cross_entropy(logits, labels, weight=weights)


loss = Weighted().cuda()
"""


def test_a_host_number_tensor_is_an_operand_of_arithmetic() -> None:
    added = "1.0 / torch.log(torch.add(counts / counts.sum(), torch.tensor(1.02)))"
    assert lines(WEIGHTS.format(expression=added), "GPD106") == []
    clamped = "torch.clamp(counts, max=torch.tensor(100.0))"
    assert lines(WEIGHTS.format(expression=clamped), "GPD106") == [9]


# torchtext's Field (pytorch/text#304, recall set 60): the legacy type is kept on an attribute
FIELD = """\
import torch


class Field:
    def __init__(self, tensor_type={default}):
        self.tensor_type = tensor_type

    def numericalize(self, arr, device=None):
        return self.tensor_type(arr, device=device)
"""


def test_a_legacy_type_kept_on_an_attribute_is_a_legacy_constructor() -> None:
    assert lines(FIELD.format(default="torch.LongTensor"), "GPD114") == [9]
    assert lines(FIELD.format(default="torch.tensor"), "GPD114") == []
