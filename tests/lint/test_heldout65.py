"""Regressions of held-out set 65 and of the re-scores since set 64, reduced and rewritten here:
the bug each rule must report, next to the correct code it must leave alone."""

from __future__ import annotations

from lint_lines import lines

# Time-Series-Library (set 28, a regression of the thirteenth session): masks built on the host,
# converted to a dtype, then moved where the input is
MASKS = """\
import torch
import torch.nn as nn


class Gate(nn.Module):
    def forward(self, x):
        n = x.shape[-1]
        dtype = torch.float32
        masks = []
        for k in range(n):
            same = ((torch.arange(n) % 4 == k % 4) & (torch.arange(n) != k)).to(dtype){move}
            keep = (~torch.eye(n).bool()).to(dtype){move}
            masks.append(same * keep)
        return x * torch.stack(masks)
"""


def test_a_mask_converted_then_moved_to_the_input_is_placed() -> None:
    assert lines(MASKS.format(move=".to(x.device)"), "GPD106") == []
    # converted only, it stays on the host, and meets the input there
    assert lines(MASKS.format(move=""), "GPD106") == [11, 11, 12]


# a dtype conversion is no move, whether it names the dtype or reads it from a tensor
CONVERTED = """\
import torch
import torch.nn as nn


class Gate(nn.Module):
    def forward(self, x):
        dtype = torch.float32
        keep = torch.eye(x.shape[-1]).to({dtype})
        return x * keep
"""


def test_a_factory_converted_to_a_dtype_stays_on_the_host() -> None:
    for dtype in ("torch.float32", "dtype", "x.dtype", "dtype=x.dtype"):
        assert lines(CONVERTED.format(dtype=dtype), "GPD106") == [8], dtype
    assert lines(CONVERTED.format(dtype="x.dtype).to(x.device"), "GPD106") == []
