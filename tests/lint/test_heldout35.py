"""Precision regressions from the thirty-fifth and thirty-sixth held-out sets (public
repositories), reduced and rewritten here: correct code each rule must leave alone, next to the
bug it still finds."""

from __future__ import annotations

from pathlib import Path

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


# set 36, RIFE: a loss whose only tensor is a NumPy-built kernel moved at construction
NUMPY_KERNEL = """\
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Census(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = np.eye(9).reshape((3, 3, 1, 9))
        self.w = torch.tensor(np.transpose(self.w, (3, 2, 0, 1))).float().to(device)

    def forward(self, img):
        return F.conv2d(img, self.w, padding=1) - img


census = Census()
print(census(torch.zeros(1, 1, 8, 8).to(device)))
"""


def test_a_module_holding_only_a_numpy_built_tensor_needs_no_move() -> None:
    assert lines(NUMPY_KERNEL, "GPD102") == []


# set 36, StyleTTS2: a Munch of networks, each moved by a comprehension
NETWORK_DICT = """\
import torch
from torch import nn


class Wrapper(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)


device = "cuda" if torch.cuda.is_available() else "cpu"
nets = build_model()
{move}
wrapped = Wrapper(nets.decoder)
out = wrapped(torch.randn(1, 8).to(device))
"""


def test_a_dict_of_networks_moved_one_by_one_is_placed() -> None:
    comprehension = "_ = [nets[key].to(device) for key in nets]"
    assert lines(NETWORK_DICT.format(move=comprehension), "GPD102") == []
    loop = "for key in nets.keys():\n    nets[key].to(device)"
    assert lines(NETWORK_DICT.format(move=loop), "GPD102") == []
    # a comprehension that moves nothing in place (its list of evaluations) places nothing
    assert lines(NETWORK_DICT.format(move="_ = [nets[key].eval() for key in nets]"), "GPD102") == [
        17
    ]


LOSSES = """\
import torch.nn.functional as F
from torch import nn


class WeightedBCE(nn.Module):
    def __init__(self, weights=(0.5, 0.5)):
        super().__init__()
        self.weights = weights

    def forward(self, pred, target):
        return self.weights[0] * F.binary_cross_entropy(pred, target)


class SoftDice(nn.Module):
    def __init__(self, bce_weight=0.5):
        super().__init__()
        self.bce = {inner}
        self.bce_weight = bce_weight

    def forward(self, pred, target):
        inter = (pred * target).sum()
        dice = 1 - 2 * inter / (pred.sum() + target.sum())
        return dice + self.bce_weight * self.bce(pred, target)
"""

TRAIN = """\
import torch
from torch import nn
from losses import SoftDice

model = nn.Conv2d(1, 1, 3, padding=1).cuda()
criterion = SoftDice()
images = torch.rand(2, 1, 8, 8).cuda()
loss = criterion(model(images), (images > 0.5).float())
"""


def test_another_files_loss_built_of_its_own_empty_losses_needs_no_move(tmp_path: Path) -> None:
    from gpudoc.lint.config import LintConfig
    from gpudoc.lint.engine import lint_paths

    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "losses.py").write_text(LOSSES.format(inner="WeightedBCE()"))
    config = LintConfig(select=("GPD102",))
    assert [
        f.line
        for f in lint_paths([str(tmp_path / "train.py")], config, jobs=1, use_cache=False).findings
    ] == []
    # a loss holding a layer of weights of its own does need the move
    (tmp_path / "losses.py").write_text(LOSSES.format(inner="nn.Linear(4, 4)"))
    assert [
        f.line
        for f in lint_paths([str(tmp_path / "train.py")], config, jobs=1, use_cache=False).findings
    ] == [6]


# set 36, NielsRogge's tutorials: the next checkpoint, loaded again and run on host inputs
NEXT_CHECKPOINT = """\
import torch
from transformers import AutoModelForCausalLM, AutoProcessor

processor = AutoProcessor.from_pretrained("some/captioner")
model = AutoModelForCausalLM.from_pretrained("some/captioner")
device = "cuda" if torch.cuda.is_available() else "cpu"
model.to(device)
pixel_values = processor(images=None, return_tensors="pt").pixel_values.to(device)
print(model.generate(pixel_values=pixel_values))
model = AutoModelForCausalLM.from_pretrained("some/vqa-model")
pixel_values = processor(images=None, return_tensors="pt").pixel_values
print(model.generate(pixel_values=pixel_values))
{tail}
"""


