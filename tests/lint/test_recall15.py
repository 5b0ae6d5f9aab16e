"""Recall regressions from the fifteenth recall set (real bug reports), reduced and rewritten
here: the bug each rule must report, next to the correct code it must leave alone."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths, lint_source

# report 03 (and set 14's 16): a helper returns a torch.device, which is then compared with text
HELPER_DEVICE = """\
import torch
def get_torch_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    return {cpu}
class Pipeline:
    def __init__(self):
        device = get_torch_device()
        if device != "cpu":
            print("half precision")
"""


def test_a_device_returned_by_a_helper_is_a_torch_device() -> None:
    assert lines(HELPER_DEVICE.format(cpu='torch.device("cpu")'), "GPD501") == [9]
    # a helper that may return a string compares right with one
    assert lines(HELPER_DEVICE.format(cpu='"cpu"'), "GPD501") == []


# report 11: the subclass's `_forward`, which the base class's forward calls
HOOK = """\
import torch
from torch import nn
class LossFunction(nn.Module):
    def forward(self, prediction, target):
        return self._forward(prediction, target).mean()
class CrossEntropy(LossFunction):
    def __init__(self, options):
        super().__init__()
        self._options = options
    def _forward(self, prediction, target):
        index = torch.tensor([self._options.index(v) for v in target]{device})
        return nn.functional.cross_entropy(prediction, index)
"""


def test_a_forward_hook_of_a_subclass_is_part_of_forward() -> None:
    assert lines(HOOK.format(device=""), "GPD106") == [11]
    assert lines(HOOK.format(device=", device=prediction.device"), "GPD106") == []


# report 16: the model moved only beside DataParallel, under a test for several GPUs
SEVERAL = """\
import torch
import torch.nn as nn
from data import get_loader
class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(1, 1, 3)
    def forward(self, x):
        return self.conv(x)
def main(config):
    model = UNet()
    if {test}:
        model = nn.DataParallel(model)
        model.cuda()
    for batch in get_loader(config):
        if torch.cuda.is_available():
            batch = batch.cuda(non_blocking=True)
        output = model(batch)
"""


def test_a_move_under_a_test_for_several_gpus_misses_the_one_gpu_machine() -> None:
    assert lines(SEVERAL.format(test="torch.cuda.device_count() > 1"), "GPD102") == [14]
    assert lines(SEVERAL.format(test="n_gpu >= 2 and not args.cpu"), "GPD102") == [14]
    # a test for any GPU is the guard the batches share
    assert lines(SEVERAL.format(test="torch.cuda.device_count() > 0"), "GPD102") == []
    assert lines(SEVERAL.format(test="torch.cuda.is_available()"), "GPD102") == []


# report 10: layers built by name from torch.nn and kept in a plain list
MERGE = """\
import torch
from torch import nn
def get_layer(hparams):
    layer_class = getattr({namespace}, hparams["type"])
    return layer_class(**hparams.get("kwargs", {{}}))
