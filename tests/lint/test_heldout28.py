"""Precision regressions from the twenty-eighth held-out set (public repositories), reduced
and rewritten here: correct code each rule must leave alone, next to the bug it still finds."""

from __future__ import annotations

from lint_lines import lines

# pytorch-3dunet's config: a device Enum whose value names the choice made elsewhere
ENUM = """\
from enum import Enum
import torch
class Device(str, Enum):
    CUDA = "cuda"
    CPU = "cpu"
def pick():
    return Device.CUDA if torch.cuda.is_available() else Device.CPU
x = torch.ones(2, device=pick().value)
y = torch.ones(2, device="cuda")
"""


def test_the_value_of_a_device_enum_member_is_no_hard_coded_cuda() -> None:
    assert lines(ENUM, "GPD203") == [9]


# Time-Series-Library's Koopa: an attribute rebuilt from the input at every call, its NaN
# fallback moved to the input's device, then only reshaped
REBUILT = """\
import torch
import torch.nn as nn
class DMD(nn.Module):
    def __init__(self):
        super().__init__()
        self.K = None
    def forward(self, z):
        b = z.shape[0]
        self.K = torch.linalg.lstsq(z[:, :-1], z[:, 1:]).solution
        if torch.isnan(self.K).any():
            self.K = torch.eye(self.K.shape[1]).to({where}).unsqueeze(0).repeat(b, 1, 1)
        return torch.bmm(z[:, -1:], self.K)
"""


def test_an_attribute_rebuilt_moved_then_reshaped_is_no_stale_cache() -> None:
    assert lines(REBUILT.format(where="self.K.device"), "GPD105") == []
    # moved back to the host at the end of the chain, it is the cache the rule is about
    assert lines(REBUILT.format(where="self.K.device).cpu("), "GPD105") == [6]


# Time-Series-Library's Autoformer layers: a plain list of decompositions whose only layer is
# an nn.AvgPool1d, two classes deep
DECOMPOSITIONS = """\
import torch.nn as nn
class MovingAvg(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.kernel_size = kernel_size
        self.avg = nn.AvgPool1d(kernel_size=kernel_size, stride=1)
    def forward(self, x):
        return self.avg(x)
class Decomp(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.moving_avg = MovingAvg(kernel_size)
    def forward(self, x):
        return x - self.moving_avg(x)
class DecompMulti(nn.Module):
    def __init__(self, kernel_sizes):
        super().__init__()
        self.decomps = [{part} for k in kernel_sizes]
    def forward(self, x):
        return [d(x) for d in self.decomps]
"""


def test_a_plain_list_of_modules_holding_only_settings_moves_nothing() -> None:
    assert lines(DECOMPOSITIONS.format(part="Decomp(k)"), "GPD104") == []
    assert lines(DECOMPOSITIONS.format(part="nn.Linear(k, k)"), "GPD104") == [18]


# self-supervised-depth-completion's Intrinsics (re-scored with set 28's changes): a class's
# own `cuda()` moves its tensors; the script calls it only under `if cuda:`
OWN_CUDA = """\
import torch
class Intrinsics:
    def __init__(self, w):
        self.U = torch.arange(w).float()
    def cuda(self):
        self.U = self.U.cuda()
        return self
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
intrinsics = Intrinsics(4)
if device.type == "cuda":
    intrinsics = intrinsics.cuda()
grid = torch.zeros(4).cuda()
"""


def test_a_class_own_cuda_method_is_no_hard_coded_cuda() -> None:
    assert lines(OWN_CUDA, "GPD203") == [12]
