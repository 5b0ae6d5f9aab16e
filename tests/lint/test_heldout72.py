"""Regressions of held-out set 72, reduced and rewritten here: the bug each rule must report,
next to the correct code it must leave alone."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths

# Medical-Transformer (set 72): a `--cuda` option declared and never read, a model wrapped for
# several GPUs under `device_count() > 1`, and CUDA hard-coded everywhere: a GPU-only script
UNREAD = """\
import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--cuda", default="on", type=str)
parser.add_argument("--load", default="model.pth", type=str)
args = parser.parse_args()
{read}
device = torch.device("cuda")
model = nn.Linear(2, 2)
if torch.cuda.device_count() > 1:
    model = nn.DataParallel(model, device_ids=[0, 1]).cuda()
model.to(device)
model.load_state_dict(torch.load(args.load))
for x in [torch.randn(1, 2)]:
    x = x.to(device="cuda")
"""


def test_an_option_never_read_chooses_no_device() -> None:
    assert lines(UNREAD.format(read=""), "GPD203") == []
    assert lines(UNREAD.format(read=""), "GPD201") == []
    # read, the option may turn the GPU off
    read = 'if args.cuda == "off":\n    print("no GPU")'
    assert lines(UNREAD.format(read=read), "GPD203") == [12, 19]
    assert lines(UNREAD.format(read=read), "GPD201") == [17]


# HobbitLong/CMC (set 72): `if args.gpu is not None:` picks a GPU's index, as pytorch/examples'
# ImageNet script does; the model moves with an unconditional `.cuda()`
GPU_INDEX = """\
import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--gpu", default=None, type=int)
parser.add_argument("--model_path", type=str)
args = parser.parse_args()

model = nn.Linear(8, 2)
ckpt = torch.load(args.model_path)
model.load_state_dict(ckpt["model"])
model = model.cuda()
for x in [torch.randn(1, 8)]:
    if {test}:
        x = x.cuda(args.gpu, non_blocking=True)
"""


def test_a_gpu_index_test_is_no_cpu_path() -> None:
    assert lines(GPU_INDEX.format(test="args.gpu is not None"), "GPD201") == []
    assert lines(GPU_INDEX.format(test="not args.cpu"), "GPD201") == [12]


# KGAT-pytorch (set 72): a CUDA sort in a `try:` whose handler does it on the CPU
TRIED = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def rank(scores):
    try:
        _, idx = torch.sort(scores.cuda(), descending=True)
    except {caught}:
        {handled}
    return idx.cpu()
"""


def test_cuda_in_a_try_with_a_cpu_fallback() -> None:
    fallback = "_, idx = torch.sort(scores, descending=True)"
    assert lines(TRIED.format(caught="Exception", handled=fallback), "GPD203") == []
    assert lines(TRIED.format(caught="Exception", handled="raise"), "GPD203") == [8]
    assert lines(TRIED.format(caught="KeyError", handled=fallback), "GPD203") == [8]


# ZhixiuYe/NER-pytorch (set 72): the CPU arm of `if use_gpu:` calls a model method whose own
# `.cuda()` sits under the object's flag; that arm still runs on the CPU
TAGGER = """\
import torch
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self, use_gpu=False):
        super().__init__()
        self.use_gpu = use_gpu
        self.emb = nn.Embedding(10, 4)

    def score(self, x):
        r = torch.zeros(1)
        if self.use_gpu:
            r = r.cuda()
        return self.emb(x).sum() + r

    def forward(self, x):
        return self.emb(x)


use_gpu = torch.cuda.is_available()
model = Tagger(use_gpu=use_gpu)
if use_gpu:
    model.cuda()
x = torch.LongTensor([1, 2])
if use_gpu:
    loss = model.score(x.cuda())
else:
    loss = model.score(x)
words = torch.LongTensor([1, 2])
if use_gpu:
    out = model(words.cuda())
else:
    out = model(words)
"""


def test_a_cpu_arm_calling_a_method_with_its_own_gpu_flag() -> None:
    assert lines(TAGGER, "GPD101") == []
    unguarded = TAGGER.replace(
        "        if self.use_gpu:\n            r = r.cuda()", "        r = r.cuda()"
    )
    assert lines(unguarded, "GPD101") == [33]  # CUDA on that arm: the test picks a GPU


# ivaste/DeepLearningLAB (set 72): an optimizer's state restored before the move, but the
# optimizer is built again before any step
REBUILT = """\
import torch
import torch.nn as nn
import torch.optim as optim

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Linear(1, 1)
optimizer = optim.Adam(net.parameters(), lr=1e-3)
optimizer.load_state_dict(torch.load("optimizer_state.torch", map_location=device))
net = net.to(device)
{between}
optimizer = optim.Adam(net.parameters(), lr=1e-2)
"""


def test_a_restored_optimizer_built_again_before_any_step() -> None:
    assert lines(REBUILT.format(between="print(net(torch.ones(1, device=device)))"), "GPD302") == []
    assert lines(REBUILT.format(between="optimizer.step()"), "GPD302") == [8]


def test_cuda_in_a_try_with_a_cpu_fallback_in_a_helper_of_another_file(tmp_path: Path) -> None:
    fallback = "_, idx = torch.sort(scores, descending=True)"
    helper = TRIED.format(caught="Exception", handled=fallback).replace(
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n', ""
    )
    script = (
        "import torch\nfrom metrics import rank\n\n"
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        "print(rank(torch.randn(3, 5)))\n"
    )
    (tmp_path / "metrics.py").write_text(helper)
    (tmp_path / "main.py").write_text(script)
    config = LintConfig(select=("GPD203",))
    assert not lint_paths([str(tmp_path / "main.py")], config, jobs=1, use_cache=False).findings
    (tmp_path / "metrics.py").write_text(helper.replace("except Exception", "except KeyError"))
    found = lint_paths([str(tmp_path / "main.py")], config, jobs=1, use_cache=False).findings
    assert [(Path(f.path).name, f.line) for f in found] == [("metrics.py", 7)]


# cfregly/ai-performance-engineering#10 (recall 72/05): the backend is an option that may name
# NCCL; every rank then puts its tensor on "cuda", the same GPU
BENCHMARK = """\
import argparse

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--backend", type=str, default="gloo", choices={choices})
args = parser.parse_args()
dist.init_process_group(backend=args.backend, init_method="env://")
device = "cuda" if args.backend == "nccl" else "cpu"
tensor = torch.ones(1024, device=device)
dist.all_reduce(tensor)
"""


def test_a_backend_option_that_may_name_nccl() -> None:
    assert lines(BENCHMARK.format(choices='["gloo", "nccl"]'), "GPD404") == [9]
    assert lines(BENCHMARK.format(choices='["gloo", "mpi"]'), "GPD404") == []


# open-mmlab/mmdetection#638 (recall 72/14): OpenMMLab's MMDataParallel scatters the host batch
# onto the GPUs itself, as nn.DataParallel does
MM_PARALLEL = """\
import torch
from mmcv.parallel import MMDataParallel


def train_detector(model, dataset, cfg):
    data_loader = torch.utils.data.DataLoader(dataset, batch_size=2)
    model = {wrapped}.cuda()
    for data in data_loader:
        losses = model(img=data)
"""


def test_mmcv_data_parallel_scatters_host_batches() -> None:
    wrapped = "MMDataParallel(model, device_ids=range(cfg['gpus']))"
    assert lines(MM_PARALLEL.format(wrapped=wrapped), "GPD101") == []
    assert lines(MM_PARALLEL.format(wrapped="model"), "GPD101") == [9]
