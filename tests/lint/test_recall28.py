"""Recall regressions from the twenty-eighth recall set (real bug reports), reduced and
rewritten here: the bug each rule must report, next to the correct code it must leave alone."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines

from gpudoc.lint.engine import lint_paths

# report 15: a model whose __init__ moves itself to a `device="cuda"` default
SELF_PLACED = """\
import torch
import torch.nn as nn
class ConvModel(nn.Module):
    def __init__(self, depth=1, device="cuda"):
        super().__init__()
        self.fc = nn.Linear(4, 1)
        self.to(device)
    def forward(self, x):
        return self.fc(x)
if __name__ == "__main__":
    x = torch.randn(8, 4)
    model = ConvModel({args})
    out = model(x)
"""


def test_a_model_placed_by_its_own_cuda_default_meets_a_host_input() -> None:
    assert lines(SELF_PLACED.format(args="depth=2"), "GPD101") == [13]
    assert lines(SELF_PLACED.format(args='device="cuda:0"'), "GPD101") == [13]
    assert lines(SELF_PLACED.format(args='device="cpu"'), "GPD101") == []
    # the run's device handed to the parameter it moves itself with: as `model.to(args.device)`
    assert lines(SELF_PLACED.format(args="device=args.device"), "GPD101") == [13]
    assert lines(SELF_PLACED.format(args="device=None"), "GPD101") == []


# report 10 (IBM's pytorch-seq2seq TopKDecoder): uninitialised legacy storage given sizes in
# forward, filled and added to the decoder's scores
SIZED = """\
import torch
import torch.nn as nn
class TopK(nn.Module):
    def __init__(self, rnn, k):
        super().__init__()
        self.rnn = rnn
        self.k = k
    def forward(self, inputs):
        batch_size = inputs.size(0)
        scores = {factory}
        scores.fill_(-float("inf"))
        out = self.rnn(inputs)
        scores += out.squeeze(1)
        return scores
"""


def test_legacy_storage_given_sizes_in_forward_is_a_host_factory() -> None:
    assert lines(SIZED.format(factory="torch.Tensor(batch_size * self.k, 1)"), "GPD106") == [10]
    assert lines(SIZED.format(factory="torch.FloatTensor(batch_size)"), "GPD106") == [10]
    # a conversion of data, or integer storage (an index buffer), is not what the rule is about
    assert lines(SIZED.format(factory="torch.Tensor(inputs.tolist())"), "GPD106") == []
    assert lines(SIZED.format(factory="torch.LongTensor(batch_size, 1)"), "GPD106") == []


# report 01 (Fast_Human_Pose_Estimation's demo): the project's own zoo, `models.__dict__[arch]`
PROJECT_ZOO = """\
import torch
import pose.models as models
def load_model(arch):
    model = models.__dict__[arch](num_classes=16)
    model.eval()
    return model
def inference(model, image, device):
    tensor = torch.from_numpy(image).float().to(device)
    return model(tensor)
def main(args):
    model = load_model(args.arch)
    return inference(model, args.image, "cuda")
"""


def test_a_model_of_the_project_zoo_is_a_module_never_moved() -> None:
    assert lines(PROJECT_ZOO, "GPD102") == [11]
    assert lines(PROJECT_ZOO.replace("pose.models", "pose.losses"), "GPD102") == []


# report 03 (NoPeekNN's notebook): a sample of a torchvision data set, into a placed model's
# submodule, the model's class in another project file
SPLIT_NN = """\
import torch
class SplitNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encode = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 32))
        self.act = torch.nn.ReLU()
    def forward(self, x):
        return self.act(self.encode(x))
"""

NOTEBOOK_SCRIPT = """\
import torch
from torchvision import transforms
from torchvision.datasets import MNIST
from splitnn import SplitNN
device = torch.device("cpu" if not torch.cuda.is_available() else "cuda:0")
model = SplitNN().to(device)
test = MNIST("data", train=False, transform=transforms.ToTensor())
for i in range(10):
    image, _ = test[i]
    hidden = model.encode(image.unsqueeze(0))
    shown = model.act(image)
"""


def test_a_data_set_sample_into_a_placed_model_submodule_of_another_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "splitnn.py").write_text(SPLIT_NN)
    script = tmp_path / "attack.py"
    script.write_text(NOTEBOOK_SCRIPT)
    result = lint_paths([str(script)], jobs=1, use_cache=False)
    # `model.act` is an nn.ReLU: no weights, nothing to mix
    assert [(f.line, f.code) for f in result.findings] == [(10, "GPD101")]


# report 07 (DDECC's sampler): a host schedule indexed by steps computed from a moved input
SCHEDULE = """\
import torch
import torch.nn as nn
class Diffusion(nn.Module):
    def __init__(self, n, device):
        super().__init__()
        self.device = device
        self.register_buffer("pc", torch.ones(4, 4))
        self.betas_bar = torch.cumsum(torch.linspace(1e-3, 1e-2, n), 0).view(-1, 1)
        self.fc = nn.Linear(4, 4)
    def forward(self, y):
        return self.fc(y)
    def p_sample(self, yt):
        t = (torch.matmul(torch.sign(yt.to(self.device)), self.pc) % 2).long().sum(-1)
        return torch.sqrt(self.betas_bar[{index}])
"""


def test_a_host_schedule_indexed_by_steps_of_a_moved_input() -> None:
    assert lines(SCHEDULE.format(index="t"), "GPD108") == [14]
    assert lines(SCHEDULE.format(index="t.cpu()"), "GPD108") == []
