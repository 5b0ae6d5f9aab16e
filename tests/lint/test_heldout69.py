"""Regressions of held-out set 69, reduced and rewritten here: the bug each rule must report,
next to the correct code it must leave alone."""

from __future__ import annotations

from lint_lines import lines

# hedwig (set 69): the trainer saves its best model to `self.snapshot_path` while it trains;
# the script reloads `trainer.snapshot_path` after `trainer.train()`: this run's own file
SNAPSHOT = """\
import os
import time

import torch


class Trainer:
    def __init__(self, model, save_dir):
        self.model = model
        self.snapshot_path = os.path.join(save_dir, "%s.pt" % time.strftime("%H%M%S"))

    def train(self):
        torch.save(self.model, self.{saved})


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
trainer = {built}
{trained}
model = torch.load(trainer.snapshot_path)
"""


def test_a_path_the_object_saved_to_while_it_trained() -> None:
    built = 'Trainer(torch.nn.Linear(4, 2).to(device), "saves")'
    found = lines(
        SNAPSHOT.format(saved="snapshot_path", built=built, trained="trainer.train()"), "GPD201"
    )
    assert found == []
    # the trainer saves elsewhere: the snapshot is an earlier run's
    other = SNAPSHOT.format(saved="other_path", built=built, trained="trainer.train()")
    assert lines(other, "GPD201") == [19]
    # nothing trained before the load: an earlier run's snapshot
    assert lines(SNAPSHOT.format(saved="snapshot_path", built=built, trained=""), "GPD201") == [19]


def test_a_path_of_an_object_the_walk_cannot_follow_read_after_it_trained() -> None:
    built = "TRAINERS[args.dataset](torch.nn.Linear(4, 2).to(device))"
    trained = SNAPSHOT.format(saved="snapshot_path", built=built, trained="trainer.train(5)")
    assert lines(trained, "GPD201") == []
    evaluated = SNAPSHOT.format(saved="snapshot_path", built=built, trained="trainer.evaluate()")
    assert lines(evaluated, "GPD201") == [19]


# ASTGCN (set 69): an availability flag only printed chooses nothing; the script is GPU-only
PRINTED = """\
import torch

USE_CUDA = torch.cuda.is_available()
DEVICE = torch.device("cuda:0")
print("CUDA:", USE_CUDA, DEVICE)
net = torch.nn.Linear(4, 2).to(DEVICE)
net.load_state_dict(torch.load("experiments/epoch_31.params"))
{more}
"""


def test_an_availability_flag_only_printed_is_no_cpu_path() -> None:
    assert lines(PRINTED.format(more=""), "GPD201") == []
    assert lines(PRINTED.format(more=""), "GPD203") == []
    tested = PRINTED.format(more='if not USE_CUDA:\n    print("no GPU")')
    assert lines(tested, "GPD201") == [7]


# AGCRN (set 69): `torch.cuda` is torch's module, not a read of an option named `cuda`
FLAG = """\
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--cuda", default=True, type=bool)
args = parser.parse_args()
device = "cuda:0" if {test} else "cpu"
"""


def test_torch_cuda_is_not_a_read_of_a_cuda_option() -> None:
    assert lines(FLAG.format(test="torch.cuda.is_available()"), "GPD503") == []
    assert lines(FLAG.format(test="args.cuda"), "GPD503") == [6]


# AGCRN (set 69): a CUDA default of `--device`, which the script's own fallback replaces
DEFAULT = """\
import argparse

import torch

DEVICE = "cuda:0"
parser = argparse.ArgumentParser()
parser.add_argument("--device", default=DEVICE, type=str)
args = parser.parse_args()
if torch.cuda.is_available():
    torch.cuda.set_device(int(args.device[5]))
else:
    args.device = "cpu"
model = torch.nn.Linear(4, 2).to({where})
"""


def test_a_cuda_name_read_only_as_an_option_default() -> None:
    assert lines(DEFAULT.format(where="args.device"), "GPD203") == []
    # the name is also used as a device of its own: that use fails without a GPU
    assert lines(DEFAULT.format(where="DEVICE"), "GPD203") == [5]


# recall set 69 (skorch before its fix): the test is inverted, so the unmapped load is the
# arm that runs without CUDA
INVERTED = """\
import torch


def get_state_dict(f, device="cpu"):
    use_cuda = device.startswith("cuda")
    if {test}:
        return torch.load(f, lambda storage, loc: storage)
    else:
        return torch.load(f)
"""


def test_an_unmapped_load_on_the_arm_without_cuda() -> None:
    assert lines(INVERTED.format(test="use_cuda"), "GPD201") == [9]
    assert lines(INVERTED.format(test="not use_cuda"), "GPD201") == []


# the second read of the sixteenth session
EARLY_STOPPING = """\
import torch
from torch import nn


class EarlyStopping:
    def __init__(self, path="checkpoint.pt"):
        self.path = path
        self.best = None

    def __call__(self, val_loss, model):
        if self.best is None or val_loss < self.best:
            self.best = val_loss
            torch.save(model.state_dict(), self.path)

    def load_checkpoint(self, model):
        model.load_state_dict(torch.load(self.path))


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
stopper = EarlyStopping()
{before}
for epoch in range(3):
    stopper(model(torch.randn(3, 4, device=device)).sum().item(), model)
stopper.load_checkpoint(model)
"""


def test_an_early_stopping_reload_after_it_saved_is_this_runs_file() -> None:
    assert lines(EARLY_STOPPING.format(before=""), "GPD201") == []
    # a warm start through the same method, before anything saved: an earlier run's file
    assert lines(EARLY_STOPPING.format(before="stopper.load_checkpoint(model)"), "GPD201") == [16]


def test_a_modules_train_mode_switch_is_no_training_run() -> None:
    built = "torch.nn.Linear(4, 2).to(device)"
    script = SNAPSHOT.format(saved="snapshot_path", built=built, trained="trainer.train()")
    assert lines(script, "GPD201") == [19]


def test_a_word_in_a_return_value_is_no_cuda_query() -> None:
    script = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def ready(batch):
    return batch.timestamps is not None


if ready(None):
    warm_up = torch.rand(1, 1).cuda()
"""
    assert lines(script, "GPD203") == [11]


def test_a_flag_handed_to_a_call_inside_print_is_read() -> None:
    script = PRINTED.format(more="").replace(
        'print("CUDA:", USE_CUDA, DEVICE)', 'print("score:", evaluate(net, USE_CUDA))'
    )
    assert lines(script, "GPD201") == [7]


def test_fewer_than_one_gpu_is_none() -> None:
    script = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
if opts.gpus < 1:
    state = torch.load(opts.ckpt)
else:
    state = torch.load(opts.ckpt, map_location="cpu")
"""
    assert lines(script, "GPD201") == [5]


def test_a_gpu_count_read_from_a_config_by_its_key() -> None:
    """pytorch_e2e (set 67): `cfg.getint("common", "ngpu") <= 0` is the CPU arm, which maps the
    checkpoint; the unmapped load is the GPU arm."""
    script = """\
import torch

if cfg.getint("common", "ngpu") <= 0:
    state = torch.load(cfg.get("checkpoint", "path"), map_location="cpu")
else:
    state = torch.load(cfg.get("checkpoint", "path"))
device = torch.device("cuda" if cfg.getint("common", "ngpu") > 0 else "cpu")
"""
    assert lines(script, "GPD201") == []
