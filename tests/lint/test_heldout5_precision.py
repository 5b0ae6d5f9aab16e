"""Precision regressions from the fifth held-out set of public repositories (a VAE tutorial
notebook, YOLOv4 with torchvision's distributed helpers, WGANs, semantic segmentation with a
deformable convolution, graph attention notebooks, synchronized batch-norm tests), reduced and
rewritten here: correct code each rule must leave alone, next to the bug it must still
report."""

from __future__ import annotations

from pathlib import Path

import pytest
from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths

# a VAE notebook: encoder and decoder handed to the model's constructor, the model moved
PARTS = """\
import torch
import torch.nn as nn
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
class Model(nn.Module):
    def __init__(self, Encoder, Decoder):
        super().__init__()
        self.Encoder, self.Decoder = Encoder, Decoder
    def forward(self, x):
        return self.Decoder(self.Encoder(x))
encoder = nn.Linear(8, 2)
decoder = nn.Linear(2, 8)
model = Model(Encoder=encoder, Decoder={decoder}).to(DEVICE)
noise = torch.randn(4, 2).to(DEVICE)
generated = decoder(noise)
"""


def test_a_module_handed_to_a_moved_parent_moves_with_it() -> None:
    assert lines(PARTS.format(decoder="decoder"), "GPD102") == []


def test_a_module_the_parent_never_got_stays_gpd102() -> None:
    assert lines(PARTS.format(decoder="nn.Linear(2, 8)"), "GPD102") == [11]


# YOLOv4's loss: a module without layers that builds its grids on the device it is given
DEVICE_GIVEN = """\
import torch
import torch.nn as nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
class GridLoss(nn.Module):
    def __init__(self, size=4, device=None):
        super().__init__()
        self.device = device
        self.grids = [torch.arange(size, dtype=torch.float).to(device)]
        self.scale = nn.Parameter(torch.ones(1))
    def forward(self, pred):
        return ((pred - self.grids[0]) * self.scale).abs().mean()
criterion = GridLoss({arguments})
pred = torch.randn(4).to(device)
loss = criterion(pred)
"""


@pytest.mark.parametrize("arguments", ["device=device", "4, device"])
def test_a_module_given_the_device_it_places_its_tensors_on(arguments: str) -> None:
    assert lines(DEVICE_GIVEN.format(arguments=arguments), "GPD102") == []


@pytest.mark.parametrize("arguments", ["", "device=None"])
def test_the_same_module_without_a_device_stays_gpd102(arguments: str) -> None:
    assert lines(DEVICE_GIVEN.format(arguments=arguments), "GPD102") == [12]


RECREATED = """\
import torch
import torch.nn as nn
class GAN:
    def __init__(self, cuda):
        self.D = nn.Linear(4, 1)
        self.loss = {loss}
        if cuda:
            self.D.cuda()
            self.loss = {loss}.cuda()
        self.loss = {loss}
    def step(self, x):
        return self.loss(self.D(x.cuda()), torch.ones(4, 1).cuda())
"""


def test_a_loss_without_weights_recreated_on_the_host_is_not_gpd102() -> None:
    assert lines(RECREATED.format(loss="nn.BCEWithLogitsLoss()"), "GPD102") == []


def test_a_layer_recreated_on_the_host_after_its_move_stays_gpd102() -> None:
    assert lines(RECREATED.format(loss="nn.Linear(1, 1)"), "GPD102") == [10]


# a segmentation repository for GPUs: one layer class can run on the CPU (its own flag)
OBJECT_FLAG = """\
import torch
import torch.nn as nn
class Deformable(nn.Module):
    def __init__(self, cuda=True):
        super().__init__()
        self.cuda_on = cuda
    def forward(self, x):
        grid = torch.zeros(4)
        if self.cuda_on:
            grid = grid.cuda()
        return x + grid
def sliced_forward(x):
    return torch.zeros(2, 3).cuda() + x
{script}
"""


def test_one_classes_own_flag_is_no_cpu_path_for_the_file() -> None:
    assert lines(OBJECT_FLAG.format(script=""), "GPD203") == []


def test_a_script_flag_is_a_cpu_path_for_the_file() -> None:
    script = (
        "use_cuda = torch.cuda.is_available()\nkwargs = {'pin_memory': True} if use_cuda else {}\n"
    )
    assert lines(OBJECT_FLAG.format(script=script), "GPD203") == [13]


PARAMETER_FLAG = """\
import unittest
import torch
import torch.nn as nn
class SyncTest(unittest.TestCase):
    def check(self, bn, x, cuda=False):
        if cuda:
            x = x.cuda()
        return bn(x)
    def test_cpu(self):
        self.check(nn.BatchNorm1d(4), torch.rand(8, 4))
    def test_two_gpus(self):
        bn = nn.DataParallel(nn.BatchNorm1d(4), device_ids=[0, 1])
        bn.cuda()
        self.check(bn, torch.rand(8, 4), cuda=True)
"""


def test_a_functions_own_flag_is_no_cpu_path_for_gpu_tests() -> None:
    assert lines(PARAMETER_FLAG, "GPD203") == []


