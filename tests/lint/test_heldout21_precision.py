"""Precision regressions from the twenty-first held-out set (public repositories linted before any
tuning, every finding judged): minimal programs of our own for each cause of a wrong finding,
beside the variant that must still be reported."""

from __future__ import annotations

import json

from lint_lines import lines

from gpudoc.lint.cells import check_notebook
from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_source

# a face detector's training script: both arms of `if use_cuda:` put the network on CUDA
GPU_ONLY = """\
import torch
import torch.nn as nn
ngpu = 2
net = nn.Linear(8, 2)
net.load_state_dict(torch.load("weights.pth"))
if {test}:
    net = nn.DataParallel(net).cuda()
else:
    {other}
x = torch.randn(4, 8).cuda()
"""


def test_a_script_whose_every_arm_moves_to_cuda_offers_no_cpu_path() -> None:
    switch = "args.use_cuda"
    both = GPU_ONLY.format(test=switch, other="net = net.cuda()")
    assert lines(both, "GPD203") == []
    assert lines(both, "GPD201") == []
    one = GPU_ONLY.format(test=switch, other="pass")
    assert lines(one, "GPD203") == [10]
    assert lines(one, "GPD201") == [5]
    # a test for several GPUs (the face detector's `if ngpu > 1:`) leaves one GPU or several,
    # never the CPU (set 72's Medical-Transformer)
    several = GPU_ONLY.format(test="ngpu > 1", other="pass")
    assert lines(several, "GPD203") == []
    assert lines(several, "GPD201") == []


# a highway network keeps its layers in a plain list and registers each layer's parameters
HIGHWAY = """\
import torch
import torch.nn as nn
class Highway(nn.Module):
    def __init__(self, size, num_layers):
        super().__init__()
        self.gate = [nn.Linear(size, size) for _ in range(num_layers)]
        for i, layer in enumerate(self.gate):
            for j, p in enumerate(layer.parameters()):
                {register}
    def forward(self, x):
        for layer in self.gate:
            x = torch.sigmoid(layer(x)) * x
        return x
model = Highway(8, 2).to("cuda")
"""


def test_a_list_whose_items_parameters_are_registered_is_moved_with_the_module() -> None:
    registered = 'self.register_parameter("gate_{}_{}".format(i, j), p)'
    assert lines(HIGHWAY.format(register=registered), "GPD104") == []
    assert lines(HIGHWAY.format(register="print(p.shape)"), "GPD104") == [6]


