"""Wrong findings of the twenty-fifth held-out set (public repositories), reduced and rewritten
here: correct code each rule must leave alone, next to the bug it must still report."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths, lint_source

# TRAttack: the predicted class goes into a plot title through `%d`, which reads the
# one-element tensor with `.item()`; the title gets a str
TITLE = """\
import matplotlib.pyplot as plt
import numpy as np
import torch
model = torch.nn.Linear(4, 3).cuda()
_, pred = torch.max(model(torch.randn(1, 4).cuda()), dim=1)
plt.title("Pred %d" % pred)
np.save("p.npy", pred + 1)
"""


def test_a_string_formatted_with_a_device_tensor_is_a_str() -> None:
    assert lines(TITLE, "GPD202") == [7]


# cirtorch: hard-negative mining picks one element of a device ranking, a 0-dim tensor, which
# indexes a CPU tensor like an int
MINING = """\
import torch
pool = torch.randperm(100)[:20]
scores = torch.mm(torch.randn(8, 20).cuda().t(), torch.randn(8, 1).cuda())
_, ranks = torch.sort(scores, dim=0, descending=True)
for r in range(5):
    one = pool[ranks[r, 0]]
    rows = pool[ranks[r:, 0]]
    column = pool[ranks[:, 0]]
"""


def test_an_element_of_a_device_tensor_indexes_a_host_tensor_like_an_int() -> None:
    assert lines(MINING, "GPD108") == [7, 8]


# cirtorch's train.py: each known loss is moved, and any other name raises
CRITERION = """\
import argparse
import torch
import torch.nn as nn
class Contrastive(nn.Module):
    def __init__(self, margin):
        super().__init__()
        self.margin = nn.Parameter(torch.tensor(margin))
    def forward(self, x, y):
        return (x - y).clamp(min=self.margin).mean()
parser = argparse.ArgumentParser()
parser.add_argument("--loss", default="contrastive")
args = parser.parse_args()
model = nn.Linear(8, 8).cuda()
if args.loss == "contrastive":
    criterion = Contrastive(0.7).cuda()
elif args.loss == "triplet":
    criterion = Contrastive(0.1).cuda()
{other}
x = torch.randn(4, 8).cuda()
loss = criterion(model(x), x)
"""


def test_a_module_moved_on_every_arm_but_one_that_raises_is_placed() -> None:
    assert lines(CRITERION.format(other='else:\n    raise RuntimeError("loss")'), "GPD102") == []


def test_a_module_left_on_the_host_by_an_arm_that_falls_through_is_reported() -> None:
    source = CRITERION.format(other="else:\n    criterion = Contrastive(0.2)")
    assert lines(source, "GPD102") == [15]


# sphereface: a loss whose forward anneals a plain number (`self.lamb = max(...)`) holds no
# parameters: it computes where its inputs are
LOSSES = """\
import torch.nn as nn
class MarginLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.it = 0
    def forward(self, scores, target):
        self.it += 1
        self.lamb = {value}
        return -(scores.gather(1, target.view(-1, 1)) / (1 + self.lamb)).mean()
"""
TRAIN = """\
import torch
import losses
net = torch.nn.Linear(16, 10)
if torch.cuda.is_available():
    net.cuda()
criterion = losses.MarginLoss()
inputs = torch.randn(8, 16)
targets = torch.randint(0, 10, (8,))
if torch.cuda.is_available():
    inputs, targets = inputs.cuda(), targets.cuda()
loss = criterion(net(inputs), targets)
"""


def _margin_loss(root: Path, value: str) -> list[int]:
    (root / "losses.py").write_text(LOSSES.format(value=value))
    (root / "train.py").write_text(TRAIN)
    config = LintConfig(select=("GPD102",))
    return [f.line for f in lint_paths([str(root / "train.py")], config, use_cache=False).findings]


def test_a_loss_that_keeps_a_number_from_a_builtin_holds_nothing(tmp_path: Path) -> None:
    assert _margin_loss(tmp_path, "max(5.0, 1500.0 / (1 + 0.1 * self.it))") == []
    assert _margin_loss(tmp_path, "nn.Parameter(torch.ones(1))") == [6]


# TA-LBF: the loss function turns its own arguments into device tensors; the caller's `z1` is
# a NumPy array all along, and `y1` is no tensor derived from a batch
ADMM = """\
import numpy as np
import torch
def project_box(x):
    x[x > 1] = 1
    return x
