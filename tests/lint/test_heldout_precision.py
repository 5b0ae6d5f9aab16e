"""Precision regressions from a held-out triage of public repositories (seq2seq tutorials,
video-classification training loops, textbook notebooks), reduced and rewritten here: correct
code each rule must leave alone, next to the bug it must still report."""

from __future__ import annotations

from pathlib import Path

import pytest
from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths

RNN_HEAD = """\
import torch
import torch.nn as nn
from torch.autograd import Variable
USE_CUDA = torch.cuda.is_available()
class Encoder(nn.Module):
    def __init__(self, n, hidden_size):
        super().__init__()
        self.use_cuda = USE_CUDA
        self.hidden_size = hidden_size
        self.gru = nn.GRU(n, hidden_size)
"""
RNN_TAIL = """\
encoder = Encoder(10, 8)
if USE_CUDA:
    encoder.cuda()
"""

MOVED_LATER = {
    "one-line if": """\
    def init_hidden(self):
        hidden = Variable(torch.zeros(1, 1, self.hidden_size))
        if USE_CUDA: hidden = hidden.cuda()
        return hidden
""",
    "block if on an attribute flag": """\
    def init_hidden(self, batch_size):
        h = torch.zeros(1, batch_size, self.hidden_size)
        if self.use_cuda:
            h = h.cuda()
        return h
""",
    "availability test": """\
    def forward(self, x):
        h = torch.zeros(1, x.size(1), self.hidden_size)
        if torch.cuda.is_available():
            h = h.cuda()
        return self.gru(x, h)
""",
    "conditional return": """\
    def init_hidden(self):
        h = torch.zeros(1, 1, self.hidden_size)
        return h.cuda() if USE_CUDA else h
""",
    "to(device) later in a loop": """\
    def forward(self, x):
        energies = Variable(torch.zeros(x.size(0), x.size(1)))
        if USE_CUDA:
            energies = energies.to(x.device)
        for i in range(x.size(0)):
            energies[i] = x[i].sum()
        return energies
""",
}


@pytest.mark.parametrize("body", MOVED_LATER.values(), ids=list(MOVED_LATER))
def test_factory_moved_later_in_the_same_function_is_placed(body: str) -> None:
    assert lines(RNN_HEAD + body + RNN_TAIL, "GPD106") == []


def test_factory_never_moved_stays_a_finding() -> None:
    body = """\
    def forward(self, x):
        h = torch.zeros(1, x.size(1), self.hidden_size)
        other = torch.ones(3)
        if USE_CUDA:
            other = other.cuda()
        return self.gru(x, h)
"""
    assert lines(RNN_HEAD + body + RNN_TAIL, "GPD106") == [12]


def test_a_move_of_another_binding_of_the_name_does_not_count() -> None:
    body = """\
    def forward(self, x):
        h = torch.zeros(1, x.size(1), self.hidden_size)
        out, _ = self.gru(x, h)
        h = torch.ones(2)
        h = h.cuda()
        return out + h
"""
    assert lines(RNN_HEAD + body + RNN_TAIL, "GPD106") == [12]


# training.py of a video-classification project: main.py (elsewhere) wraps the model with a
# helper that returns nn.DataParallel(model).cuda(), so only the targets are moved here.
TRAIN_EPOCH = """\
import torch
def train_epoch(epoch, data_loader, model, criterion, optimizer, device):
    model.train()
    for i, (inputs, targets) in enumerate(data_loader):
        targets = targets.to(device, non_blocking=True)
{extra}        outputs = model(inputs)
        loss = criterion(outputs, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def test_targets_moved_inputs_left_for_a_wrapper_the_callers_build() -> None:
    assert lines(TRAIN_EPOCH.format(extra=""), "GPD101") == []


def test_a_batch_left_whole_on_the_host_stays_a_finding() -> None:
    source = TRAIN_EPOCH.format(extra="").replace(
        "        targets = targets.to(device, non_blocking=True)\n", ""
    )
    assert lines(source, "GPD101") == [5]


def test_a_model_the_function_moves_itself_is_no_wrapper() -> None:
    source = TRAIN_EPOCH.format(extra="").replace(
        "    model.train()\n", "    model.to(device)\n    model.train()\n"
    )
    assert lines(source, "GPD101") == [7]


def test_a_caller_in_the_file_decides_what_the_model_is() -> None:
    caller = """\
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = torch.nn.Linear(4, 2).to(device)
loader = torch.utils.data.DataLoader(dataset, batch_size=8)
train_epoch(0, loader, net, torch.nn.CrossEntropyLoss(), optimizer, device)
"""
    assert lines(TRAIN_EPOCH.format(extra="") + caller, "GPD101") == [6]
    wrapped = caller.replace(
        "torch.nn.Linear(4, 2).to(device)",
        "torch.nn.DataParallel(torch.nn.Linear(4, 2)).to(device)",
    )
    assert lines(TRAIN_EPOCH.format(extra="") + wrapped, "GPD101") == []


HELPERS = """\
import torch.nn as nn
def make_data_parallel(model, is_distributed, device):
    if is_distributed:
        model.to(device)
        model = nn.parallel.DistributedDataParallel(model, device_ids=[device])
    elif device.type == "cuda":
        model = nn.DataParallel(model, device_ids=None).cuda()
    return model