# a detection loss written as a module that stores only numbers and a list of floats
LOSS = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
class BoxLoss(nn.Module):
    def __init__(self, ratio):
        super().__init__()
        self.ratio = ratio
        self.variance = {variance}
    def forward(self, pred, target):
        return F.smooth_l1_loss(pred, target) * self.ratio * self.variance[0]
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Linear(4, 4).to(device)
criterion = BoxLoss(0.5)
loss = criterion(net(torch.randn(2, 4, device=device)), torch.zeros(2, 4, device=device))
"""


def test_a_loss_module_that_keeps_a_list_of_numbers_holds_nothing_to_move() -> None:
    assert lines(LOSS.format(variance="[0.1, 0.2]"), "GPD102") == []
    assert lines(LOSS.format(variance="nn.Parameter(torch.ones(2))"), "GPD102") == [13]


# a speech enhancer's own `generate` runs the network and hands back a NumPy array
ENHANCER = """\
import torch
import torch.nn as nn
from scipy.io import wavfile
class Enhancer(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Conv1d(1, 1, 3, padding=1)
    def generate(self, wav):
        out = self.net(wav)
        return {returned}
model = Enhancer().cuda()
wav = torch.randn(1, 1, 16000).cuda()
g_wav = model.generate(wav)
wavfile.write("out.wav", 16000, g_wav)
"""


def test_a_module_method_that_returns_a_host_copy_hands_back_no_device_tensor() -> None:
    assert lines(ENHANCER.format(returned="out[0, 0].detach().cpu().numpy()"), "GPD202") == []
    assert lines(ENHANCER.format(returned="out[0, 0].detach()"), "GPD202") == [14]


# a sinc convolution builds its window on the host and moves it where the input is
WINDOW = """\
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
class Windowed(nn.Module):
    def __init__(self, n_filt, dim):
        super().__init__()
        self.n_filt, self.dim = n_filt, dim
        self.scale = nn.Parameter(torch.rand(n_filt))
    def forward(self, x):
        n = torch.linspace(0, self.dim, steps=self.dim)
        window = (0.54 - 0.46 * torch.cos(2 * math.pi * n / self.dim)).float()
        {move}
        filters = self.scale[:, None] * window
        return F.conv1d(x, filters.view(self.n_filt, 1, self.dim))
model = Windowed(4, 16).cuda()
"""


def test_a_derived_tensor_the_function_moves_itself_is_placed_by_its_author() -> None:
    moved = 'if x.is_cuda: window = window.to("cuda")'
    assert lines(WINDOW.format(move=moved), "GPD106") == []
    assert lines(WINDOW.format(move="pass"), "GPD106") == [11]


# an RL library's unit test: a stub network whose forward makes a host tensor, on the CPU
STUB = """\
import numpy as np
import torch
from torch import nn
class StubNet(nn.Module):
    def __init__(self, actions):
        super().__init__()
        self.actions = actions
    def forward(self, x):
        return torch.eye(x.size()[0], self.actions)
def pick(model, states, device="cpu"):
    q = model(torch.as_tensor(states).to(device))
    return q.data.cpu().numpy().argmax(axis=1)
def test_pick():
    assert list(pick(StubNet(3){placed}, np.zeros((2, 5)))) == [0, 1]
"""


def _reported(source: str, path: str) -> list[int]:
    result = lint_source(source, path, LintConfig(select=("GPD106",)))
    return [finding.line for finding in result.findings]


def test_a_cpu_unit_tests_stub_network_is_left_alone() -> None:
    assert _reported(STUB.format(placed=""), "tests/test_agent.py") == []
    assert _reported(STUB.format(placed=""), "agent_test.py") == []
    assert _reported(STUB.format(placed=""), "agent.py") == [9]
    # a test that runs on a GPU is judged like any other code
    assert _reported(STUB.format(placed='.to("cuda")'), "tests/test_agent.py") == [9]


# a Colab notebook changes directory with automagic `cd`, no `%`
def _notebook(*cells: str) -> str:
    code = [{"cell_type": "code", "metadata": {}, "source": c, "outputs": []} for c in cells]
    metadata = {"language_info": {"name": "python"}}
    return json.dumps({"cells": code, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5})


def _check(text: str) -> tuple[list[tuple[int, str]], str | None]:
    def lint(source: str) -> list:  # type: ignore[type-arg]
        return list(lint_source(source, "nb.py", LintConfig()).findings)

    findings, error = check_notebook(text, "nb.ipynb", lint)
    return [(f.line, f.code) for f in findings], error


def test_ipython_automagic_lines_are_magics_not_syntax_errors() -> None:
    model = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\nmodel(torch.randn(1, 2))"
    for magic in ("cd drive/My\\ Drive", "pip install timm", "cd ..", "run train.py --epochs 3"):
        findings, error = _check(_notebook(magic, model))
        assert error is None, magic
        assert [code for _, code in findings] == ["GPD101"], magic
    # a line that is Python stays Python, and a real syntax error is still reported
    assert _check(_notebook("ls = [1, 2]\nls(", model))[1] is not None
    assert _check(_notebook("cd = 3\nprint(cd)", model))[1] is None
    # a literal opened on a line that starts with a magic's name is Python too
    for opened in ("config = {\n    'lr': 0.1,\n}", "def f():\n    time  = [\n        1]"):
        assert _check(_notebook(opened, model)) == ([(3, "GPD101")], None), opened


# the real files behind two of the causes above: registration through a helper method, and a
# window length kept in a local named like a setting
REGISTERED_BY_HELPER = """\
import torch
import torch.nn as nn
from torch.nn import Parameter
class Highway(nn.Module):
    def __init__(self, size, num_layers):
        super().__init__()
        self.linear = [nn.Linear(size, size) for _ in range(num_layers)]
        for i, module in enumerate(self.linear):
            self._add_to_parameters(module.parameters(), "linear_{{}}".format(i))
        self.kernels = [Parameter(torch.randn(size, size)) for _ in range(num_layers)]
        self._add_to_parameters(self.kernels, "kernel")
    def _add_to_parameters(self, parameters, name):
        for i, parameter in enumerate(parameters):
            {register}
    def forward(self, x):
        return self.linear[0](x) @ self.kernels[0]
model = Highway(8, 2).to("cuda")
"""


def test_lists_registered_through_a_helper_method_are_moved_with_the_module() -> None:
    registered = 'self.register_parameter(name="{}-{}".format(name, i), param=parameter)'
    assert lines(REGISTERED_BY_HELPER.format(register=registered), "GPD104") == []
    assert lines(REGISTERED_BY_HELPER.format(register="print(name)"), "GPD104") == [7, 10]


SINC = """\
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
class SincConv(nn.Module):
    def __init__(self, filt_dim):
        super().__init__()
        self.Filt_dim = filt_dim
        self.band = nn.Parameter(torch.rand(4))
    def forward(self, x):
        cuda = x.is_cuda
        N = self.Filt_dim
        n = torch.linspace(0, N, steps=N)
        window = (0.54 - 0.46 * torch.cos(2 * math.pi * n / N)).float()
        {move}
        filters = self.band[:, None] * window
        return F.conv1d(x, filters.view(4, 1, N))
model = SincConv(16).cuda()
"""


def test_a_length_kept_in_a_local_named_like_a_setting_is_a_number() -> None:
    assert lines(SINC.format(move="if cuda: window = window.to('cuda')"), "GPD106") == []
    assert lines(SINC.format(move="pass"), "GPD106") == [13]