class MergeLayer(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self._layers = []
        for layer in layers:
            self._layers.append(get_layer(hparams=layer))
    def forward(self, x):
        return torch.cat([layer(x) for layer in self._layers], dim=1)
"""


def test_layers_looked_up_by_name_in_torch_nn_are_modules() -> None:
    assert lines(MERGE.format(namespace="nn"), "GPD104") == [9]
    assert lines(MERGE.format(namespace="nn.functional"), "GPD104") == []


# report 03: the helper reaches the pipeline through the package's __init__, re-exported
def test_a_function_re_exported_by_a_package_is_followed(tmp_path: Path) -> None:
    utils = tmp_path / "app" / "utils"
    utils.mkdir(parents=True)
    (tmp_path / "app" / "__init__.py").write_text("")
    (utils / "devices.py").write_text(
        "import torch\n"
        "def get_torch_device():\n"
        "    if torch.cuda.is_available():\n"
        '        return torch.device("cuda")\n'
        '    return torch.device("cpu")\n'
    )
    pipeline = tmp_path / "app" / "pipeline.py"
    pipeline.write_text(
        "from app.utils import get_torch_device\n"
        "def load():\n"
        "    device = get_torch_device()\n"
        '    return device != "cpu"\n'
    )
    for exported in (
        "from app.utils.devices import get_torch_device\n",
        "from .devices import *\n",
    ):
        (utils / "__init__.py").write_text(exported)
        result = lint_paths([str(pipeline)], LintConfig(select=("GPD501",)), 1, use_cache=False)
        found = [(Path(f.path).name, f.line) for f in result.findings]
        # re-exported by name or behind `import *` (`utils/__init__.py` of many repositories)
        assert found == [("pipeline.py", 4)]


# report 17 (tsts): a trainer subclass's loop reads the model and device its base's __init__ set
TRAINER_SUBCLASS = """\
import torch
from torch.nn import Module
class Trainer(object):
    def __init__(self, model: Module, loader, device: str) -> None:
        self.model = model
        self.loader = loader
        self.device = device
class SupervisedTrainer(Trainer):
    def on_train(self):
        for (X, y, bias) in self.loader:
            X = X.to(self.device)
            y = y.to(self.device)
{moved}            Z = self.model(X, bias)
            (Z - y).sum().backward()
"""


def test_a_subclass_method_reads_the_attributes_its_base_set() -> None:
    assert lines(TRAINER_SUBCLASS.format(moved=""), "GPD101") == [13]
    moved = "            bias = bias.to(self.device)\n"
    assert lines(TRAINER_SUBCLASS.format(moved=moved), "GPD101") == []


MODULE_SUBCLASS = """\
import torch
import torch.nn as nn
class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("scale", torch.ones(4))
class Child(Base):
    def forward(self, x):
        return self.fc(x) * self.scale
model = Child().to("cuda")
"""


def test_a_module_subclass_uses_its_base_parts_without_a_finding() -> None:
    result = lint_source(MODULE_SUBCLASS, "x.py", LintConfig())
    assert result.error is None
    assert result.findings == ()


# report 06 (mrs): a model from a project factory this file cannot read, known by its use
RESUME_FACTORY = """\
import torch
from torch import optim
from network import network_io
def train_model(args, device, loader):
    model = network_io.create_model(args)
    optimizer = optim.Adam({params}, lr=0.1)
    optimizer.load_state_dict(torch.load(args.path, map_location="cpu")["opt"])
    model.to(device)
    for x, y in loader:
        optimizer.zero_grad()
        model(x.to(device)).sum().backward()
        optimizer.step()
"""


def test_a_factory_model_used_as_a_module_is_one() -> None:
    assert lines(RESUME_FACTORY.format(params="model.parameters()"), "GPD302") == [7]
    # `model.set_train_params(lrs)`: a module's method named for its parameter groups
    groups = "model.set_train_params((0.1, 0.01))"
    assert lines(RESUME_FACTORY.format(params=groups), "GPD302") == [7]
    # a count of parameters is no parameter group
    assert lines(RESUME_FACTORY.format(params="[model.num_params()]"), "GPD302") == []


# held-out set 15 (annotated transformer): a holder class stores the criterion each caller gives
HOLDER_CLASS = """\
import torch
import torch.nn as nn
class LossCompute:
    def __init__(self, generator, criterion):
        self.generator = generator
        self.criterion = criterion
    def __call__(self, x, y):
        return self.criterion(self.generator(x), y)
def train_worker(gpu, x, y):
    criterion = nn.CrossEntropyLoss(weight=torch.ones(4))
    criterion.cuda(gpu)
    generator = nn.Linear(4, 4).cuda(gpu)
    return LossCompute(generator, criterion)(x.cuda(gpu), y.cuda(gpu))
def example(x, y):
    criterion = nn.CrossEntropyLoss(weight=torch.ones(4))
    return LossCompute(nn.Linear(4, 4), criterion)(x, y)
"""


def test_a_holder_class_storing_what_each_caller_gives_re_creates_nothing() -> None:
    assert lines(HOLDER_CLASS, "GPD102") == []
    # the class re-creating its criterion on the host after the caller's move: reported
    recreated = HOLDER_CLASS.replace(
        "        self.criterion = criterion\n",
        "        self.criterion = criterion\n        self.generator = nn.Linear(4, 4)\n",
    )
    only_gpu = recreated[: recreated.index("def example")]
    assert lines(only_gpu, "GPD102") == [7]


def test_a_factory_model_keeps_the_place_its_binding_gave_it() -> None:
    # recall set 14's hgraph2graph: `HierVAE(args).cuda()` from a star import, used as a module
    source = """\
import numpy as np
import torch
from hgraph import *
model = HierVAE(args).cuda()
optimizer = torch.optim.Adam(model.parameters())
for batch in loader:
    loss, acc = model(*batch)
    print(np.array([loss.item(), acc * 100]))
"""
    assert lines(source, "GPD202") == [8]


# report 14 (darts TFT): masks cached on the module in forward, reused while the batch size holds
CACHED_MASK = """\
import torch
import torch.nn as nn
class TFT(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.attn = nn.MultiheadAttention(hidden, 2, batch_first=True)
        self.batch_size_last = -1
        self.attention_mask = None
    def forward(self, x):
        batch_size, length = x.shape[0], x.shape[1]
        if {test}:
            self.attention_mask = torch.ones(length, length, device=x.device).triu(1).bool()
            self.batch_size_last = batch_size
        out, _ = self.attn(x, x, x, attn_mask=self.attention_mask)
        return out
model = TFT(8).cuda()
"""


def test_a_tensor_cached_on_the_module_in_forward_is_gpd105() -> None:
    assert lines(CACHED_MASK.format(test="batch_size != self.batch_size_last"), "GPD105") == [8]
    # a cache that checks its device rebuilds itself after a move
    test = "self.attention_mask is None or self.attention_mask.device != x.device"
    assert lines(CACHED_MASK.format(test=test), "GPD105") == []
    # rebuilt on every call: nothing is kept across a move
    assert lines(CACHED_MASK.format(test="True"), "GPD105") == []


# report 19: DDP wraps the freshly built model on the CPU; the move comes only after the wrap
DDP_THEN_MOVE = """\
import torch
from torch import nn
def run(args):
    use_cuda = torch.cuda.is_available() and not args.no_cuda
    device = torch.device("cuda" if use_cuda else "cpu")
    net = nn.Linear(4, 2)
    {placement}
    if use_cuda:
        net = nn.parallel.DistributedDataParallel(net)
    else:
        net = nn.parallel.DistributedDataParallelCPU(net)
    {after}
"""


def test_a_module_moved_only_after_ddp_wrapped_it_is_reported() -> None:
    wrapped_then_moved = DDP_THEN_MOVE.format(placement="", after="net.to(device)")
    assert lines(wrapped_then_moved, "GPD401") == [9]
    moved_first = DDP_THEN_MOVE.format(placement="net.to(device)", after="")
    assert lines(moved_first, "GPD401") == []
    never_moved_on_gloo = DDP_THEN_MOVE.format(placement="", after="")
    assert lines(never_moved_on_gloo, "GPD401") == []


def test_a_move_on_the_other_arm_of_the_wrap_is_not_after_it() -> None:
    source = """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
def run(args):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = torch.nn.Linear(2, 2)
    if args.cpu:
        net = DDP(net)
    else:
        net.to(device)
        net = DDP(net, device_ids=[args.rank])
"""
    assert lines(source, "GPD401") == []