"""
MAIN = """\
import torch
from helpers import make_data_parallel
from training import train_epoch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = make_data_parallel(torch.nn.Linear(4, 2), False, device)
loader = torch.utils.data.DataLoader(dataset, batch_size=8)
train_epoch(0, loader, model, torch.nn.CrossEntropyLoss(), optimizer, device)
for inputs, targets in loader:
    outputs = model(inputs)
"""


def test_a_wrapper_returned_by_another_files_helper_takes_host_inputs(tmp_path: Path) -> None:
    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "training.py").write_text(TRAIN_EPOCH.format(extra=""))
    (tmp_path / "main.py").write_text(MAIN)
    result = lint_paths([str(tmp_path)], LintConfig(select=("GPD101",)), jobs=1, use_cache=False)
    assert [(Path(f.path).name, f.line) for f in result.findings] == []
    plain = HELPERS.replace(
        "nn.parallel.DistributedDataParallel(model, device_ids=[device])", "model"
    )
    plain = plain.replace("nn.DataParallel(model, device_ids=None)", "model")
    (tmp_path / "helpers.py").write_text(plain)
    result = lint_paths([str(tmp_path)], LintConfig(select=("GPD101",)), jobs=1, use_cache=False)
    # a plain model on the device: main's loop, and train_epoch reached from main's call
    found = sorted((Path(f.path).name, f.line) for f in result.findings)
    assert found == [("main.py", 9), ("training.py", 6)]


# a textbook notebook: a loss written as an nn.Module subclass, used on device tensors
LOSS_CLASS = """\
import torch
import torch.nn as nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
class SigmoidBCELoss(nn.Module):
    \"\"\"Masked binary cross-entropy.\"\"\"
    def __init__(self, reduction="mean"):
        super().__init__()
{store}
    def forward(self, inputs, targets, mask=None):
        res = nn.functional.binary_cross_entropy_with_logits(inputs, targets, weight=mask)
        return res.mean(dim=1)
loss = SigmoidBCELoss()
pred = torch.randn(2, 4, device=device)
label = torch.ones(2, 4, device=device)
print(loss(pred, label))
"""


@pytest.mark.parametrize(
    "store", ["        pass", "        self.reduction = reduction", "        self.eps = 1e-6"]
)
def test_a_module_class_that_stores_nothing_needs_no_move(store: str) -> None:
    assert lines(LOSS_CLASS.format(store=store), "GPD102") == []


@pytest.mark.parametrize(
    "store",
    [
        "        self.fc = nn.Linear(4, 4)",
        "        self.register_buffer('w', torch.ones(4))",
        "        self.reduction = reduction\n        self.weight = nn.Parameter(torch.ones(4))",
    ],
)
def test_a_module_class_with_parameters_stays_a_finding(store: str) -> None:
    assert lines(LOSS_CLASS.format(store=store), "GPD102") == [12 + store.count("\n")]


# the same notebooks train through a helper package found by sys.path.append(".."), which
# the linter cannot read: given the net and the device, it moves the net itself
HANDED_OFF = """\
import sys
import torch
import torch.nn as nn
sys.path.append("..")
import d2lzh_pytorch as d2l
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
d2l.{call}
x = torch.randn(3, 4, device=device)
print(net(x))
"""


def test_a_module_handed_with_the_device_to_an_unreadable_function_may_be_moved() -> None:
    source = HANDED_OFF.format(call="train(train_iter, test_iter, net, loss, opt, device, 5)")
    assert lines(source, "GPD102") == []


def test_a_module_handed_without_a_device_stays_a_finding() -> None:
    assert lines(HANDED_OFF.format(call="describe(net)"), "GPD102") == [7]


# a pre-0.4 tutorial: `loss.data[0]` was the loss as a Python number; on today's PyTorch it is
# an IndexError (a 0-dim tensor has no element 0), never a list of device tensors
LOSS_HISTORY = """\
import torch
import torch.nn as nn
import matplotlib.pyplot as plt
cnn = nn.Linear(4, 2).cuda()
loss_func = nn.CrossEntropyLoss()
losses_his = []
for step, (x, y) in enumerate(loader):
    output = cnn(x.cuda())
    loss = loss_func(output, y.cuda())
    losses_his.append({item})
