"""Precision regressions from the thirty-fifth held-out set (public repositories), reduced and
rewritten here: correct code each rule must leave alone, next to the bug it still finds."""

from __future__ import annotations

from lint_lines import lines

# theLMbook: a function's own `model`, restored on the host, is not the module's moved `model`
OWN_LOCAL = """\
import torch
import torch.nn as nn


class Clf(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, 2)

    def forward(self, x):
        return self.fc(x)


def restore(path):
    ckpt = torch.load(path, map_location=torch.device("cpu"))
    model = Clf(ckpt["dim"])
    model.load_state_dict(ckpt["weights"])
    return model


def predict(model, vec):
    device = next(model.parameters()).device
    x = torch.tensor(vec, dtype=torch.float32).unsqueeze(0).to(device)
    return model(x).argmax(1)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Clf(8).to(device)
torch.save({"dim": 8, "weights": model.state_dict()}, "clf.pth")
loaded = restore("clf.pth")
predict(loaded, [0.0] * 8)
{tail}
"""


def test_a_functions_own_name_is_not_the_modules_moved_model() -> None:
    source = OWN_LOCAL.replace("{tail}", "")
    assert lines(source, "GPD102") == []
    assert lines(source, "GPD101") == []
    # the module's own name re-created at top level and fed device inputs is still the bug
    tail = "model = Clf(8)\nmodel(torch.zeros(1, 8, device=device))"
    assert lines(OWN_LOCAL.replace("{tail}", tail), "GPD102") == [32]


# mvts_transformer: a loss annotated `nn.Module` holds no weights the device would need
ANNOTATED_LOSS = """\
import torch


def mean_loss(net: torch.nn.Module, loader, {criterion}, device="cpu"):
    total = 0
    with torch.no_grad():
        for inputs, target in loader:
            out = net(inputs.to(device)).cpu()
            total += criterion(target, out)
    return total / len(loader)
"""


def test_a_loss_annotated_as_a_module_is_a_loss() -> None:
    assert lines(ANNOTATED_LOSS.format(criterion="criterion: torch.nn.Module"), "GPD101") == []
    # a network annotated the same way is the device's: its host input is the bug
    network = ANNOTATED_LOSS.replace("criterion(target, out)", "head(target)")
    assert lines(network.format(criterion="head: torch.nn.Module"), "GPD101") == [9]
