"""Precision regressions from the twentieth held-out set (public repositories linted before any
tuning, every finding judged), and set 19's notebook cause: minimal programs of our own for each
cause of a wrong finding, beside the variant that must still be reported."""

from __future__ import annotations

from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_source

# a semi-supervised notebook's training cell: the model moved on one line after the optimizer
ONE_LINE = """\
import torch
cuda = torch.cuda.is_available()
model = torch.nn.Linear(784, 10)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
{line}
for _ in range(3):
    x = torch.randn(64, 784)
    if cuda:
        x = x.cuda()
    model(x).pow(2).mean().backward()
    optimizer.step()
"""


def test_a_one_line_move_after_the_optimizer_keeps_its_parameters() -> None:
    assert lines(ONE_LINE.format(line="if cuda: model = model.cuda()"), "GPD301") == []
    # a new model after the optimizer is still a replaced one
    replaced = "if cuda: model = torch.nn.Linear(784, 10).cuda()"
    assert lines(ONE_LINE.format(line=replaced), "GPD301") == [5]


# a forecasting model whose decomposition keeps pooling-only blocks in a plain list, and whose
# loss keeps only a flag
DECOMPOSITION = """\
import torch
import torch.nn as nn
class MovingAvg(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.kernel_size = kernel_size
        self.avg = nn.AvgPool1d(kernel_size=kernel_size, stride=1)
    def forward(self, x):
        return self.avg(x)
class Decomposition(nn.Module):
    def __init__(self, kernel_sizes):
        super().__init__()
        self.blocks = [{block} for k in kernel_sizes]
        self.layer = nn.Linear(1, len(kernel_sizes))
    def forward(self, x):
        return torch.stack([f(x) for f in self.blocks], -1)
class TopKLoss(nn.Module):
    def __init__(self, ignore_zero):
        super().__init__()
        self.ignore_zero = ignore_zero
    def forward(self, mu, labels):
        idx = labels != 0 if self.ignore_zero else labels >= 0
        return (labels[idx] - mu[idx]) ** 2
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Decomposition([3, 5]).to(device)
criterion = TopKLoss(True)
x = torch.randn(2, 1, 8, device=device)
criterion(model(x).mean(-1), x).mean().backward()
"""


def test_project_modules_that_keep_only_settings_hold_nothing_to_move() -> None:
    assert lines(DECOMPOSITION.format(block="MovingAvg(k)"), "GPD104") == []
    assert lines(DECOMPOSITION.format(block="MovingAvg(k)"), "GPD102") == []
    # a block with weights of its own is lost in the plain list
    assert lines(DECOMPOSITION.format(block="nn.Conv1d(1, 1, k)"), "GPD104") == [13]


# a deformable convolution whose grids start as None and become nn.Parameters in forward
GRIDS = """\
import torch
import torch.nn as nn
class Deformable(nn.Module):
    def __init__(self):
        super().__init__()
        self.offset = nn.Conv2d(3, 6, 3, padding=1)
        self.shape = None
        self.grid = None
    def forward(self, x):
        if self.shape != x.shape:
            self.shape = x.shape
            g = torch.linspace(-1, 1, x.shape[-1], device=x.device)
            self.grid = {wrap}
        return self.offset(x) + self.grid
model = Deformable().cuda()
"""


def test_a_cache_that_becomes_a_parameter_is_registered() -> None:
    assert lines(GRIDS.format(wrap="nn.Parameter(g)"), "GPD105") == []
    assert lines(GRIDS.format(wrap="g"), "GPD105") == [8]


# a positional encoding kept as a plain tensor, moved where forward reads it through a wrapper
ENCODING = """\
import torch
import torch.nn as nn
class PositionalEncoding(nn.Module):
    def __init__(self, embed, pad_size, device):
        super().__init__()
        self.device = device
        self.pe = torch.randn(pad_size, embed)
    def forward(self, x):
        return x + {read}
model = PositionalEncoding(16, 32, "cuda").cuda()
"""