plt.plot(losses_his)
"""


@pytest.mark.parametrize("item", ["loss.data[0]", "loss[0]"])
def test_an_indexed_loss_is_not_a_device_tensor_in_a_list(item: str) -> None:
    assert lines(LOSS_HISTORY.format(item=item), "GPD202") == []


@pytest.mark.parametrize("item", ["loss.data", "output[0]", "loss"])
def test_a_device_tensor_in_a_list_stays_a_finding(item: str) -> None:
    assert lines(LOSS_HISTORY.format(item=item), "GPD202") == [11]


def test_an_unreduced_loss_indexed_is_still_a_device_tensor() -> None:
    source = LOSS_HISTORY.format(item="loss[0]").replace(
        "nn.CrossEntropyLoss()", "nn.CrossEntropyLoss(reduction='none')"
    )
    assert lines(source, "GPD202") == [11]


def test_a_stub_module_class_stands_for_a_real_model() -> None:
    source = LOSS_CLASS.format(store="        pass").replace(
        "    def forward(self, inputs, targets, mask=None):", "    def loss(self, inputs, targets):"
    )
    assert lines(source, "GPD102") == [12]


# a detection trainer: the head is built in another file and handed to __init__; its forward
# moves the index tensor itself (`totensor(roi_indices)` calls `.cuda()`)
TRAINER = """\
import torch
import torch.nn as nn
class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
    def forward(self, features, rois, index):
        return self.fc(features) + index
class Trainer(nn.Module):
    def __init__(self, faster_rcnn):
        super().__init__()
        self.faster_rcnn = faster_rcnn
        self.local_head = Head()
    def forward(self, imgs, rois):
        features = self.faster_rcnn.extractor(imgs)
        sample_roi_index = torch.zeros(len(rois))
        {use}
        return out
trainer = Trainer(detector).cuda()
"""


def test_a_factory_handed_only_to_an_unknown_objects_method_may_be_placed_there() -> None:
    use = "out = self.faster_rcnn.head(features, rois, sample_roi_index)"
    assert lines(TRAINER.format(use=use), "GPD106") == []


@pytest.mark.parametrize(
    "use",
    [
        "out = self.local_head(features, rois, sample_roi_index)",
        "out = self.faster_rcnn.head(features, rois, sample_roi_index) + sample_roi_index",
        "out = torch.cat([features, sample_roi_index[:, None]], dim=1)",
    ],
)
def test_a_factory_used_where_the_linter_sees_stays_a_finding(use: str) -> None:
    assert lines(TRAINER.format(use=use), "GPD106") == [16]


def _lint_project(root: Path, files: dict[str, str], code: str) -> list[tuple[str, int]]:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    result = lint_paths([str(root)], LintConfig(select=(code,)), jobs=1, use_cache=False)
    return [(Path(f.path).relative_to(root).as_posix(), f.line) for f in result.findings]


PACKAGE = {
    "models/__init__.py": "from .base import *\nfrom .nets import *\n",
    "models/base.py": "import torch.nn as nn\nclass BaseNet(nn.Module):\n    pass\n",
    "models/nets.py": """\
import torch
import torch.nn as nn
from models import BaseNet
def make_head(n):
    return nn.Linear(n, 2)
