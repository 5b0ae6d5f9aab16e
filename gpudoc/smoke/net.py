"""The reference network: ``Net`` of the PyTorch CIFAR-10 tutorial, layer for layer."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):  # type: ignore[misc]
    """conv 3→6 k5, max-pool 2, conv 6→16 k5, max-pool 2, fc 400→120→84→10, ReLU between."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def build_net(seed: int) -> Net:
    """The same initial bytes on every device: built on the CPU from ``seed``, moved later."""
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        return Net()
    finally:
        torch.random.set_rng_state(generator_state)