def loss_func(out, labels, w, y1, z1):
    y1, z1 = (torch.tensor(y1).float().cuda(),
              torch.tensor(z1).float().cuda())
    return torch.nn.functional.cross_entropy(out, labels) + z1 @ (w - y1)
def attack(layer, data, labels_cuda):
    b_new = layer.weight.detach().cpu().numpy().ravel()
    z1 = np.zeros_like(b_new)
    for _ in range(5):
        y1 = project_box(b_new + z1)
        for _ in range(3):
            loss = loss_func(layer(data), labels_cuda, layer.weight.view(-1), y1, z1)
            loss.backward()
        b_new = layer.weight.detach().cpu().numpy().ravel()
        z1 = z1 + (b_new - y1)
    return b_new
attack(torch.nn.Linear(4, 3).cuda(), torch.randn(4, 4).cuda(), torch.tensor([0, 1, 2, 1]).cuda())
"""
DERIVED = """\
import torch
def step(model, x, y):
    scale = x.abs().max()
    # move the batch
    x, y = (x.cuda(),
            y.cuda())
    return torch.mul(model(x), scale)
step(torch.nn.Linear(4, 3).cuda(), torch.randn(4, 4), torch.randn(4, 3))
"""


def test_a_callees_move_of_its_own_parameter_is_not_the_callers() -> None:
    assert lines(ADMM, "GPD112") == []


def test_the_move_is_quoted_on_one_line_without_the_comment_above_it() -> None:
    result = lint_source(DERIVED, "x.py", LintConfig(select=("GPD112",)))
    assert [f.line for f in result.findings] == [3]
    assert "(`x, y = (x.cuda(), y.cuda())`)" in result.findings[0].message


def test_a_tab_in_valid_indentation_is_named_with_its_line() -> None:
    source = "import torch\ndef grow(xs, n):\n    if n:\n\t    xs = xs * n\n    return xs\n"
    result = lint_source(source, "x.py", LintConfig())
    assert result.error is not None
    assert "tab in the indentation of line 4 (Python accepts it)" in result.error


# the re-score, contrastive-unpaired-translation: `init_net` moves each network to the first of
# the GPUs it is given (`net.to(gpu_ids[0])`)
INIT_NET = """\
import torch
import torch.nn as nn
def init_net(net, gpu_ids=[]):
    if len(gpu_ids) > 0:
        net.to(gpu_ids[0])
    return net
class Model:
    def __init__(self, gpu_ids):
        self.device = torch.device(f"cuda:{gpu_ids[0]}") if gpu_ids else torch.device("cpu")
        self.netG = init_net(nn.Linear(4, 4), gpu_ids)
    def forward(self, x):
        return self.netG(x.to(self.device))
"""


def test_a_network_moved_to_an_element_of_its_gpu_list_is_placed() -> None:
    assert lines(INIT_NET, "GPD102") == []
    assert lines(INIT_NET.replace("net.to(gpu_ids[0])", "pass"), "GPD102") == [10]


# the re-score, knowledge-distillation: the teacher is never moved (GPD102); its output is on
# the host because of that, not a batch someone forgot to move
TEACHER = """\
import torch
import torch.nn.functional as F
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
teacher = torch.nn.Linear(4, 3)
model = torch.nn.Linear(4, 3).to(device)
def train(loader, loss_fn):
    for data, target in loader:
        data, target = data.to(device), target.to(device)
        teacher_output = teacher(data)
        teacher_output = teacher_output.detach()
        loss = loss_fn(model(data), target, teacher_output)
        extra = F.mse_loss(model(data), {other})
"""


def test_the_output_of_an_unmoved_module_is_that_modules_finding() -> None:
    assert lines(TEACHER.format(other="teacher_output"), "GPD101") == []
    assert lines(TEACHER.format(other="target.cpu()"), "GPD101") == [12]
    assert lines(TEACHER.format(other="teacher_output"), "GPD102") == [4]


# the re-score, deep-text-recognition-benchmark: a CTC loss passed in as `criterion` takes the
# lengths of the predictions (`preds_size`) on the host
CTC = """\
import torch
def validation(model, criterion, loader, device):
    for image, labels in loader:
        text, length = converter.encode(labels)
        preds = model(image.to(device))
        preds_size = torch.IntTensor([preds.size(1)] * image.size(0))
        cost = criterion(preds.log_softmax(2).permute(1, 0, 2), text, preds_size, length)
"""


def test_lengths_named_size_stay_on_the_host() -> None:
    assert lines(CTC, "GPD101") == []