class Net(BaseNet):
    def __init__(self, n):
        super().__init__()
        self.n = n
        self.head = make_head(n)
    def sample(self, count, current_device):
        z = torch.randn(count, self.n).to(current_device)
        return self.head(z)
""",
}


def test_a_base_class_reexported_by_a_package_init_is_followed(tmp_path: Path) -> None:
    """``from models import BaseNet`` reads models/__init__.py's ``from .base import *``: the
    class is an nn.Module and its submodules move with it."""
    assert _lint_project(tmp_path, PACKAGE, "GPD102") == []


def test_a_base_class_the_package_does_not_export_stays_unknown(tmp_path: Path) -> None:
    files = {**PACKAGE, "models/__init__.py": "from .nets import *\n"}
    assert _lint_project(tmp_path, files, "GPD102") == [("models/nets.py", 10)]


UNSEEN_BASE = """\
import torch
import torch.nn as nn
from somewhere_else import {base}
class VAE({base}):
    def __init__(self, latent_dim):
        super().__init__()
        self.latent_dim = latent_dim
        self.decoder_input = nn.Linear(latent_dim, 64)
    def decode(self, z):
        return self.decoder_input(z)
    def sample(self, num_samples, current_device):
        z = torch.randn(num_samples, self.latent_dim)
        z = z.to(current_device)
        return self.decode(z)
"""


def test_a_class_that_builds_layers_on_self_is_a_module_whatever_its_base() -> None:
    assert lines(UNSEEN_BASE.format(base="BaseVAE"), "GPD102") == []


def test_a_plain_class_holding_a_layer_it_never_moves_stays_a_finding() -> None:
    source = UNSEEN_BASE.replace("from somewhere_else import {base}\n", "").format(base="object")
    assert lines(source, "GPD102") == [7]


# 2017-era RNN tutorials: hidden states go through a helper that moves them when CUDA is there
HELPER_HIDDEN = """\
import torch
from torch import nn
from torch.autograd import Variable
def create_variable(tensor):
    if torch.cuda.is_available():
        return Variable(tensor.cuda())
    else:
        return Variable(tensor)
def plain_variable(tensor):
    return Variable(tensor)
class RNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(8, 16)
    def forward(self, x):
        return self.gru(x, self._init_hidden(x.size(1)))[0]
    def _init_hidden(self, batch_size):
{body}
model = RNN()
if torch.cuda.is_available():
    model.cuda()
"""


@pytest.mark.parametrize(
    "body",
    [
        "        hidden = torch.zeros(1, batch_size, 16)\n        return create_variable(hidden)",
        "        return create_variable(torch.zeros(1, batch_size, 16))",
    ],
)
def test_a_factory_returned_through_a_helper_that_moves_it_is_placed(body: str) -> None:
    assert lines(HELPER_HIDDEN.format(body=body), "GPD106") == []


def test_a_factory_returned_through_a_helper_that_does_not_move_stays_a_finding() -> None:
    body = "        return plain_variable(torch.zeros(1, batch_size, 16))"
    assert lines(HELPER_HIDDEN.format(body=body), "GPD106") == [18]


def test_a_factory_on_the_cpu_arm_of_an_availability_test_needs_no_device() -> None:
    body = """\
        if torch.cuda.is_available():
            hidden = torch.zeros(1, batch_size, 16){move}
        else:
            hidden = torch.zeros(1, batch_size, 16)
        return hidden"""
    assert lines(HELPER_HIDDEN.format(body=body.format(move=".cuda()")), "GPD106") == []
    assert lines(HELPER_HIDDEN.format(body=body.format(move="")), "GPD106") == [19]


# a textbook notebook: the data-loading chapter's loaders are built and drawn from long before
# a later cell makes CUDA the default tensor type
DEFAULT_LATER = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
dataset = TensorDataset(torch.randn(10, 3))
{first}
for (batch,) in loader:
    print(batch.shape)
torch.set_default_tensor_type("torch.cuda.FloatTensor")
{second}
"""
SHUFFLED = "loader = DataLoader(dataset, batch_size=2, shuffle=True)"


def test_a_loader_built_before_cuda_becomes_the_default_is_not_reported() -> None:
    assert lines(DEFAULT_LATER.format(first=SHUFFLED, second=""), "GPD502") == []


