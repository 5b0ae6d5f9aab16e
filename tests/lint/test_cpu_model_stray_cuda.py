"""GPD203 in a script whose own model never leaves the CPU: a stray ``.cuda()`` on one tensor
fails on a CPU-only host, and on a GPU mixes devices (yunjey/pytorch-tutorial's RNN)."""

from __future__ import annotations

from gpudoc.lint.engine import lint_source

SCRIPT = """\
import torch
import torch.nn as nn


class RNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(28, 64, batch_first=True)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1, :])


rnn = RNN(){model_move}
criterion = nn.CrossEntropyLoss()
for images, labels in torch.utils.data.DataLoader(dataset, batch_size=100):
    labels = labels.cuda()
    loss = criterion(rnn(images.view(-1, 28, 28)), labels)
"""


def codes(model_move: str = "") -> set[tuple[int, str]]:
    result = lint_source(SCRIPT.format(model_move=model_move), "main.py")
    return {(f.line, f.code) for f in result.findings}


def test_a_stray_cuda_in_a_script_whose_model_stays_on_the_cpu() -> None:
    assert (19, "GPD203") in codes()


def test_a_script_that_places_its_model_is_written_for_the_gpu() -> None:
    assert not any(code == "GPD203" for _, code in codes(".cuda()"))
