"""Precision regressions of the forty-third held-out set (public repositories), reduced and
rewritten here: correct code each rule must leave alone, next to the bug it still finds."""

from __future__ import annotations

import json
from pathlib import Path

from lint_lines import lines, project_lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths

# deep_rl's agents: a target built from a placed network's output, "moved" again and discarded
ALREADY_THERE = """\
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
vf = nn.Linear(4, 1).to(device)


def targets(reward, next_obs, done, gamma=0.99):
    next_v = vf(torch.Tensor(next_obs).to(device))
    q = {q}
    q.to(device)
    return q
"""


def test_a_discarded_move_of_a_tensor_already_on_the_device_loses_nothing() -> None:
    placed = "reward + gamma * (1 - done) * next_v"
    assert lines(ALREADY_THERE.format(q=placed), "GPD103") == []
    # built on the host, the discarded move leaves it there
    assert lines(ALREADY_THERE.format(q="torch.zeros(3) + reward"), "GPD103") == [11]
    # a discarded dtype conversion of a device tensor still changes nothing it keeps
    dtype = ALREADY_THERE.format(q=placed).replace("q.to(device)", "q.to(torch.float16)")
    assert lines(dtype, "GPD103") == [11]


# NCRFpp: the tagger's parts move their own layers to the GPU in their `__init__`, under the
# same flag that moves the batches
PARTS = """\
import torch.nn as nn


class WordSequence(nn.Module):
    def __init__(self, data):
        super().__init__()
        self.hidden2tag = nn.Linear(8, data.label_size)
        {move}

    def forward(self, word):
        return self.hidden2tag(word)
"""
TAGGER = """\
import torch.nn as nn
from wordseq import WordSequence


class Tagger(nn.Module):
    def __init__(self, data):
        super().__init__()
        self.word_hidden = WordSequence(data)

    def forward(self, word):
        return self.word_hidden(word)
"""
NCRF_MAIN = """\
import torch
from tagger import Tagger


def batchify(instance, gpu):
    word = torch.tensor(instance, dtype=torch.float)
    if gpu:
        word = word.cuda()
    return word


def evaluate(data, model):
    for instance in data.dev:
        tag_seq = model(batchify(instance, data.HP_gpu))


def train(data):
    model = Tagger(data)
    evaluate(data, model)
"""
MOVES_ITSELF = "if data.HP_gpu:\n            self.hidden2tag = self.hidden2tag.cuda()"


def test_a_module_whose_parts_move_themselves_in_another_file_is_placed(tmp_path: Path) -> None:
    files = {"main.py": NCRF_MAIN, "tagger.py": TAGGER, "wordseq.py": ""}
    files["wordseq.py"] = PARTS.format(move=MOVES_ITSELF)
    assert project_lines(tmp_path, files, "GPD102") == []
    # parts that never move leave the tagger on the host
    files["wordseq.py"] = PARTS.format(move="pass")
    assert project_lines(tmp_path, files, "GPD102") == [18]


def test_a_local_module_built_of_parts_that_move_themselves_is_placed() -> None:
    local = (
        PARTS.format(move=MOVES_ITSELF)
        + TAGGER.replace("import torch.nn as nn\nfrom wordseq import WordSequence\n", "")
        + NCRF_MAIN.replace("from tagger import Tagger\n", "")
    )
    assert lines(local, "GPD102") == []
    unmoved = local.replace(MOVES_ITSELF, "pass")
    assert lines(unmoved, "GPD102") == [37]


# Swin-Unet: a loss that keeps only its number of classes
DICE = """\
import torch
import torch.nn as nn


class DiceLoss(nn.Module):
    def __init__(self, {param}):
        super().__init__()
        self.{param} = {param}

    def forward(self, inputs, target):
        inputs = torch.softmax(inputs, dim=1)
        return 1 - (inputs * target).sum() / (inputs.sum() + target.sum())
"""
DICE_MAIN = """\
import torch
from dice import DiceLoss


def train(model, loader, num_classes):
    dice_loss = DiceLoss(num_classes)
    for image, label in loader:
        image, label = image.cuda(), label.cuda()
        loss = dice_loss(model(image), label)
        loss.backward()
"""


def test_a_loss_keeping_only_its_number_of_classes_needs_no_move(tmp_path: Path) -> None:
    for param in ("n_classes", "num_classes"):
        files = {"main.py": DICE_MAIN, "dice.py": DICE.format(param=param)}
        assert project_lines(tmp_path, files, "GPD102") == []
    # one that keeps what it is given as its weights needs them moved
    files = {"main.py": DICE_MAIN, "dice.py": DICE.format(param="class_weights")}
    assert project_lines(tmp_path, files, "GPD102") == [6]


