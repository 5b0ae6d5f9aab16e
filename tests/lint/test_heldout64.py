"""Regressions of held-out set 64 and the recall reports found since, reduced and rewritten
here: the bug each rule must report, next to the correct code it must leave alone."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines, project_lines

# akanimax's T2F (recall set 62): an encoder whose `__init__` moves its layers to the device it
# is given, built with the run's device in another file, fed a batch never moved
ENCODER = """\
import torch
from torch.nn import Dropout, Linear, ReLU, Sequential


class Encoder(torch.nn.Module):
    def __init__(self, n, device=torch.device("cpu")):
        super().__init__()
        self.device = device
        self.width = len(range(n))
        self.network = Sequential(Linear(n, n), ReLU()).to({mover})
        self.dropout = Dropout(0.1)
{extra}
    def forward(self, x):
        return self.dropout(self.network(x))
"""

TRAIN = """\
import torch
from torch.utils.data import DataLoader
from networks import Encoder


def train_networks(encoder, data):
    fixed_captions, fixed_images = next(iter(DataLoader(data, batch_size=4)))
    return encoder(fixed_captions)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    encoder = Encoder(8, device={given})
    train_networks(encoder, [(torch.zeros(8), torch.zeros(3))] * 10)


if __name__ == "__main__":
    main()
"""


def encoder_lines(
    tmp_path: Path, mover: str = "device", extra: str = "", given: str = "device"
) -> list[int]:
    tmp_path.mkdir()
    files = {
        "networks.py": ENCODER.format(mover=mover, extra=extra),
        "main.py": TRAIN.format(given=given),
    }
    return project_lines(tmp_path, files, "GPD101")


def test_a_module_that_moves_its_layers_to_the_device_it_is_given(tmp_path: Path) -> None:
    assert encoder_lines(tmp_path / "a") == [8]
    # through an alias on self, and a move of a layer of its own
    aliased = "        self.head = Linear(n, 2)\n        self.head.to(self.device)\n"
    assert encoder_lines(tmp_path / "b", mover="self.device", extra=aliased) == [8]


def test_a_module_that_leaves_a_layer_where_it_was_built_is_not_on_the_device(
    tmp_path: Path,
) -> None:
    assert encoder_lines(tmp_path / "a", extra="        self.head = Linear(n, 2)\n") == []
    assert encoder_lines(tmp_path / "b", given='"cpu"') == []
    assert encoder_lines(tmp_path / "c", given="None") == []
    assert encoder_lines(tmp_path / "d", mover='"cpu"') == []


SELF_MOVED = """\
import torch


class Agent(torch.nn.Module):
    def __init__(self, n, device):
        super().__init__()
        self.fc = torch.nn.Linear(n, 2)
        self.to(device)

    def forward(self, x):
        return self.fc(x)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
agent = Agent(4, {given})
print(agent(torch.randn(3, 4)))
"""


def test_a_module_that_moves_itself_to_the_device_it_is_given() -> None:
    assert lines(SELF_MOVED.format(given="device"), "GPD101") == [16]
    assert lines(SELF_MOVED.format(given='"cpu"'), "GPD101") == []


# model-based-social-navigation (recall set 64): the file falls back to the CPU, but its loader
# restores every checkpoint onto the first GPU
CUDA_RESTORE = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Ensemble:
    def __init__(self, nets):
        self.nets = nets

    def load(self, filename):
        for net in self.nets:
            net.load_state_dict(torch.load(filename, map_location={where}))
"""


def test_a_checkpoint_restored_onto_a_gpu_in_a_script_that_runs_on_the_cpu() -> None:
    assert lines(CUDA_RESTORE.format(where='"cuda:0"'), "GPD203") == [12]
    assert lines(CUDA_RESTORE.format(where="device"), "GPD203") == []
    assert lines(CUDA_RESTORE.format(where='"cpu"'), "GPD203") == []
    gpu_only = CUDA_RESTORE.replace('"cuda" if torch.cuda.is_available() else "cpu"', '"cuda"')
    assert lines(gpu_only.format(where='"cuda:0"'), "GPD203") == []


# rll/deepul's flow demos (recall set 64): the flow is trained through a method of its own that
# runs its layers, `model.nll(x)`, never through `model(x)`
FLOW = """\
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Flow(nn.Module):
    def __init__(self):
        super().__init__()
        self.mu = nn.Parameter(torch.zeros(5))
        self.conditioner = nn.Linear(1, 5)

    def flow(self, x):
        return self.conditioner(x[:, :1])

    def nll(self, x):
{body}


def train(model, loader):
    for x in loader:
        x = x.to(device).float()
        loss = model.nll(x)
        loss.backward()


flow = Flow()
train(flow, [torch.randn(8, 2)])
"""


def test_a_module_trained_through_a_method_that_runs_its_layers() -> None:
    assert lines(FLOW.format(body="        return (self.flow(x) - self.mu).mean()"), "GPD102") == [
        27
    ]
    # a method that moves what it is given runs wherever the module is
    moved = "        x = x.to(self.mu.device)\n        return (self.flow(x) - self.mu).mean()"
    assert lines(FLOW.format(body=moved), "GPD102") == []
    # one that runs no layer on it (bookkeeping) says nothing about the module's place
    assert lines(FLOW.format(body="        return x.shape[0]"), "GPD102") == []
