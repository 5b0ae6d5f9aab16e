"""Precision regressions from the eighteenth held-out set (public repositories linted before any
tuning, every finding judged): minimal programs of our own for each cause of a wrong finding,
beside the variant that must still be reported."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths


def _lint(tmp_path: Path, files: dict[str, str], entry: str) -> list[tuple[str, int, str]]:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    result = lint_paths([str(tmp_path / entry)], LintConfig())
    return [(Path(f.path).name, f.line, f.code) for file in result.files for f in file.findings]


# an RL library's device helper, whose own fallback compares types with `th.device("cuda").type`
DEVICES = """\
import torch as th
def pick_device(device="auto"):
    if device == "auto":
        device = "cuda"
    device = th.device(device)
    if device.type == th.device("cuda").type and not th.cuda.is_available():
        return th.device("cpu")
    return device
"""
AGENT = """\
import torch as th
from devices import pick_device
class Agent:
    def __init__(self, policy, device="auto"):
        self.device = pick_device(device)
        self.policy = policy.to(self.device)
        self.seeded_on_gpu = self.device.type == th.device("cuda").type
"""

SCRIPT = """\
import torch as th
device = th.device("cuda" if th.cuda.is_available() else "cpu")
{use}
"""


def test_a_cuda_device_that_only_names_a_type_in_a_comparison_allocates_nothing(
    tmp_path: Path,
) -> None:
    files = {"devices.py": DEVICES, "agent.py": AGENT}
    assert _lint(tmp_path, files, "agent.py") == []
    assert lines(DEVICES, "GPD203") == []
    # in a script that falls back to the CPU, the comparison is quiet, an allocation is not
    script = SCRIPT.format(use='on_gpu = device.type == th.device("cuda").type')
    assert lines(script, "GPD203") == []
    script = SCRIPT.format(use='noise = th.zeros(3, device=th.device("cuda"))')
    assert lines(script, "GPD203") == [3]


# a trainer that pickles its argparse Namespace next to the weights, and a predictor reading it
SAVED_ARGS = """\
import os
import torch
def pick(cfg):
    return "cuda" if torch.cuda.is_available() and not cfg.no_cuda else "cpu"
def restore(cfg, model):
    args = torch.load(os.path.join(cfg.model_dir, "{name}"))
    return args
"""


def test_a_saved_argument_namespace_needs_no_map_location() -> None:
    assert lines(SAVED_ARGS.format(name="training_args.bin"), "GPD201") == []
    assert lines(SAVED_ARGS.format(name="hparams.pt"), "GPD201") == []
    assert lines(SAVED_ARGS.format(name="model.bin"), "GPD201") == [6]


# a detector head that keeps its upsampling layers, which hold no weights, in a plain list
UPSAMPLERS = """\
import torch.nn as nn
class Pyramid(nn.Module):
    def __init__(self):
        super().__init__()
        self.ups = [nn.Upsample(scale_factor=2), {second}]
    def forward(self, x):
        return self.ups[1](self.ups[0](x))
"""


def test_stateless_layers_in_a_plain_list_lose_nothing() -> None:
    assert lines(UPSAMPLERS.format(second="nn.ReLU()"), "GPD104") == []
    # a weighted layer, or a dropout that needs the parent's .eval(), still does
    assert lines(UPSAMPLERS.format(second="nn.Conv2d(3, 3, 1)"), "GPD104") == [5]
    assert lines(UPSAMPLERS.format(second="nn.Dropout(0.1)"), "GPD104") == [5]


# a vocoder's incremental forward: the first input is made in one of two arms, then moved to the
# model's GPU whichever arm made it
VOCODER = """\
import torch
import torch.nn as nn
class Vocoder(nn.Module):
    def __init__(self, scalar=True):
        super().__init__()
        self.scalar = scalar
        self.out = nn.Conv1d(1, 1, 1)
    def incremental_forward(self, batch, steps, start=None):
        if start is None:
            if self.scalar:
                start = torch.zeros(batch, 1, 1)
            else:
                start = torch.zeros(batch, 1, 8)
            {move}
        x = start
        for _ in range(steps):
            x = self.out(x)
        return x
