"""Regressions of held-out set 66, reduced and rewritten here: the bug each rule must report,
next to the correct code it must leave alone."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines, project_lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths

# pytorch-distributed-NLP (set 66): an Accelerate script for several GPUs, whose
# `torch.cuda.device_count()` is the world size of an average, not a CPU fallback
ACCELERATE = """\
import torch
import torch.distributed as dist
from accelerate import Accelerator


def mean_loss(loss):
    out = loss.clone()
    dist.all_reduce(out, op=dist.ReduceOp.SUM)
    {average}
    return out


def main(data):
    accelerator = Accelerator()
    net = torch.nn.Linear(4, 1).cuda()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    net, opt = accelerator.prepare(net, opt)
    for batch in data:
        loss = torch.nn.functional.mse_loss(net(batch["x"].cuda()), batch["y"].cuda())
        accelerator.backward(loss)
        opt.step()
        print(mean_loss(loss.detach()).item())
    if accelerator.is_main_process:
        torch.save(net.state_dict(), "best.pt")
    net.load_state_dict(torch.load("pretrained.pt"))


main([])
"""


def test_a_world_size_average_is_no_cpu_fallback() -> None:
    assert lines(ACCELERATE.format(average="out /= torch.cuda.device_count()"), "GPD203") == []
    # a real fallback still makes the hard-coded `.cuda()` calls bugs
    fallback = 'out /= 2\n    device = "cuda" if torch.cuda.is_available() else "cpu"'
    assert lines(ACCELERATE.format(average=fallback), "GPD203") == [16, 20, 20]


def test_every_accelerate_rank_loads_onto_the_gpu_the_checkpoint_was_saved_from() -> None:
    source = ACCELERATE.format(average="out /= torch.cuda.device_count()")
    assert lines(source, "GPD201") == [25]
    # one process (no collective): cuda:0 is its own GPU
    single = source.replace("    dist.all_reduce(out, op=dist.ReduceOp.SUM)\n", "")
    assert lines(single, "GPD201") == []


# Domain-Specific-Small-Language-Models (set 66): a BatchEncoding moved in place while printed
ENCODING = """\
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained("gpt2")
model = AutoModelForCausalLM.from_pretrained("gpt2")
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model.to(device)
inputs = tokenizer("Once upon a time", return_tensors="pt")
{shown}
out = model(**inputs)
"""


def test_a_batch_encoding_moved_inside_an_expression_moves_in_place() -> None:
    assert lines(ENCODING.format(shown="print(inputs.to(device))"), "GPD101") == []
    assert lines(ENCODING.format(shown="print(inputs)"), "GPD101") == [10]


# Pytorch-tutorial (set 66): scikit-learn's train_test_split only indexes the tensors
SPLIT = """\
import torch
from sklearn.model_selection import train_test_split
from sklearn.metrics import mean_squared_error

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
features = torch.randn(100, 2).to(device)
labels = torch.randn(100).to(device)
{call}
"""


def test_train_test_split_keeps_device_tensors_where_they_are() -> None:
    split = "x_train, x_test, y_train, y_test = train_test_split(features, labels)"
    assert lines(SPLIT.format(call=split), "GPD202") == []
    assert lines(SPLIT.format(call="mean_squared_error(labels, labels)"), "GPD202") == [8]


# pytorch-distributed-NLP (set 66): a trainer's method saves to `self.args.ckpt_path`, the
# script reloads `args.ckpt_path` after training, in the same run
TRAINER = """\
import argparse

import torch


class Trainer:
    def __init__(self, args, model):
        self.args, self.model = args, model

    def train(self):
        torch.save(self.model.state_dict(), self.args.ckpt_path)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ckpt_path", default="best.pt")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torch.nn.Linear(4, 1).to(device)
    {train}
    model.load_state_dict(torch.load(args.ckpt_path))


main()
"""


def test_a_checkpoint_the_trainer_saved_to_the_scripts_settings_path() -> None:
    assert lines(TRAINER.format(train="Trainer(args, model).train()"), "GPD201") == []
    # without the run's own save, the path may hold a GPU run's checkpoint
    other = TRAINER.replace("self.args.ckpt_path", "self.args.out_path")
    assert lines(other.format(train="Trainer(args, model).train()"), "GPD201") == [21]


# pytorch-Deep-Learning (recall set 66): a VAE's device means handed to scikit-learn's t-SNE
ESTIMATOR = """\
import torch
from sklearn.decomposition import PCA
from sklearn.manifold import TSNE

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
encoder = torch.nn.Linear(4, 2).to(device)
with torch.no_grad():
    mu = encoder(torch.randn(8, 4).to(device)){cpu}
embedding = TSNE(n_components=2).fit_transform(mu)
pca = PCA(2)
pca.fit(mu)
"""


def test_a_scikit_learn_estimator_converts_what_it_fits() -> None:
    assert lines(ESTIMATOR.format(cpu=""), "GPD202") == [9, 11]
    assert lines(ESTIMATOR.format(cpu=".cpu()"), "GPD202") == []


# denoising-diffusion-pytorch (recall set 66): a trainer's load(milestone) beside its
# save(milestone), an API that restores what any earlier run saved
MILESTONES = """\
from pathlib import Path

import torch