def test_a_plain_tensor_moved_through_a_wrapper_where_it_is_read_is_fine() -> None:
    read = "nn.Parameter(self.pe, requires_grad=False).to(self.device)"
    assert lines(ENCODING.format(read=read), "GPD105") == []
    assert lines(ENCODING.format(read="self.pe"), "GPD105") == [7]


# a course notebook: a later cell builds a new model and a new example, both on the CPU
NOTEBOOK = """\
import torch
import torch.nn as nn
device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Linear(4, 2).to(device)
print(model(torch.randn(3, 4, device=device)))
model = nn.Linear(4, 1)
x = {example}
loss = model(x).sum()
"""


def test_a_model_recreated_for_a_new_host_example_runs_on_the_cpu() -> None:
    source = NOTEBOOK.format(example="torch.randn(8, 4)")
    assert lines(source, "GPD102") == []
    assert lines(source, "GPD101") == []
    # fed the script's device data, the re-created model is still the reloaded-never-moved bug
    device_data = NOTEBOOK.format(example="torch.randn(8, 4, device=device)")
    assert lines(device_data, "GPD102") == [6]


# a deepfake-detection training script: each rank pins its GPU, or one process picks its GPUs
PICK = """\
import argparse
import os
import torch
parser = argparse.ArgumentParser()
parser.add_argument("--distributed", action="store_true")
parser.add_argument("--gpu", default="0")
args = parser.parse_args()
if args.distributed:
    torch.cuda.set_device(0)
{other}
model = torch.nn.Linear(4, 4).cuda()
"""


def test_cuda_initialised_in_one_arm_is_not_initialised_in_the_other() -> None:
    other = 'else:\n    os.environ["CUDA_VISIBLE_DEVICES"] = args.gpu'
    assert lines(PICK.format(other=other), "GPD403") == []
    # set after the `if`, the variable comes too late on the distributed path
    after = 'os.environ["CUDA_VISIBLE_DEVICES"] = args.gpu'
    assert lines(PICK.format(other=after), "GPD403") == [10]


# a char-RNN whose init_hidden returns a tuple for LSTMs and one tensor for GRUs; the training
# script moves what it returned
CHAR_RNN = """\
import torch
import torch.nn as nn
class RNN(nn.Module):
    def __init__(self, kind="gru"):
        super().__init__()
        self.kind = kind
        self.rnn = nn.GRU(8, 16)
    def forward(self, x, hidden):
        return self.rnn(x, hidden)
    def init_hidden(self, batch_size):
        if self.kind == "lstm":
            return (torch.zeros(1, batch_size, 16), torch.zeros(1, batch_size, 16))
        return torch.zeros(1, batch_size, 16)
decoder = RNN()
use_cuda = torch.cuda.is_available()
if use_cuda:
    decoder.cuda()
def train(inp):
    hidden = decoder.init_hidden(4)
    if use_cuda:
        {move}
        inp = inp.cuda()
    return decoder(inp, hidden)
train(torch.randn(5, 4, 8))
"""


def test_a_move_of_what_a_helper_returned_moves_every_return_of_it() -> None:
    assert lines(CHAR_RNN.format(move="hidden = hidden.cuda()"), "GPD106") == []
    assert lines(CHAR_RNN.format(move="pass"), "GPD106") == [12, 12, 13]


# the corpus's char-RNN helper: `hidden` is the hidden size, a number the factory takes as a size
ZERO_STATE = """\
import torch
import torch.nn as nn
def zero_state(layers, batch, hidden):
    return torch.zeros(layers, batch, hidden)
class CharRNN(nn.Module):
    def __init__(self, hidden=256):
        super().__init__()
        self.hidden = hidden
        self.gru = nn.GRU(64, hidden, 2)
    def forward(self, x):
        return self.gru(x, zero_state(2, x.size(1), self.hidden))[0]
model = CharRNN().cuda()
"""


def test_a_size_argument_is_never_the_device_a_fix_reads() -> None:
    result = lint_source(ZERO_STATE, "x.py", LintConfig(select=("GPD106",)))
    assert [f.line for f in result.findings] == [4]
    assert "hidden.device" not in result.findings[0].message
    assert result.findings[0].fix is None  # nothing in the helper holds the device