model = Vocoder().cuda()
"""


def test_a_move_after_the_arms_moves_what_either_arm_made() -> None:
    move = "if next(self.parameters()).is_cuda:\n                start = start.cuda()"
    assert lines(VOCODER.format(move=move), "GPD106") == []
    assert lines(VOCODER.format(move="pass"), "GPD106") == [11, 13]


# a graph model's edge dropout: a host random mask only selects entries of the device graph
EDGE_DROPOUT = """\
import torch
import torch.nn as nn
class Graph(nn.Module):
    def __init__(self, graph, n, keep=0.6):
        super().__init__()
        self.emb = nn.Embedding(n, 8)
        self.graph = graph
        self.keep = keep
    def drop(self, g):
        index, values = g.indices(), g.values()
        mask = (torch.rand(len(values)) + self.keep).int().bool()
        {use}
    def forward(self):
        return torch.sparse.mm(self.drop(self.graph), self.emb.weight)
model = Graph(torch.eye(4).to_sparse(), 4).cuda()
"""


def test_a_host_mask_that_only_indexes_never_needs_the_device() -> None:
    use = "return torch.sparse_coo_tensor(index[:, mask], values[mask] / self.keep, g.size())"
    assert lines(EDGE_DROPOUT.format(use=use), "GPD106") == []
    # the mask multiplied into the device values meets them
    use = "return torch.sparse_coo_tensor(index, values * mask, g.size())"
    assert lines(EDGE_DROPOUT.format(use=use), "GPD106") == [11]


# a factory in forward whose tensor only becomes Python values, a log record or a test
COUNTS = """\
import torch
import torch.nn as nn
class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.seen = []
    def forward(self, x, labels):
        counts = torch.zeros(3)
        for label in labels.tolist():
            counts[label] += 1
        {use}
        return self.fc(x)
model = Classifier().cuda()
"""


def test_a_factory_that_never_meets_the_device_is_right_on_the_host() -> None:
    assert lines(COUNTS.format(use="self.seen.append(counts.tolist())"), "GPD106") == []
    assert lines(COUNTS.format(use="print(counts.max().item())"), "GPD106") == []
    # added to the device input, it does meet it
    assert lines(COUNTS.format(use="x = x + counts.sum()"), "GPD106") == []  # 0-dim: fine
    assert lines(COUNTS.format(use="x = x * counts[:1]"), "GPD106") == [9]


# a plotting helper whose parameter shares the name of the script's list of device tensors
PLOT = """\
import matplotlib.pyplot as plt
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
def plot(step, rewards):
    plt.plot(rewards)
test_rewards = []
rewards = []
for step in range(100):
    rewards.append(torch.rand(1).to(device))
    test_rewards.append(float(step))
    plot(step, {given})
"""


def test_a_parameter_named_like_a_device_list_holds_the_callers_value() -> None:
    assert lines(PLOT.format(given="test_rewards"), "GPD202") == []
    assert lines(PLOT.format(given="rewards"), "GPD202") == [5]


# a tagger with a --local_rank arm (set_device + NCCL) beside a CPU fallback: the hard-coded
# CUDA in forward still fails on a CPU host (or with --no_cuda)
TAGGER = """\
import argparse
import torch
import torch.nn as nn
class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)
    def forward(self, seq):
        valid = torch.zeros(*seq.shape, device="cuda")
        valid[:, :] = seq
        return self.fc(valid)
parser = argparse.ArgumentParser()
parser.add_argument("--no_cuda", action="store_true")
parser.add_argument("--local_rank", type=int, default=-1)
args = parser.parse_args()
if args.local_rank == -1 or args.no_cuda:
    device = torch.device({device})
