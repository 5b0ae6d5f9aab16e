"""Recall regressions from the eighteenth recall set (real bug reports), reduced and rewritten
here: the bug each rule must report, next to the correct code it must leave alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths

# report 07: a spawned worker joins an NCCL group chosen through a variable, and no rank binds
# its own GPU, so every rank's `.cuda()` lands on cuda:0
WORKER = """\
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
def join(rank, world):
    backend = {backend}
    dist.init_process_group("tcp://localhost:23456", backend=backend, rank=rank, world_size=world)
    {bind}
    dist.all_reduce(torch.zeros(1).cuda())
if __name__ == "__main__":
    mp.spawn(join, nprocs=2, args=(2,))
"""


@pytest.mark.parametrize(
    "backend",
    [
        '"nccl"',
        "dist.Backend.NCCL",
        "dist.Backend.NCCL if torch.cuda.is_available() else dist.Backend.GLOO",
        '"nccl" if torch.cuda.is_available() else "gloo"',
    ],
)
def test_an_nccl_backend_held_in_a_variable_needs_a_rank_device(backend: str) -> None:
    assert lines(WORKER.format(backend=backend, bind="pass"), "GPD404") == [6]
    bound = WORKER.format(backend=backend, bind="torch.cuda.set_device(rank)")
    assert lines(bound, "GPD404") == []


def test_a_gloo_backend_in_a_variable_needs_no_rank_device() -> None:
    assert lines(WORKER.format(backend='"gloo"', bind="pass"), "GPD404") == []


# report 02: a generator helper loads GPU-trained weights and is called in both arms of the
# script's device switch; the CPU arm is where the load fails
BOTH_ARMS = """\
import argparse
import torch
import torch.nn as nn
parser = argparse.ArgumentParser()
parser.add_argument("--no_gpu", action="store_true")
parser.add_argument("--weights", default="generator.pth")
opt = parser.parse_args()
def create_generator(opt):
    net = nn.Linear(4, 4)
    net.load_state_dict(torch.load(opt.weights{mapped}))
    return net
if opt.no_gpu:
    generator = create_generator(opt)
else:
    generator = create_generator(opt).cuda()
"""


def test_a_helper_called_on_both_paths_of_a_device_switch_is_judged_on_each() -> None:
    assert lines(BOTH_ARMS.format(mapped=""), "GPD201") == [10]
    assert lines(BOTH_ARMS.format(mapped=', map_location="cpu"'), "GPD201") == []
    # called only on the GPU path, the load runs where CUDA exists
    gpu_only = BOTH_ARMS.format(mapped="").replace(
        "    generator = create_generator(opt)\n", "    generator = None\n"
    )
    assert lines(gpu_only, "GPD201") == []


# report 02 across files: the helper with the load lives in utils.py, which offers no CPU path
# itself; the validation script that calls it in both arms does
UTILS = """\
import torch
import torch.nn as nn
def create_generator(opt):
    net = nn.Linear(4, 4)
    net.load_state_dict(torch.load(opt.load_name{mapped}))
    return net
"""
VALIDATION = """\
import argparse
import torch
import utils
parser = argparse.ArgumentParser()
parser.add_argument("--no_gpu", action="store_true")
parser.add_argument("--load_name", default="generator.pth")
opt = parser.parse_args()
if opt.no_gpu:
    generator = utils.create_generator(opt)
else:
    generator = utils.create_generator(opt).cuda()
"""


def _project(tmp_path: Path, utils: str, validation: str) -> list[tuple[str, int, str]]:
    (tmp_path / "utils.py").write_text(utils)
    (tmp_path / "validation.py").write_text(validation)
    result = lint_paths([str(tmp_path)], LintConfig(select=("GPD201",)))
    return sorted({(Path(f.path).name, f.line, f.code) for r in result.files for f in r.findings})


def test_a_load_in_another_files_helper_is_judged_by_the_calling_scripts_cpu_path(
    tmp_path: Path,
) -> None:
    found = _project(tmp_path, UTILS.format(mapped=""), VALIDATION)
    assert found == [("utils.py", 5, "GPD201")]
    assert lines(UTILS.format(mapped=""), "GPD201") == []  # utils.py alone offers no CPU path
    mapped = UTILS.format(mapped=', map_location="cpu"')
    assert _project(tmp_path, mapped, VALIDATION) == []
    # a caller that offers no CPU path runs the helper on GPUs only
    gpu_only = VALIDATION.replace("if opt.no_gpu:", "if False:")
    gpu_only = gpu_only.replace('parser.add_argument("--no_gpu", action="store_true")\n', "")
    assert _project(tmp_path, UTILS.format(mapped=""), gpu_only) == []
    # a helper file that also saves that checkpoint: a training run (on a GPU) wrote it, unless
    # this script saves through it too, and then loads back its own run's file
    saving = UTILS.format(mapped="") + "def save(net, opt):\n    torch.save(net, opt.load_name)\n"
    assert _project(tmp_path, saving, VALIDATION) == [("utils.py", 5, "GPD201")]
    resaving = VALIDATION + "utils.save(generator, opt)\n"
    assert _project(tmp_path, saving, resaving) == []


# report 19: the optimizer's state is restored in __main__, and only train() moves the model
RESUME_THEN_TRAIN = """\
import torch
use_cuda = torch.cuda.is_available()
def train(model, optimizer):
    if use_cuda:
        model = model.cuda()
    for x in range(3):
        optimizer.zero_grad()
        optimizer.step()
if __name__ == "__main__":
    model = torch.nn.Linear(4, 2)
    {early}
    optimizer = torch.optim.Adam(model.parameters())
    checkpoint = torch.load("checkpoint.pth", map_location="cpu")
    optimizer.load_state_dict(checkpoint["optimizer"])
    train(model, optimizer)
"""


def test_optimizer_state_loaded_before_a_called_function_moves_the_model() -> None:
    assert lines(RESUME_THEN_TRAIN.format(early="pass"), "GPD302") == [14]
    moved_first = RESUME_THEN_TRAIN.format(early="model = model.cuda() if use_cuda else model")
    assert lines(moved_first, "GPD302") == []