# deep_gcns_torch: PyG's DataParallel takes the DataListLoader's list of graphs on the host
PYG = """\
import torch
from torch_geometric.loader import DataLoader, DataListLoader
from torch_geometric.nn import DataParallel


def train_step(model, train_loader, optimizer, criterion, opt):
    for data in train_loader:
        if not opt.multi_gpus:
            data = data.to(opt.device)
            gt = data.y
        else:
            gt = torch.cat([batch.y for batch in data], 0).to(opt.device)
        out = model(data)
        criterion(out, gt).backward()
        optimizer.step()


def main(opt, net, dataset):
    if opt.multi_gpus:
        model = {parallel}(net).to(opt.device)
        loader = DataListLoader(dataset, batch_size=8)
    else:
        model = net.to(opt.device)
        loader = DataLoader(dataset, batch_size=8)
    optimizer = torch.optim.Adam(model.parameters())
    train_step(model, loader, optimizer, torch.nn.BCEWithLogitsLoss(), opt)
"""


def test_pyg_dataparallel_scatters_a_list_of_host_graphs() -> None:
    assert lines(PYG.format(parallel="DataParallel"), "GPD101") == []
    # without the wrapper, the multi-GPU path hands host graphs to a placed model
    assert lines(PYG.format(parallel=""), "GPD101") == [13]


# karpathy's normalizing flows (set 44): layers in a package, trained by a notebook beside
# it; nothing in the project names a device
FLOW = """\
import torch
import torch.nn as nn


class FlowChain(nn.Module):
    def __init__(self, steps):
        super().__init__()
        self.steps = nn.ModuleList(steps)

    def forward(self, x):
        total = torch.zeros(x.size(0))
        for step in self.steps:
            x = step(x)
            total = total + x.sum(1)
        return x, total
"""


def _notebook(code: str) -> str:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "source": code}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def _flow_lines(tmp_path: Path, notebook: str) -> list[int]:
    (tmp_path / ".git").mkdir(exist_ok=True)
    package = tmp_path / "flows"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "chain.py").write_text(FLOW)
    (tmp_path / "demo.ipynb").write_text(notebook)
    config = LintConfig(select=("GPD106",))
    result = lint_paths([str(package / "chain.py")], config, jobs=1, use_cache=False)
    assert not result.errors
    return [finding.line for finding in result.findings]


def test_a_layer_of_a_project_that_never_names_a_device_runs_on_the_cpu(tmp_path: Path) -> None:
    cpu = "from flows.chain import FlowChain\nflow = FlowChain([])\nprint(flow(x))\n"
    assert _flow_lines(tmp_path, _notebook(cpu)) == []
    # the same notebook moving the flow to the GPU meets the host zeros there
    gpu = "from flows.chain import FlowChain\nflow = FlowChain([]).cuda()\nprint(flow(x))\n"
    assert _flow_lines(tmp_path, _notebook(gpu)) == [11]


def test_a_layer_with_no_script_that_runs_it_is_still_reported(tmp_path: Path) -> None:
    # a package alone may be anyone's: its users move it
    (tmp_path / ".git").mkdir()
    (tmp_path / "chain.py").write_text(FLOW)
    result = lint_paths(
        [str(tmp_path / "chain.py")], LintConfig(select=("GPD106",)), jobs=1, use_cache=False
    )
    assert [finding.line for finding in result.findings] == [11]


# xbresson's course (set 44): tensors a course helper saved once from torchvision
COURSE = """\
import torch
from utils import check_dataset_exists

device = torch.device("cpu")
data_path = check_dataset_exists()
train_data = torch.load(data_path + "cifar/{name}")
print(train_data.to(device).size())
"""


def test_a_file_named_for_its_data_holds_no_device_tensors() -> None:
    assert lines(COURSE.format(name="train_data.pt"), "GPD201") == []
    assert lines(COURSE.format(name="test_label.pt"), "GPD201") == []
    # a checkpoint's name is still a checkpoint
    assert lines(COURSE.format(name="best_model.pt"), "GPD201") == [6]


# self-supervised-histopathology (recall set 44): a feature extractor cut from a placed model
CUT = """\
import torch
from torchvision import models, transforms

model = models.resnet18(){move}
feature_extractor = torch.nn.Sequential(*list(model.children())[:-1])
img_tensor = transforms.Compose([transforms.ToTensor()])(image)
features = feature_extractor(img_tensor.unsqueeze(0))
"""


def test_layers_cut_from_a_placed_model_are_on_the_device() -> None:
    assert lines(CUT.format(move=".cuda()"), "GPD101") == [7]
    assert lines(CUT.format(move=""), "GPD101") == []


