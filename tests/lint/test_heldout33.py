"""Precision regressions from the thirty-third held-out set (public repositories), reduced and
rewritten here: correct code each rule must leave alone, next to the bug it still finds."""

from __future__ import annotations

from lint_lines import lines

# MONAI's tutorials: the script picks cuda:0; the "cpu" is a post-transform's own option
LIBRARY_CPU = """\
import torch
from monai.transforms import Invertd
device = torch.device({device})
model = torch.nn.Conv3d(1, 2, 3).to(device)
post = Invertd(keys="pred", transform=None, orig_keys="image", device="cpu")
model.load_state_dict(torch.load("downloaded_model.pt"))
"""


def test_a_library_cpu_option_is_no_cpu_path_of_a_script_on_cuda() -> None:
    source = LIBRARY_CPU.format(device='"cuda:0"')
    assert lines(source, "GPD203") == []
    assert lines(source, "GPD201") == []
    fallback = LIBRARY_CPU.format(device='"cuda" if torch.cuda.is_available() else "cpu"')
    assert lines(fallback, "GPD201") == [6]


# a state dict brought to the host tensor by tensor before saving
HOST_COPY = """\
import torch
import torch.nn as nn
device = torch.device("cuda")
net = nn.Linear(4, 2).to(device)
state = {k: v.to(torch.device("cpu")) for k, v in net.state_dict().items()}
torch.save(state, "net.pth")
"""


def test_a_state_dict_copied_to_the_host_is_no_cpu_path() -> None:
    assert lines(HOST_COPY, "GPD203") == []


# MONAI's benchmarks: pinned memory when there is a GPU, in a notebook written for one
PINNED = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(16, 3)), batch_size=4, {pin})
print(torch.cuda.get_device_name(0))
"""


def test_pinned_memory_when_a_gpu_exists_is_no_cpu_path() -> None:
    assert lines(PINNED.format(pin="pin_memory=torch.cuda.is_available()"), "GPD205") == []
    chosen = 'pin_memory=True)\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\nx = ('
    assert lines(PINNED.format(pin=chosen), "GPD205") == [6]


# recall set 33, report 03 (pytorch/audio#457): an indexed factory kept as a plain attribute
INDEXED = """\
import math
import torch
from torch import nn
import torchaudio.functional as F
class TimeStretch(nn.Module):
    def __init__(self, n_freq=201):
        super().__init__()
        self.phase_advance = torch.linspace(0, math.pi, n_freq){index}
    def forward(self, specgrams, rate):
        return F.phase_vocoder(specgrams, rate, self.phase_advance)
m = TimeStretch().cuda()
"""


def test_an_indexed_factory_kept_as_a_plain_attribute() -> None:
    assert lines(INDEXED.format(index="[..., None]"), "GPD105") == [8]
    assert lines(INDEXED.format(index=""), "GPD105") == [8]