GPU_OPTION = """\
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument({option})
args = parser.parse_args()
net = torch.nn.Linear(4, 2).cuda()
print(net(torch.randn(3, 4).cuda()), args)
"""


@pytest.mark.parametrize(
    "option",
    ['"--gpus", default="0-3", help="gpus to use, e.g. 0-3"', '"--ngpu", type=int, default=2'],
)
def test_an_option_naming_which_gpus_is_no_cpu_path(option: str) -> None:
    assert lines(GPU_OPTION.format(option=option), "GPD203") == []


@pytest.mark.parametrize(
    "option",
    [
        '"--ngpu", type=int, default=1, help="0 = CPU."',
        '"--gpu_ids", default="0", help="gpu ids: e.g. 0  0,1,2. use -1 for CPU"',
        '"--gpu", action="store_true"',
        '"--no-cuda", action="store_true"',
    ],
)
def test_an_option_that_can_choose_the_cpu_is_a_cpu_path(option: str) -> None:
    assert lines(GPU_OPTION.format(option=option), "GPD203") == [6, 7]


# torchvision's reference utils: all_gather only runs in a process group (NCCL: GPUs)
GATHER = """\
import pickle
import torch
import torch.distributed as dist
def get_world_size():
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1
def all_gather(data):
    {early}
    world_size = get_world_size()
    if world_size == 1:
        return [data]
    buffer = torch.ByteTensor(torch.ByteStorage.from_buffer(pickle.dumps(data))).to("cuda")
    sizes = [torch.tensor([0], device="cuda") for _ in range(world_size)]
    dist.all_gather(sizes, torch.tensor([buffer.numel()], device="cuda"))
    return sizes
def log(x):
    if torch.cuda.is_available():
        print(torch.cuda.max_memory_allocated())
    return x
"""


def test_cuda_after_a_single_process_return_is_not_gpd203() -> None:
    assert lines(GATHER.format(early="pass"), "GPD203") == []


def test_cuda_before_the_single_process_return_stays_gpd203() -> None:
    early = 'torch.zeros(1, device="cuda")'
    assert lines(GATHER.format(early=early), "GPD203") == [7]


def test_a_distributed_helper_reached_from_another_file_is_not_gpd203(tmp_path: Path) -> None:
    (tmp_path / "utils.py").write_text(GATHER.format(early="pass"))
    (tmp_path / "engine.py").write_text(
        "import torch\nimport utils\n"
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        "def evaluate(outputs):\n    return utils.all_gather(outputs)\n"
    )
    config = LintConfig(select=("GPD203",))
    result = lint_paths([str(tmp_path)], config, jobs=1, use_cache=False)
    assert [(Path(f.path).name, f.line) for f in result.findings] == []


NOTEBOOK_ARGS = """\
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument("--force_cpu", type=bool, default=False)
args = parser.parse_args({arguments})
device = torch.device("cuda" if torch.cuda.is_available() and not args.force_cpu else "cpu")
"""


@pytest.mark.parametrize("arguments", ['""', "[]", 'args=["--force_cpu", "1"]'])
def test_options_parsed_from_written_arguments_are_not_gpd503(arguments: str) -> None:
    assert lines(NOTEBOOK_ARGS.format(arguments=arguments), "GPD503") == []


@pytest.mark.parametrize("arguments", ["", "sys.argv[1:]"])
def test_options_parsed_from_the_command_line_stay_gpd503(arguments: str) -> None:
    assert lines(NOTEBOOK_ARGS.format(arguments=arguments), "GPD503") == [4]


LOADERS = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
def load_graph_data(config, device):
    features = torch.tensor(config["features"])
    {tail}
"""


def test_a_device_parameter_of_a_loader_builder_is_not_gpd113() -> None:
    tail = "return DataLoader(TensorDataset(features), batch_size=2)"
    assert lines(LOADERS.format(tail=tail), "GPD113") == []


def test_a_device_parameter_of_a_tensor_builder_stays_gpd113() -> None:
    assert lines(LOADERS.format(tail="return features"), "GPD113") == [3]


# SRGAN's VGG loss in a library module: the training script in another file moves it
NORMALIZED_LOSS = """\
import torch
import torch.nn as nn
class VGGLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU())
        self.mean = torch.Tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    def forward(self, source, target):
        {use}
        return nn.functional.l1_loss(self.features(source), self.features(target))
{main}
"""


def test_a_library_modules_plain_attribute_used_with_inputs_is_gpd105() -> None:
    use = "source, target = source - self.mean, target - self.mean"
    assert lines(NORMALIZED_LOSS.format(use=use, main=""), "GPD105") == [7]


def test_a_script_that_places_nothing_is_left_alone() -> None:
    use = "source, target = source - self.mean, target - self.mean"
    main = 'if __name__ == "__main__":\n    x = torch.rand(1, 3, 8, 8)\n    print(VGGLoss()(x, x))'
    assert lines(NORMALIZED_LOSS.format(use=use, main=main), "GPD105") == []


def test_a_library_attribute_handed_to_a_helper_is_left_alone() -> None:
    use = "source, target = normalize(source, self.mean), normalize(target, self.mean)"
    assert lines(NORMALIZED_LOSS.format(use=use, main=""), "GPD105") == []
