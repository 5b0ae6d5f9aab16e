"""Regressions of held-out set 68, reduced and rewritten here: the bug each rule must report,
next to the correct code it must leave alone."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines, project_lines

# MARL-Algorithms (set 68): `init_hidden` keeps the recurrent state on the host, and each
# method that reads it moves it first
AGENT = """\
import torch
from torch import nn


class Agent:
    def __init__(self, cuda):
        self.cuda = cuda
        self.rnn = nn.GRUCell(4, 8)
        if self.cuda:
            self.rnn.cuda()
        self.hidden = None

    def init_hidden(self, n):
        self.hidden = torch.zeros((n, 8))

    def step(self, inputs):
        if self.cuda:
            inputs = inputs.cuda()
            {move}
        self.hidden = self.rnn(inputs, self.hidden)
        return self.hidden

    def peek(self):
        return self.hidden.cuda() if self.cuda else self.hidden
"""
TRAINER = """\
import torch
from agent import Agent

agent = Agent(cuda=torch.cuda.is_available())
agent.init_hidden(4)
print(agent.step(torch.randn(4, 4)))
"""


def test_a_hidden_state_moved_by_every_method_that_reads_it() -> None:
    assert lines(AGENT.format(move="self.hidden = self.hidden.cuda()"), "GPD106") == []
    # one reader that does not move it: the state meets the GPU cell on the host
    assert lines(AGENT.format(move="pass"), "GPD106") == [14]


def test_a_hidden_state_moved_by_its_readers_reached_from_another_file(tmp_path: Path) -> None:
    moved = AGENT.format(move="self.hidden = self.hidden.cuda()")
    assert project_lines(tmp_path, {"agent.py": moved, "main.py": TRAINER}, "GPD106") == []
    # the walk from the script reports agent.py's factory when a reader does not move it
    unmoved = AGENT.format(move="pass")
    assert project_lines(tmp_path, {"agent.py": unmoved, "main.py": TRAINER}, "GPD106") == [14]


# Precipitation-Nowcasting (set 68): `.to(t.get_device())` moves to t's GPU, as `.to(t.device)`
WEIGHTED = """\
import torch
from torch import nn


class FrameWeightedLoss(nn.Module):
    def forward(self, input, target):
        error = torch.sum((input - target) ** 2, (2, 3))
        w = torch.arange(1.0, 1.0 + error.size(1) * 0.01, 0.01)
        if torch.cuda.is_available():
            {move}
        return torch.mean(w * error)
"""


def test_a_move_to_the_device_index_of_a_tensor() -> None:
    assert lines(WEIGHTED.format(move="w = w.to(error.get_device())"), "GPD106") == []
    assert lines(WEIGHTED.format(move="pass"), "GPD106") == [8]


# MC-Net (set 68): seeding CUDA is queued until CUDA starts, so CUDA_VISIBLE_DEVICES set
# after it still counts
SEEDED = """\
import os

import torch
from torch import nn


def train(gpu):
    os.environ["CUDA_VISIBLE_DEVICES"] = gpu
    return nn.Linear(4, 4).cuda()


if __name__ == "__main__":
    torch.manual_seed(1)
    {first}
    train("0")
"""


def test_seeding_cuda_does_not_start_it() -> None:
    for seeding in ("torch.cuda.manual_seed(1)", "torch.cuda.manual_seed_all(1)"):
        assert lines(SEEDED.format(first=seeding), "GPD403") == []
    assert lines(SEEDED.format(first="torch.cuda.synchronize()"), "GPD403") == [8]


# found writing the set's tests: a DDP rank that moves its model with an f-string device
RANKED = """\
import torch
from torch import nn


def main(rank):
    torch.distributed.init_process_group("nccl", rank=rank)
    model = nn.Linear(4, 4){move}
    return torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
"""


def test_a_model_moved_to_a_formatted_cuda_device_is_placed() -> None:
    for move in ('.to(f"cuda:{rank}")', '.to("cuda:{}".format(rank))', ".cuda(rank)"):
        assert lines(RANKED.format(move=move), "GPD401") == []
    assert lines(RANKED.format(move=""), "GPD401") == [8]


# recall set 68 (edge-connect): `load()` restores the object's own checkpoint file, which an
# earlier (GPU) run wrote; the `save()` beside it does not make it this run's
MODEL_FILE = """\
import os

import torch
from torch import nn


class BaseModel(nn.Module):
    def __init__(self, name, path):
        super().__init__()
        self.generator = nn.Linear(4, 4)
        self.weights_path = os.path.join(path, name + "_gen.pth")

    def {loader}(self):
        if os.path.exists(self.weights_path):
            data = torch.load(self.weights_path)
            self.generator.load_state_dict(data["generator"])

    def save(self):
        torch.save({{"generator": self.generator.state_dict()}}, self.weights_path)
