"""Regressions of held-out set 76, reduced and rewritten here: the correct code each rule must
leave alone, next to the bug it must still report."""

from __future__ import annotations

from lint_lines import lines

# FUNIT and PointRCNN (set 76): `--multigpus` / `--mgpus` choose DataParallel over several GPUs
# or one GPU; the CPU is never a choice
SEVERAL = """\
import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("{flag}", action="store_true")
parser.add_argument("--resume", default="")
opts = parser.parse_args()

model = nn.Linear(4, 2)
model.cuda()
if opts.{dest}:
    model = nn.DataParallel(model)
if opts.resume:
    model.load_state_dict(torch.load(opts.resume))
"""


def test_a_switch_between_one_gpu_and_several_is_no_cpu_path() -> None:
    for flag, dest in (("--multigpus", "multigpus"), ("--mgpus", "mgpus")):
        source = SEVERAL.format(flag=flag, dest=dest)
        assert lines(source, "GPD203") == []
        assert lines(source, "GPD201") == []
    # a switch named for the CPU is one
    cpu = SEVERAL.format(flag="--cpu", dest="cpu")
    assert lines(cpu, "GPD203") == [12]
    assert lines(cpu, "GPD201") == [16]
