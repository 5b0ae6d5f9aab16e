"""Precision regressions from the thirty-fourth held-out set (public repositories), reduced and
rewritten here: correct code each rule must leave alone, next to the bug it still finds."""

from __future__ import annotations

from lint_lines import lines

# YOLO's box helpers: the NumPy arm runs only for arrays, whatever the callers pass
DISPATCH = """\
import numpy as np
import torch


def corners(b):
    out = {copy}
    out[:, 0] = b[:, 0] - b[:, 2] / 2
    return out


dev = torch.device("cuda")
head = torch.nn.Linear(4, 4).to(dev)
pred = head(torch.randn(5, 4).to(dev))
boxes = corners(pred)
"""


def test_the_numpy_arm_of_a_tensor_test_holds_no_tensor() -> None:
    guarded = "b.clone() if isinstance(b, torch.Tensor) else np.copy(b)"
    assert lines(DISPATCH.format(copy=guarded), "GPD202") == []
    negated = "np.copy(b) if not torch.is_tensor(b) else b.clone()"
    assert lines(DISPATCH.format(copy=negated), "GPD202") == []
    # the tensor arm still holds the tensor: NumPy there converts it (a helper called once:
    # reported where it converts)
    wrong_arm = "np.copy(b) if isinstance(b, torch.Tensor) else b.copy()"
    assert lines(DISPATCH.format(copy=wrong_arm), "GPD202") == [6]
    assert lines(DISPATCH.format(copy="np.copy(b)"), "GPD202") == [6, 7]


STATEMENTS = """\
import numpy as np
import torch


def to_image(t):
    if isinstance(t, (np.ndarray, list)):
        return np.asarray(t)
    {tail}


dev = torch.device("cuda")
net = torch.nn.Conv2d(3, 3, 1).to(dev)
image = to_image(net(torch.rand(1, 3, 8, 8).to(dev)))
"""


def test_an_if_statement_narrows_its_arms_only() -> None:
    assert lines(STATEMENTS.format(tail="return t.detach().cpu().numpy()"), "GPD202") == []
    # after the test, the tensor is still the tensor: the unguarded conversion is the bug
    assert lines(STATEMENTS.format(tail="return t.numpy()"), "GPD202") == [8]


# YOLO's attempt_load: the map_location parameter is handed on; its callers pass their device
HANDED_ON = """\
import torch


class Ensemble(torch.nn.Module):
    def __init__(self, device=None):
        super().__init__()
        self.device = device if device else torch.device("cpu")


def attempt_load(weights, map_location=None):
    ckpt = torch.load(weights, map_location=map_location)
    return ckpt["model"].float().eval()
{call}
"""


def test_a_map_location_parameter_handed_on_is_the_callers_choice() -> None:
    assert lines(HANDED_ON.format(call=""), "GPD201") == []
    placed = 'model = attempt_load("best.pt", map_location=torch.device("cpu"))'
    assert lines(HANDED_ON.format(call=placed), "GPD201") == []
    # a call of this file that leaves it out: None on that path, where the CPU is offered
    left_out = 'model = attempt_load("best.pt")'
    assert lines(HANDED_ON.format(call=left_out), "GPD201") == [11]


# YOLO's train_aux.py: only the main process reads the run id back
MAIN_RANK = """\
import argparse
import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--local_rank", type=int, default=-1)
a = p.parse_args()
rank = dist.get_rank() if a.local_rank != -1 else -1
if a.local_rank != -1:
    torch.cuda.set_device(a.local_rank)
    dev = torch.device("cuda", a.local_rank)
    dist.init_process_group(backend="nccl", init_method="env://")
if {test}:
    run_id = torch.load("last.pt").get("run_id")
"""


def test_a_load_on_the_main_process_alone_crowds_no_gpu() -> None:
    assert lines(MAIN_RANK.format(test="rank in [-1, 0]"), "GPD201") == []
    assert lines(MAIN_RANK.format(test="dist.get_rank() == 0"), "GPD201") == []
    # every rank but the main one: they all restore onto cuda:0
    assert lines(MAIN_RANK.format(test="rank not in [-1, 0]"), "GPD201") == [14]
    assert lines(MAIN_RANK.format(test="a.local_rank != -1"), "GPD201") == [14]


# the Cookbook's GPU chapter: it displays the query, shows a tensor moved back, then uses cuda:0
GPU_CHAPTER = """\
import torch
{query}
x = torch.tensor([1.5, 2.0])
device = torch.device("cuda:0")
x = x.to(device)
device = torch.device("cpu")
x = x.to(device)
device = torch.device("cuda:0")
w = torch.ones(2, 2, device=device)
print(torch.cuda.get_device_name(0))
"""


def test_a_gpu_chapter_that_shows_a_move_back_has_no_cpu_path() -> None:
    for query in ("torch.cuda.is_available()", "torch.cuda.device_count()", ""):
        source = GPU_CHAPTER.format(query=query)
        assert lines(source, "GPD203") == []
        assert lines(source, "GPD205") == []
    # a CPU device chosen before any GPU: the script runs on the CPU too
    chosen_first = GPU_CHAPTER.format(query='device = torch.device("cpu")')
    assert lines(chosen_first, "GPD203") == [4, 8]
    # a flag only printed is a display too (ASTGCN, set 69: `USE_CUDA` printed, the device
    # hard-coded)
    shown = GPU_CHAPTER.format(query="use_gpu = torch.cuda.is_available()\nprint(use_gpu)")
    assert lines(shown, "GPD205") == []
    # a fallback, not a display: the file offers the CPU
    query = 'use_gpu = torch.cuda.is_available()\nhost = torch.device("cuda" if use_gpu else "cpu")'
    assert lines(GPU_CHAPTER.format(query=query), "GPD205") == [11]


# a CPU course notebook: it shows the query, then one demo cell moves a tensor with `.cuda()`
CPU_COURSE = """\
import torch
torch.cuda.is_available()
a = torch.rand(5, 4)
a = a.cuda()
print(a)
"""


def test_a_displayed_query_in_a_course_that_commits_to_no_gpu_is_a_cpu_path() -> None:
    assert lines(CPU_COURSE, "GPD203") == [4]