else:
    torch.cuda.set_device(args.local_rank)
    device = torch.device("cuda", args.local_rank)
    torch.distributed.init_process_group(backend="nccl")
model = Tagger().to(device)
"""


def test_a_per_rank_arm_beside_a_cpu_fallback_still_offers_the_cpu() -> None:
    fallback = '"cuda" if torch.cuda.is_available() and not args.no_cuda else "cpu"'
    assert lines(TAGGER.format(device=fallback), "GPD203") == [9]
    # without a CPU fallback the script runs on GPUs only, one per rank
    assert lines(TAGGER.format(device='"cuda"'), "GPD203") == []


# (a false positive in recall set 18's reduced scripts) a graph encoder samples neighbours in
# two arms, collects them in a list and moves the concatenation
SAMPLED = """\
import numpy as np
import torch
import torch.nn as nn
class Sampler(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Embedding(20, 4)
    def forward(self, neighbours, k):
        picked = []
        for row in neighbours:
            if len(row) >= k:
                one = torch.tensor(np.random.choice(row, k, replace=False))[None]
            else:
                one = torch.tensor(np.random.choice(row, k, replace=True))[None]
            picked.append(one)
        picked = torch.cat(picked, dim=0){move}
        return self.fc(picked)
model = Sampler().cuda()
"""


def test_a_list_of_either_arms_factories_moved_together_is_placed() -> None:
    assert lines(SAMPLED.format(move=".cuda()"), "GPD106") == []
    assert lines(SAMPLED.format(move=""), "GPD106") == [12, 14]


def test_the_per_rank_arm_of_a_local_rank_test_is_a_gpu_job() -> None:
    """The CUDA device the `else:` of `if args.local_rank == -1 ...:` picks runs once per GPU:
    only the forward's device, shared by both arms, fails on a CPU host."""
    fallback = '"cuda" if torch.cuda.is_available() and not args.no_cuda else "cpu"'
    source = TAGGER.format(device=fallback).replace('device="cuda"', "device=seq.device")
    assert lines(source, "GPD203") == []


# a worker per GPU whose only "cpu" is an inference helper's: no fallback in the training path
WORKER = """\
import torch
import torch.distributed as dist
def train_worker(gpu, ngpus):
    torch.cuda.set_device(gpu)
    model = torch.nn.Linear(4, 4)
    model.cuda(gpu)
    dist.init_process_group("nccl", rank=gpu, world_size=ngpus)
def run():
    for gpu in range({count}):
        train_worker(gpu, 2)
def check_outputs():
    return torch.zeros(2, device=torch.device("cpu"))
"""


def test_a_device_count_is_no_cpu_fallback_of_a_per_gpu_worker() -> None:
    assert lines(WORKER.format(count="torch.cuda.device_count()"), "GPD203") == []


# a test's DDP setup that puts each rank on `"cuda:{}".format(rank)`: NCCL has its device
DDP_TEST = """\
import torch
import torch.distributed as dist
def setup(rank, world_size, on_cpu):
    backend = "gloo" if on_cpu else "nccl"
    dist.init_process_group(backend, rank=rank, world_size=world_size)
def run(rank, world_size):
    setup(rank, world_size, False)
    device = torch.device({device})
    model = torch.nn.Linear(4, 4).to(device)
    return model(torch.ones(1, 4, device=device))
"""


def test_a_device_string_formatted_per_rank_gives_nccl_its_device() -> None:
    assert lines(DDP_TEST.format(device='"cuda:{}".format(rank)'), "GPD404") == []
    assert lines(DDP_TEST.format(device='"cuda:%d" % rank'), "GPD404") == []
    # the string assigned to a name, without torch.device around it
    assigned = DDP_TEST.format(device='"cuda:{}".format(rank)').replace(
        'torch.device("cuda:{}".format(rank))', '"cuda:{}".format(rank)'
    )
    assert lines(assigned, "GPD404") == []
    assert lines(DDP_TEST.format(device='"cuda"'), "GPD404") == [5]