# DiffTF (recall set 44): a DistributedSampler built after CUDA became the default device
SAMPLER = """\
import torch
from torch.utils.data import DataLoader


def train(data):
    sampler = {sampler}
    loader = DataLoader(data, batch_size=4, sampler=sampler)
    for batch in loader:
        print(batch)


if __name__ == "__main__":
    torch.set_default_tensor_type("torch.cuda.FloatTensor")
    train(list(range(8)))
"""


def test_a_sampler_with_its_own_cpu_generator_fails_once_cuda_is_the_default() -> None:
    distributed = "torch.utils.data.distributed.DistributedSampler(data)"
    assert lines(SAMPLER.format(sampler=distributed), "GPD502") == [6]
    random = "torch.utils.data.RandomSampler(data)"
    assert lines(SAMPLER.format(sampler=random), "GPD502") == [6]
    # no shuffle, or a CUDA generator of its own: nothing draws on the CPU generator
    ordered = "torch.utils.data.distributed.DistributedSampler(data, shuffle=False)"
    assert lines(SAMPLER.format(sampler=ordered), "GPD502") == []
    seeded = 'torch.utils.data.RandomSampler(data, generator=torch.Generator(device="cuda"))'
    assert lines(SAMPLER.format(sampler=seeded), "GPD502") == []
    # without the switch the CPU generator is right
    plain = SAMPLER.format(sampler=distributed).replace(
        '    torch.set_default_tensor_type("torch.cuda.FloatTensor")\n', ""
    )
    assert lines(plain, "GPD502") == []


# rasbt's DCGAN notebook (set 45): a name for the GPU, read only on the GPU path of a test
NAMED_GPU = """\
import torch
import torch.nn as nn

GPU_NAME = "cuda:0"
RUN_DEVICE = torch.device({use} if torch.cuda.is_available() else "cpu")
net = nn.Linear(4, 2).to(RUN_DEVICE)
{extra}
"""


def test_a_gpu_name_read_only_where_cuda_is_available_is_no_hard_coding() -> None:
    assert lines(NAMED_GPU.format(use="GPU_NAME", extra=""), "GPD203") == []
    # read outside the test too: that read hard-codes CUDA
    unguarded = NAMED_GPU.format(use='"cuda"', extra="aux = nn.Linear(4, 2).to(GPU_NAME)")
    assert lines(unguarded, "GPD203") == [4]


# ckgc (set 45): the distributed arm maps each rank's device, the single-process arm does not
ARMS = """\
import torch
import torch.distributed as dist
import torch.nn as nn


def main(args):
    if args.distributed:
        dist.init_process_group(backend="nccl")
        torch.cuda.set_device(dist.get_rank())
    encoder = nn.Linear(16, 16).cuda()
    if args.distributed:
        where = {{"cuda:0": "cuda:%d" % dist.get_rank()}}
        encoder.load_state_dict(torch.load(args.ckpt, map_location=where))
    else:
        encoder.load_state_dict(torch.load({other}))
"""


def test_the_single_process_arm_beside_a_rank_mapped_load_is_no_rank() -> None:
    assert lines(ARMS.format(other="args.ckpt"), "GPD201") == []
    assert lines(ARMS.format(other='args.ckpt + "_last.pt"'), "GPD201") == []
    # no arm maps: every rank restores onto cuda:0
    unmapped = ARMS.format(other="args.ckpt").replace(", map_location=where", "")
    assert lines(unmapped, "GPD201") == [13, 15]


# AI_course (set 45): torchaudio's greedy CTC decoder keeps only its labels and blank index
DECODER = """\
import torch
import torch.nn as nn

dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
acoustic = nn.Linear(40, 5).to(dev)


class GreedyCTCDecoder(nn.Module):
    def __init__(self, {param}, blank=0):
        super().__init__()
        self.{param} = {param}
        self.blank = blank

    def forward(self, emission):
        ids = torch.unique_consecutive(torch.argmax(emission, dim=-1), dim=-1)
        return "".join(self.{param}[i] for i in ids if i != self.blank)


def transcribe(bundle, frames):
    decoder = GreedyCTCDecoder({param}=bundle.get_labels())
    return decoder(acoustic(frames.to(dev)))
"""


def test_a_decoder_keeping_its_labels_needs_no_move() -> None:
    assert lines(DECODER.format(param="labels"), "GPD102") == []
    assert lines(DECODER.format(param="vocab"), "GPD102") == []
    # what it keeps under another name may be a module's weights
    assert lines(DECODER.format(param="table"), "GPD102") == [20]