def test_a_loader_built_after_the_switch_stays_a_finding() -> None:
    source = DEFAULT_LATER.format(first=SHUFFLED, second=SHUFFLED)
    assert lines(source, "GPD502") == [8]


def test_a_loader_built_in_a_function_called_after_the_switch_stays_a_finding() -> None:
    source = """\
import torch
from torch.utils.data import DataLoader
def make(dataset):
    return DataLoader(dataset, batch_size=2, shuffle=True)
torch.set_default_device("cuda")
loader = make(dataset)
"""
    assert lines(source, "GPD502") == [4]


@pytest.mark.parametrize(
    "draw", ["for (batch,) in loader:\n    pass", "batch = next(iter(loader))"]
)
def test_a_loader_built_before_the_switch_and_drawn_after_it_stays_a_finding(draw: str) -> None:
    source = DEFAULT_LATER.format(first=SHUFFLED, second=draw)
    assert lines(source, "GPD502") == [4]


# GAN collections: fixed samples made in __init__ and moved with one tuple assignment
TUPLE_MOVE = """\
import torch
from torch import nn
class Trainer:
    def __init__(self, gpu_mode):
        self.gpu_mode = gpu_mode
        self.G = nn.Linear(4, 4)
        if self.gpu_mode:
            self.G.cuda()
        self.sample_a = torch.zeros(8, 4)
        self.sample_b = torch.rand(1, 4).expand(8, 4)
        if self.gpu_mode:
            self.sample_a, self.sample_b = {values}
    def visualize(self):
        return self.G(self.sample_a), self.G(self.sample_b)
"""


def test_attributes_moved_by_one_tuple_assignment_are_moved() -> None:
    values = "self.sample_a.cuda(), self.sample_b.cuda()"
    assert lines(TUPLE_MOVE.format(values=values), "GPD101") == []


def test_an_attribute_the_tuple_assignment_leaves_behind_stays_a_finding() -> None:
    values = "self.sample_a.cuda(), self.sample_b"
    assert lines(TUPLE_MOVE.format(values=values), "GPD101") == [14]


# vision transformers: random patch picks made on the host index device tokens
INDEXING = """\
import torch
from torch import nn
class Sampler(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
    def forward(self, tokens):
        device = tokens.device
{body}
model = Sampler().cuda()
"""


@pytest.mark.parametrize(
    "body",
    [
        "        indices = torch.randn(tokens.shape[:2]).argsort(dim=-1)[..., :4]\n"
        "        batch = torch.arange(tokens.shape[0], device=device)[:, None]\n"
        "        return self.proj(tokens[batch, indices])",
        "        picks = torch.randint(0, 4, tokens.shape[:2], device=device)\n"
        "        return self.proj(tokens[torch.arange(tokens.shape[0]).unsqueeze(-1), picks])",
    ],
)
def test_a_host_factory_used_only_as_an_index_is_not_reported(body: str) -> None:
    assert lines(INDEXING.format(body=body), "GPD106") == []


def test_a_host_factory_also_used_in_arithmetic_stays_a_finding() -> None:
    body = (
        "        indices = torch.randn(tokens.shape[:2]).argsort(dim=-1)[..., :4]\n"
        "        return self.proj(tokens[:, indices]) + indices.float()[..., :1]"
    )
    assert lines(INDEXING.format(body=body), "GPD106") == [9]
    # reduced to 0-dim first, it combines with the device output like a Python number
    body = body.replace("indices.float()[..., :1]", "indices.float().mean()")
    assert lines(INDEXING.format(body=body), "GPD106") == []


LOAD_WRAPPER = """\
import io
import torch
import torch.distributed as dist
def load_state_dict(data, **kwargs):
    return torch.load(io.BytesIO(data){extra})
def setup():
    dist.init_process_group(backend="nccl")
    torch.cuda.set_device(dist.get_rank())
"""


def test_a_load_wrapper_forwarding_its_keywords_leaves_map_location_to_callers() -> None:
    assert lines(LOAD_WRAPPER.format(extra=", **kwargs"), "GPD201") == []
    assert lines(LOAD_WRAPPER.format(extra=""), "GPD201") == [5]


