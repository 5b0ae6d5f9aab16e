"""Precision regressions from the seventeenth held-out set (public repositories linted before any
tuning, every finding judged): minimal programs of our own for each cause of a wrong finding,
beside the variant that must still be reported."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths

# a GAN's own `utils.cuda(x)` helper, which checks is_available() and moves lists element-wise
UTILS = """\
import torch
def cuda(xs):
    if torch.cuda.is_available():
        if not isinstance(xs, (list, tuple)):
            return xs.cuda()
        return [x.cuda() for x in xs]
    return xs
"""
TRAIN = """\
import torch
import torch.nn as nn
import utils
D = nn.Linear(4, 1)
G = nn.Linear(2, 4)
{move}
z = utils.cuda(torch.randn(8, 2))
print(D(G(z)))
"""


def _lint(tmp_path: Path, move: str) -> list[tuple[int, str]]:
    (tmp_path / "utils.py").write_text(UTILS)
    (tmp_path / "train.py").write_text(TRAIN.format(move=move))
    result = lint_paths([str(tmp_path / "train.py")], LintConfig())
    return [(f.line, f.code) for file in result.files for f in file.findings]


def test_a_project_helper_named_cuda_is_no_move_and_moves_each_module(tmp_path: Path) -> None:
    assert _lint(tmp_path, "utils.cuda([D, G])") == []
    # the helper given only one of the two modules: the other meets the device input unmoved
    assert _lint(tmp_path, "utils.cuda([G])") == [(4, "GPD102")]


# an option named --cuda that only picks which GPUs the job sees
GPU_PICK = """\
import argparse
import os
import torch
import torch.nn as nn
parser = argparse.ArgumentParser()
parser.add_argument("--cuda", dest="cuda", help="CUDA.")
parser.set_defaults(cuda="1")
args = parser.parse_args()
{visible}
model = nn.Linear(4, 1).cuda()
print(model(torch.randn(2, 4).cuda()))
"""


def test_an_option_that_sets_cuda_visible_devices_is_no_cpu_path() -> None:
    visible = 'os.environ["CUDA_VISIBLE_DEVICES"] = args.cuda'
    assert lines(GPU_PICK.format(visible=visible), "GPD203") == []
    # an option named --cuda whose value the script reads otherwise may pick the CPU
    assert lines(GPU_PICK.format(visible="print(args.cuda)"), "GPD203") == [10, 11]


# stochastic depth: a host draw compared with torch.equal into a Python bool
SURVIVAL = """\
import torch
import torch.nn as nn
class Block(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.p = p
    def survival(self):
        var = torch.bernoulli(torch.tensor(self.p).float())
        return {use}
    def forward(self, x):
        return self.fc(x) if self.survival() else x
model = Block(0.5).cuda()
"""


def test_a_draw_compared_by_torch_equal_is_a_python_bool() -> None:
    equal = "torch.equal(var, torch.tensor(1).float().to(var.device))"
    assert lines(SURVIVAL.format(use=equal), "GPD106") == []


# a fine-tuning script that needs CUDA, with a check for several GPUs
SEVERAL_GPUS = """\
import torch
import torch.nn as nn
model = nn.Linear(4, 2).cuda()
{check}
model.load_state_dict(torch.load("adapter.bin"))
"""


def test_a_check_for_several_gpus_offers_no_cpu_path() -> None:
    several = "if torch.cuda.device_count() > 1:\n    model.is_parallelizable = True"
    assert lines(SEVERAL_GPUS.format(check=several), "GPD201") == []
    # any GPU at all, or none: the script has a CPU path
    some = "if torch.cuda.device_count() > 0:\n    model.is_parallelizable = True"
    assert lines(SEVERAL_GPUS.format(check=some), "GPD201") == [6]


# a notebook trains through its helper, which saves the best model where it is told, and reloads it
TRAINED = """\
import torch
import torch.nn as nn
from helper_train import train_classifier
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(DEVICE)
train_classifier(model, epochs=3, {keyword}="mobilenet-best.pt", device=DEVICE)
model.load_state_dict(torch.load("mobilenet-best.pt"))
"""


def test_a_checkpoint_a_trainer_saved_where_told_loads_back() -> None:
    assert lines(TRAINED.format(keyword="best_model_save_path"), "GPD201") == []
    # a keyword that names no save: the file comes from elsewhere
    assert lines(TRAINED.format(keyword="log_path"), "GPD201") == [7]


# a notebook saves each epoch with the device in the name, then reloads the last epoch's file
EPOCHS = """\
import torch
import torch.nn as nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
num_epochs = 20
{save}
model.load_state_dict(torch.load("ae_i_20_%s.pt" % device))
"""


def test_a_file_named_by_the_save_s_percent_template_loads_back() -> None:
    save = (
        "for epoch in range(num_epochs):\n"
        '    torch.save(model.state_dict(), "ae_i_%d_%s.pt" % (epoch, device))'
    )
    assert lines(EPOCHS.format(save=save), "GPD201") == []
    # another file name: an earlier run's checkpoint, perhaps a GPU's
    other = save.replace("ae_i_", "vae_i_")
    assert lines(EPOCHS.format(save=other), "GPD201") == [8]


# deepspeech's validation: the sequence lengths stay on the host, as its forward wants them
LENGTHS = """\
import torch
def run_evaluation(test_loader, model, device):
    model.eval()
    for batch in test_loader:
        inputs, targets, input_percentages, target_sizes = batch
        {name} = input_percentages.mul_(int(inputs.size(3))).int()
        inputs = inputs.to(device)
        out, output_sizes = model(inputs, {name})
"""


def test_lengths_derived_before_the_move_stay_on_the_host_on_purpose() -> None:
    assert lines(LENGTHS.format(name="input_sizes"), "GPD112") == []
    assert lines(LENGTHS.format(name="scaled"), "GPD112") == [6]


# a test helper moves its inputs only `if cuda:`; one test leaves `cuda` at its False default
CHECK = """\
import torch
import torch.nn as nn
def check(bn, x, cuda=False):
    if cuda:
        x = x.cuda()
    return bn(x)
def test_train():
    bn = nn.BatchNorm1d(10)
    check(bn, torch.rand(16, 10){flag})
"""


def test_a_device_flag_the_call_leaves_false_turns_its_arm_off() -> None:
    assert lines(CHECK.format(flag=""), "GPD102") == []
    assert lines(CHECK.format(flag=", cuda=False"), "GPD102") == []
    # turned on, the arm runs: the host BatchNorm meets the moved input
    assert lines(CHECK.format(flag=", cuda=True"), "GPD102") == [8]


# (set 12, ignite) a trainer factory's `loss_fn: nn.Module` beside a device, called on the CPU
TRAINER = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
def create_trainer(model: nn.Module, loss_fn: nn.Module, device: str = None):
    def update(batch):
        x, y = batch
        y_pred = model(x.to(device))
        return loss_fn(y_pred, y.to(device))
    return update
def test_trainer(device):
    model = nn.Linear(1, 1)
    model.to(device)
    return create_trainer(model, F.mse_loss, device=device)
test_trainer({device})
"""


def test_a_module_typed_by_annotation_is_not_placed_in_a_call_on_the_cpu() -> None:
    assert lines(TRAINER.format(device='"cpu"'), "GPD101") == []