# Graph_Neural_Network (set 45): a new network trained on the CPU with PyG's host batches
GRAPHS = """\
import torch
import torch.nn as nn
from torch_geometric.loader import DataLoader

dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(10, 2).to(dev)
print(model(torch.randn(4, 10).to(dev)))


def fit(graphs):
    net = nn.Linear(3, 2)
    for batch in DataLoader(graphs, batch_size=8):
        net(batch.x).sum().backward()
    return net


model = fit(graphs)
for batch in DataLoader(graphs, batch_size=8):
    print(model({fed}).argmax(1))
"""


def test_a_graph_loaders_batches_are_on_the_host() -> None:
    assert lines(GRAPHS.format(fed="batch.x"), "GPD102") == []
    # the batch moved to the device meets the re-created model on the host
    assert lines(GRAPHS.format(fed="batch.to(dev).x"), "GPD102") == [17]


# DiscoGAN (set 46): `map_location=None` only where GPUs run (`else:` of `num_gpu == 0`)
NONE_ON_GPU = """\
import argparse
import torch
import torch.nn as nn


def restore(net, path, num_gpu):
    if {test}:
        loc = lambda storage, where: storage
    else:
        loc = None
    net.load_state_dict(torch.load(path, map_location=loc))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--num_gpu", type=int, default=1)
    args = ap.parse_args()
    net = nn.Linear(4, 2)
    if args.num_gpu > 0:
        net.cuda()
    restore(net, "net.pth", args.num_gpu)
"""


def test_a_map_location_that_is_none_only_on_the_gpu_arm_maps_the_cpu_run() -> None:
    assert lines(NONE_ON_GPU.format(test="num_gpu == 0"), "GPD201") == []
    # None on the CPU arm: the CPU run maps nothing
    assert lines(NONE_ON_GPU.format(test="num_gpu != 0"), "GPD201") == [11]


def test_counts_of_gpus_against_zero_and_negative_indices_mean_the_cpu() -> None:
    import libcst as cst

    from gpudoc.lint.analysis.flow import guard_polarity

    def polarity(text: str) -> str | None:
        return guard_polarity(cst.parse_expression(text))

    assert polarity("num_gpu == 0") == "cpu"
    assert polarity("torch.cuda.device_count() == 0") == "cpu"
    assert polarity("args.gpu == -1") == "cpu"
    assert polarity("args.visible_gpus != '-1'") == "gpu"
    assert polarity("args.ngpu != 0") == "gpu"
    # index 0 is the first GPU, not none
    assert polarity("args.gpu == 0") == "gpu"


# PyTorch-Adventures (set 46): a model split over two GPUs, in a notebook whose other sections
# fall back to the CPU
SPLIT = """\
import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"
small = nn.Linear(8, 2).to(device)


class TwoGpuNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.front = nn.Linear(8, 16).to("cuda:0")
        self.back = nn.Linear(16, 2).to("{second}")

    def forward(self, x):
        return self.back(self.front(x.to("cuda:0")).to("{second}"))


net = TwoGpuNet()
target = torch.tensor([0, 1]).to("{second}")
"""


def test_a_model_split_over_two_gpus_needs_them_by_design() -> None:
    assert lines(SPLIT.format(second="cuda:1"), "GPD203") == []
    # one GPU named all through: hard-coded where the file offers the CPU
    assert lines(SPLIT.format(second="cuda:0"), "GPD203") == [11, 12, 15, 15, 19]


# TextGAN (set 46): a loss that moves its own label buffer when its CUDA flag says so
FLAGGED = """\
import torch
import torch.nn as nn

USE_CUDA = torch.cuda.is_available()


class PairLoss(nn.Module):
    def __init__(self, CUDA=False):
        super().__init__()
        self.register_buffer("one", torch.tensor(1.0))
        self.CUDA = CUDA
        self.bce = nn.BCEWithLogitsLoss()

    def label(self, pred):
        target = self.one
        if self.CUDA:
            target = target{move}
        return target.expand_as(pred)

    def forward(self, real, fake):
        return self.bce(real - fake, self.label(real))


critic = nn.Linear(6, 1)
if USE_CUDA:
    critic = critic.cuda()
loss_fn = PairLoss(CUDA=USE_CUDA)
a, b = torch.randn(2, 6), torch.randn(2, 6)
if USE_CUDA:
    a, b = a.cuda(), b.cuda()
print(loss_fn(critic(a), critic(b)))
"""


def test_a_module_that_moves_its_buffers_by_its_own_cuda_flag_is_placed() -> None:
    assert lines(FLAGGED.format(move=".cuda()"), "GPD102") == []
    assert lines(FLAGGED.format(move=".float()"), "GPD102") == [27]