"""
SCRIPT = """\
import torch

from model import BaseModel

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = BaseModel("edge", "checkpoints").to(device)
model.{loader}()
"""


def test_a_load_method_of_the_objects_own_checkpoint_path() -> None:
    single = (
        MODEL_FILE.format(loader="load")
        + "\n\n"
        + SCRIPT.replace("from model import BaseModel\n", "").format(loader="load")
    )
    assert lines(single, "GPD201") == [15]
    # a load of the same file after the run saved to it reads back what this run wrote
    trained = single.replace("model.load()", "model.save()\nmodel.load()")
    assert lines(trained, "GPD201") == []


def test_a_model_file_naming_no_device_is_judged_by_the_script_importing_it(
    tmp_path: Path,
) -> None:
    model = MODEL_FILE.format(loader="load")
    script = SCRIPT.format(loader="load").replace("from model import", "from main import")
    (tmp_path / "train.py").write_text(script)
    assert project_lines(tmp_path, {"main.py": model}, "GPD201") == [15]
    # no script with a CPU path imports it: a GPU-only project
    gpu_only = script.replace(
        'torch.device("cuda" if torch.cuda.is_available() else "cpu")', 'torch.device("cuda")'
    )
    (tmp_path / "train.py").write_text(gpu_only)
    assert project_lines(tmp_path, {"main.py": model}, "GPD201") == []


# Pytorch-UNet (seen in the sixteenth session's re-score): a tensor file converted to NumPy as
# it is loaded holds host tensors (a mask image), whatever imports the file
def test_a_load_converted_to_numpy_at_once_holds_host_tensors() -> None:
    script = """\
import numpy as np
import torch
from PIL import Image

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def load_image(filename):
    return Image.fromarray(torch.load(filename){then})
"""
    assert lines(script.format(then=".numpy()"), "GPD201") == []
    assert lines(script.format(then=""), "GPD201") == [9]


# the second read of the sixteenth session: the state's own method and each arm count
STORED_AND_READ = """\
import torch
from torch import nn


class Stateful(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(4, 8)
        self.h = None

    def forward(self, x):
        if self.h is None:
            self.h = torch.zeros(x.size(0), 8)
        self.h = self.cell(x, self.h)
        return self.h

    def state_on(self, device):
        return self.h.to(device)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = Stateful().to(device)
print(net(torch.randn(3, 4, device=device)))
"""


def test_a_state_read_unmoved_by_the_method_that_stores_it() -> None:
    """`forward` makes the state and feeds it to the cell at once: another method moving it
    does not help."""
    assert lines(STORED_AND_READ, "GPD106") == [13]


def test_a_move_in_one_arm_does_not_place_the_read_in_the_other() -> None:
    moved_once = (
        "        inputs = inputs.cuda()\n"
        "        if first:\n"
        "            self.hidden = self.hidden.cuda()\n"
        "        else:\n"
        "            self.hidden = self.rnn(inputs, self.hidden)\n"
    )
    unmoved = "        if self.cuda:\n            inputs = inputs.cuda()\n            pass\n"
    one_arm = AGENT.format(move="pass").replace(unmoved, moved_once)
    one_arm = one_arm.replace("def step(self, inputs):", "def step(self, inputs, first):")
    assert "if first:" in one_arm
    assert lines(one_arm, "GPD106") == [14]


# recall set 68 (SSGC#7): a one-element host tensor compared with (or added to) a 0-dim
# tensor on the device; only a 0-dim *host* tensor may meet a device tensor
BEST = """\
import torch
from torch import nn


def train(model, features, labels):
    best_acc = {best}
    for epoch in range(3):
        out = model(features)
        acc = (out.argmax(1) == labels).double().mean()
        if {test}:
            best_acc = acc
    return best_acc


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
print(train(model, torch.randn(8, 4).to(device), torch.zeros(8).long().to(device)))
"""


def test_a_host_tensor_compared_with_a_device_accuracy() -> None:
    assert lines(BEST.format(best="torch.zeros((1))", test="best_acc < acc"), "GPD106") == [6]
    summed = BEST.format(best="torch.zeros((1))", test="(best_acc + out.mean()) > 0")
    assert lines(summed, "GPD106") == [6]
    # a Python number, or a 0-dim host tensor, meets it fine
    assert lines(BEST.format(best="0.0", test="best_acc < acc"), "GPD106") == []
    assert lines(BEST.format(best="torch.tensor(0.0)", test="best_acc < acc"), "GPD106") == []
