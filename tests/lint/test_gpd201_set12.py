"""GPD201 regressions from the twelfth held-out set, reduced and rewritten here: the ImageNet
example's resume (an unmapped load only where one process drives every GPU) and a notebook that
caches its models through its own ``fit(..., model_file)``; next to the variants that stay
reported."""

from __future__ import annotations

import json

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_source


def lines(source: str, path: str = "x.py") -> list[int]:
    result = lint_source(source, path, LintConfig(select=("GPD201",)))
    assert result.error is None  # a source that does not parse reports nothing
    return [finding.line for finding in result.findings]


# one process per GPU (mp.spawn), unless --gpu is left out: then one process drives them all
RESUME = """\
import os
import torch
import torch.distributed as dist

def main_worker(gpu, args):
    args.gpu = gpu
    dist.init_process_group(backend=args.dist_backend, init_method=args.dist_url)
    if args.gpu is not None:
        torch.cuda.set_device(args.gpu)
        model.cuda(args.gpu)
    if os.path.isfile(args.resume):
{load}
        model.load_state_dict(checkpoint["state_dict"])
"""


def resume(load: str) -> str:
    body = "\n".join("        " + line for line in load.strip("\n").splitlines())
    return RESUME.format(load=body)


SPLIT = """\
if args.gpu is None:
    checkpoint = torch.load(args.resume)
else:
    loc = "cuda:{}".format(args.gpu)
    checkpoint = torch.load(args.resume, map_location=loc)
"""


def test_the_unmapped_arm_of_gpu_is_none_is_one_process_for_every_gpu() -> None:
    assert lines(resume(SPLIT)) == []


def test_the_same_split_written_with_is_not_none() -> None:
    load = """\
if args.gpu is not None:
    checkpoint = torch.load(args.resume, map_location=f"cuda:{args.gpu}")
else:
    checkpoint = torch.load(args.resume)
"""
    assert lines(resume(load)) == []


def test_a_gpu_is_none_arm_alone_has_no_rank_device() -> None:
    load = """\
checkpoint = None
if gpu is None:
    checkpoint = torch.load(args.resume)
"""
    assert lines(resume(load)) == []


def test_another_none_test_whose_other_arm_maps_the_same_path() -> None:
    load = """\
if args.placement is None:
    checkpoint = torch.load(args.resume)
else:
    checkpoint = torch.load(args.resume, map_location=args.placement)
"""
    assert lines(resume(load)) == []


def test_a_plain_unmapped_resume_stays_reported() -> None:
    # pytorch/examples imagenet before its fix; EfficientNet-PyTorch's copy of it
    assert lines(resume("checkpoint = torch.load(args.resume)")) == [12]


def test_the_arm_where_the_rank_device_is_set_stays_reported() -> None:
    load = """\
if args.gpu is None:
    checkpoint = torch.load(args.resume, map_location="cuda:0")
else:
    checkpoint = torch.load(args.resume)
"""
    assert lines(resume(load)) == [15]


def test_an_unrelated_none_test_stays_reported() -> None:
    load = """\
if args.pretrained is None:
    checkpoint = torch.load(args.resume)
else:
    checkpoint = torch.load(args.pretrained, map_location=f"cuda:{args.gpu}")
"""
    assert lines(resume(load)) == [13]


def test_a_none_arm_of_a_loop_else_is_not_an_if_arm() -> None:
    load = """\
for attempt in range(3):
    if args.gpu is None:
        break
else:
    checkpoint = torch.load(args.resume)
"""
    assert lines(resume(load)) == [16]


# examples/rainbow_dalle.ipynb: a helper trains, then saves to the file it is given
FIT = """\
import os
import torch
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")

def fit(model, opt, epochs, model_file, trainer):
    for _ in range(epochs):
        trainer(model, opt)
    torch.save(model.state_dict(), model_file)
    return model

vae = Net().to(device)
vae_model_file = "data/rainbow_vae.model"
if not os.path.exists(vae_model_file):
    vae = fit(vae, opt, 500, {arguments})
else:
    vae.load_state_dict(torch.load(vae_model_file))
"""


def test_a_cache_saved_through_the_helpers_parameter() -> None:
    assert lines(FIT.format(arguments="vae_model_file, train_vae_batch")) == []


def test_the_argument_passed_by_keyword() -> None:
    assert lines(FIT.format(arguments="trainer=train_vae_batch, model_file=vae_model_file")) == []


def test_the_helper_given_another_file_stays_reported() -> None:
    assert lines(FIT.format(arguments='"data/other.model", train_vae_batch')) == [16]


def test_a_helper_that_saves_to_a_file_of_its_own_stays_reported() -> None:
    source = FIT.replace("torch.save(model.state_dict(), model_file)", 'torch.save(model, "x.pt")')
    assert lines(source.format(arguments="vae_model_file, train_vae_batch")) == [16]


def test_the_parameters_default_when_the_call_leaves_it_out() -> None:
    source = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

def train(model, path="vae.pt"):
    torch.save(model.state_dict(), path)

train(model)
model.load_state_dict(torch.load("vae.pt"))
"""
    assert lines(source) == []


def test_a_call_above_the_helpers_def() -> None:
    source = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

def main():
    train(model, "vae.pt")
    model.load_state_dict(torch.load("vae.pt"))

def train(model, path):
    with open(path, "wb") as f:
        torch.save(model.state_dict(), f)
"""
    assert lines(source) == []


# a path template counts as this run's only when the save comes first, as for torch.save itself
TEMPLATE = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

def fit(model, model_file):
    torch.save(model.state_dict(), model_file)

{first}
{second}
"""
LOAD = 'state = torch.load(f"ckpt_{args.start}.pt")'
SAVE = 'for epoch in range(3):\n    fit(model, f"ckpt_{epoch}.pt")'


def test_a_template_saved_by_the_helper_before_the_load() -> None:
    assert lines(TEMPLATE.format(first=SAVE, second=LOAD)) == []


def test_a_template_loaded_above_the_helpers_saves_stays_reported() -> None:
    assert lines(TEMPLATE.format(first=LOAD, second=SAVE)) == [7]


def test_the_notebook_itself() -> None:
    cells = [
        'import os\nimport torch\ndevice = torch.device("cuda:0" if torch.cuda.is_available() '
        'else "cpu")',
        "def fit(model, opt, model_file):\n    opt.step()\n"
        "    torch.save(model.state_dict(), model_file)\n    return model",
        "vae = Net().to(device)",
        'vae_model_file = "data/rainbow_vae.model"\nif not os.path.exists(vae_model_file):\n'
        "    vae = fit(vae, opt, vae_model_file)\nelse:\n"
        "    vae.load_state_dict(torch.load(vae_model_file))",
        'dalle_model_file = "data/rainbow_dalle.model"\nif not os.path.exists(dalle_model_file):\n'
        "    dalle = fit(dalle, opt, dalle_model_file)\nelse:\n"
        "    dalle.load_state_dict(torch.load(dalle_model_file))",
    ]
    notebook = {
        "cells": [
            {"cell_type": "code", "metadata": {}, "source": cell, "outputs": []} for cell in cells
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    assert lines(json.dumps(notebook), "nb.ipynb") == []
    # a cell that loads another file is still an outside checkpoint
    cells.append('vae.load_state_dict(torch.load("data/pretrained.model"))')
    notebook["cells"] = [
        {"cell_type": "code", "metadata": {}, "source": cell, "outputs": []} for cell in cells
    ]
    assert lines(json.dumps(notebook), "nb.ipynb") == [1]