class Trainer:
    def __init__(self, model):
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model = model.to(self.device)
        self.results_folder = Path("./results")

    def save(self, milestone):
        torch.save(self.model.state_dict(), str(self.results_folder / f"model-{{milestone}}.pt"))

    def load(self, milestone):
        data = torch.load(str(self.results_folder / f"model-{{milestone}}.pt"){mapped})
        self.model.load_state_dict(data)
"""


def test_a_trainers_load_method_restores_any_runs_checkpoint() -> None:
    assert lines(MILESTONES.format(mapped=""), "GPD201") == [16]
    assert lines(MILESTONES.format(mapped=", map_location=self.device"), "GPD201") == []


# spd_learn (recall set 66): a module keeps the device it was given, the CPU by default
KEPT_DEVICE = """\
import torch
import torch.nn as nn


class WaveletConv(nn.Module):
    def __init__(self, {name}=None):
        super().__init__()
        self.{name} = {name} if {name} is not None else {default}
        self.weight = nn.Parameter(torch.randn(4, 4))

    def forward(self, x):
        return (x @ self.weight) * self.{name}


model = WaveletConv().to("cuda")
print(model(torch.randn(2, 4, device="cuda")))
"""


def test_a_device_kept_on_the_module_is_no_tensor_attribute() -> None:
    kept = KEPT_DEVICE.format(name="device", default='torch.device("cpu")')
    assert lines(kept, "GPD105") == []
    assert lines(KEPT_DEVICE.format(name="scale", default="torch.zeros(4)"), "GPD105") == [8]


def test_a_load_method_that_names_no_path_reads_back_the_runs_own() -> None:
    # `load_best()` has no say in the path: it reads what `save()` wrote for this run
    best = MILESTONES.replace("def load(self, milestone):", "def load_best(self):")
    best = best.replace('f"model-{{milestone}}.pt"', 'f"model-best.pt"')
    assert lines(best.format(mapped=""), "GPD201") == []


# the second read of the fifteenth session: look-alikes the new readings must not swallow
PLAIN_WEIGHT = """\
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.w = torch.randn(4, 4)

    def forward(self, x):
        return {use}


model = M().cuda()
out = model(torch.randn(4, 4).cuda())
"""


def test_a_weight_used_before_the_move_of_what_it_made_is_reported() -> None:
    # the matmul meets the input on the host weight's device before `.to()` runs
    assert lines(
        PLAIN_WEIGHT.format(use="torch.matmul(self.w, self.lin(x)).to(x.device)"), "GPD105"
    ) == [9]
    # a dtype conversion is no move
    assert lines(
        PLAIN_WEIGHT.format(use="self.lin(x) * torch.exp(self.w).to(x.dtype)"), "GPD105"
    ) == [9]
    # a function of the weight alone, moved before it meets anything, is placed by hand
    assert (
        lines(PLAIN_WEIGHT.format(use="self.lin(x) * torch.exp(self.w).to(x.device)"), "GPD105")
        == []
    )


SCALED = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(4, device=device)
scale = torch.ones(4).cuda() * {times}
print(x * scale)
"""


def test_only_an_availability_test_guards_a_repeated_sequence() -> None:
    # a count of GPUs scales the tensor: the `.cuda()` still runs on a CPU-only host
    assert lines(SCALED.format(times="n_gpu"), "GPD203") == [5]
    assert lines(SCALED.format(times="torch.cuda.is_available()"), "GPD203") == [5]


SAVER = """\
import torch


class ModelCheckpoint:
    def __init__(self, path, model):
        self.path, self.model = path, model

    def update(self, loss):
        torch.save(self.model.state_dict(), self.path)
"""

DISTILL = """\
import os

import torch
import torch.nn as nn

import utils

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 4).to(device)
checkpoint = utils.ModelCheckpoint(os.path.join("runs", "best_model.pt"), model)
for epoch in range(3):
    checkpoint.update(model(torch.randn(2, 4, device=device)).sum().item())
teacher = nn.Linear(4, 4).to(device)
teacher.load_state_dict(torch.load(os.path.join({path})))
"""


def test_a_saver_built_with_another_path_does_not_excuse_a_load(tmp_path: Path) -> None:
    # the saver's path and the teacher's share only `os.path.join`
    files = {"utils.py": SAVER, "main.py": DISTILL.format(path='"pretrained", "teacher.pt"')}
    assert project_lines(tmp_path, files, "GPD201") == [14]
    files["main.py"] = DISTILL.format(path='"runs", "best_model.pt"')
    assert project_lines(tmp_path, files, "GPD201") == []


NORM = """\
import torch
import torch.nn as nn


class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.mean = torch.zeros(3)

    def forward(self, x):
        return self.lin(x - self.mean)
"""

INFER = """\
import torch
from model import Norm

{line}
net = Norm().to("cuda")
print(net(torch.randn(2, 3, device="cuda")))
"""


def norm_lines(tmp_path: Path, line: str) -> list[int]:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "model.py").write_text(NORM)
    (tmp_path / "infer.py").write_text(INFER.format(line=line))
    config = LintConfig(select=("GPD105",))
    result = lint_paths([str(tmp_path / "model.py")], config, jobs=1, use_cache=False)
    return [finding.line for finding in result.findings]


def test_a_commented_out_cuda_default_in_an_importer_changes_nothing(tmp_path: Path) -> None:
    assert norm_lines(tmp_path, "# torch.set_default_tensor_type(torch.cuda.HalfTensor)") == [9]
    assert norm_lines(tmp_path, "torch.set_default_tensor_type(torch.cuda.HalfTensor)") == []