def test_a_model_loaded_again_and_run_on_host_inputs_is_a_cpu_demo() -> None:
    source = NEXT_CHECKPOINT.format(tail="")
    assert lines(source, "GPD102") == []
    assert lines(source, "GPD101") == []
    # fed the device's inputs, the re-created model is the bug
    tail = "print(model.generate(pixel_values=pixel_values.to(device)))"
    assert lines(NEXT_CHECKPOINT.format(tail=tail), "GPD102") == [10]


# set 36, nanoGPT: `device = 'cuda'` is a setting the configurator's `--device=cpu` rebinds
CONFIGURED = """\
import torch
from torch import nn

device = 'cuda'
dtype = 'bfloat16' if torch.cuda.is_available() else 'float32'
{exec}
model = nn.Linear(4, 2).to(device)
x = torch.randn(8, 4, device=device)
"""


def test_a_setting_the_configurator_may_override_is_no_hard_coded_device() -> None:
    configured = "exec(open('configurator.py').read())"
    assert lines(CONFIGURED.format(exec=configured), "GPD203") == []
    assert lines(CONFIGURED.format(exec=""), "GPD203") == [4]


# set 36, UCTransNet: the GPU count is only printed and compared with 1: several GPUs or one
GPU_COUNT = """\
import torch
from torch import nn

model = nn.Conv2d(3, 1, 3).cuda()
if torch.cuda.device_count() > 1:
    print("using {{0}} GPUs".format(torch.cuda.device_count()))
    model = nn.DataParallel(model)
{fallback}
"""


def test_a_gpu_count_only_printed_is_no_cpu_path() -> None:
    assert lines(GPU_COUNT.format(fallback=""), "GPD203") == []
    fallback = 'device = "cuda" if torch.cuda.device_count() > 0 else "cpu"'
    assert lines(GPU_COUNT.format(fallback=fallback), "GPD203") == [4]


# set 36, PyTorch-RL: the agent brings its policy to the CPU for a NumPy rollout, then back
ROLLOUT = """\
import torch
from torch import nn
{helper}

def rollout(policy, steps):
    out = []
    for _ in range(steps):
        out.append(policy(torch.zeros(1, 3))[0][0].numpy())
    return out


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
policy = nn.Linear(3, 2).to(device)
to_device({target}, policy)
actions = rollout(policy, 10)
"""

OWN_HELPER = """
def to_device(device, *args):
    return [x.to(device) for x in args]
"""


def test_a_helper_given_the_cpu_and_a_placed_module_may_bring_it_back() -> None:
    cpu = 'torch.device("cpu")'
    assert lines(ROLLOUT.format(helper=OWN_HELPER, target=cpu), "GPD202") == []
    assert lines(ROLLOUT.format(helper="from utils import to_device", target=cpu), "GPD202") == []
    assert lines(ROLLOUT.format(helper=OWN_HELPER, target="device"), "GPD202") == [11]


# set 36, LayoutLMv2 notebooks: a Hugging Face data set formatted onto the GPU yields its tensors
HF_FORMAT = """\
import torch
from torch.utils.data import DataLoader
from datasets import load_dataset
from transformers import AutoModelForSequenceClassification

ds = load_dataset("imdb", split="train[:64]")
ds.set_format(type="torch", {device})
loader = DataLoader(ds, batch_size=4)
model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model.to(device)
for batch in loader:
    outputs = model(**batch)
"""


def test_a_dataset_formatted_onto_the_gpu_yields_device_batches() -> None:
    assert lines(HF_FORMAT.format(device='device="cuda"'), "GPD101") == []
    assert lines(HF_FORMAT.format(device='device="cpu"'), "GPD101") == [13]


# set 36, StyleTTS2's aligner: a host arange overwritten by the next line, never read
OVERWRITTEN = """\
import torch
from torch import nn


class Aligner(nn.Module):
    def forward(self, scores, ref):
        n = int(scores.sum().round().item())
        t = torch.arange(0, n).expand(n)
        t = {second}
        return t * scores.unsqueeze(-1)
"""


def test_a_factory_overwritten_unread_by_the_next_line_is_dead() -> None:
    placed = "torch.arange(0, n).unsqueeze(0).expand((len(scores), n)).to(ref.device)"
    assert lines(OVERWRITTEN.format(second=placed), "GPD106") == []
    # the next line reads it: the host tensor goes on
    assert lines(OVERWRITTEN.format(second="t.unsqueeze(0)"), "GPD106") == [8]