# unittest files of a model zoo: torchsummary is told to run on the CPU, nothing else is
SUMMARY_CPU = """\
import torch
import unittest
from models import BetaVAE
from torchsummary import summary
class TestVAE(unittest.TestCase):
    def setUp(self):
        self.model = {build}
    def test_summary(self):
        print(summary(self.model, (3, 64, 64), device="cpu"))
    def test_sample(self):
        self.model.cuda()
        print(self.model.sample(4, 0).shape)
"""


def test_a_libraries_cpu_option_is_no_cpu_path_of_a_file_that_builds_on_cuda() -> None:
    source = SUMMARY_CPU.format(build="BetaVAE(3, 10).cuda()")
    assert lines(source, "GPD203") == []


def test_a_model_built_on_the_host_and_moved_in_one_test_stays_a_finding() -> None:
    assert lines(SUMMARY_CPU.format(build="BetaVAE(3, 10)"), "GPD203") == [11]


def test_a_file_that_checks_availability_keeps_its_cpu_path() -> None:
    source = SUMMARY_CPU.format(build="BetaVAE(3, 10).cuda()").replace(
        '        print(summary(self.model, (3, 64, 64), device="cpu"))',
        "        self.use_cuda = torch.cuda.is_available()",  # a check, not a print of one
    )
    assert lines(source, "GPD203") == [7, 11]


# graph-attention and pyramid-pooling models: a plain list of layers registered afterwards
REGISTERED_LIST = """\
import torch
from torch import nn
class Model(nn.Module):
    def __init__(self, nheads, sizes):
        super().__init__()
        self.attentions = [nn.Linear(8, 8) for _ in range(nheads)]
        {register_heads}
        self.paths = []
        for s in sizes:
            self.paths.append(nn.Conv2d(8, 8, 1))
        {wrap_paths}
    def forward(self, x):
        return torch.cat([att(x) for att in self.attentions], dim=1)
model = Model(2, [1, 2]).cuda()
"""


def test_a_plain_list_registered_or_wrapped_in_init_is_not_gpd104() -> None:
    registered = REGISTERED_LIST.format(
        register_heads="for i, a in enumerate(self.attentions): self.add_module(f'att{i}', a)",
        wrap_paths="self.path_module_list = nn.ModuleList(self.paths)",
    )
    assert lines(registered, "GPD104") == []
    plain = REGISTERED_LIST.format(register_heads="pass", wrap_paths="pass")
    assert lines(plain, "GPD104") == [6, 8]


# a GPU-only research script (StyleGAN2-style metrics): results brought back with .to("cpu")
GPU_ONLY = """\
import torch
from torch import distributed as dist
def get_world_size():
    if not dist.is_available() or not dist.is_initialized():
        return 1
    return dist.get_world_size()
def collect(model, n, device):
    feats = []
    for _ in range(n):
        feats.append(model(torch.randn(4, 8, device=device)).to("cpu"))
    return torch.cat(feats).to("cpu").numpy()
if __name__ == "__main__":
    device = "cuda"
    model = torch.nn.Linear(8, 2).to(device)
    model.load_state_dict(torch.load("g.pt"))
    {choice}
    print(collect(model, 3, device), get_world_size())
"""


def test_bringing_results_back_to_the_cpu_is_not_a_cpu_path() -> None:
    source = GPU_ONLY.format(choice="pass")
    assert lines(source, "GPD203") == [] and lines(source, "GPD201") == []
    # choosing the CPU for the model is one: the script runs there too
    chosen = GPU_ONLY.format(choice='model = model.to("cpu")')
    assert lines(chosen, "GPD203") == [13] and lines(chosen, "GPD201") == [15]


# options kept in a dict (prototypical-networks' opt['data.cuda'])
OPTION_DICT = """\
import torch
def main(opt):
    model = torch.nn.Linear(4, 2)
    x = torch.randn(3, 4)
    if {test}:
        model.cuda()
        x = x.cuda()
    return model(x)
"""


def test_a_device_option_read_from_a_dict_guards_its_moves() -> None:
    assert lines(OPTION_DICT.format(test='opt["data.cuda"]'), "GPD203") == []
    assert lines(OPTION_DICT.format(test='opt["data.cuda"]'), "GPD101") == []
