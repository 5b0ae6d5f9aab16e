"""The rules of issue 12, on the shapes of real public code: each bug as users wrote it (from the
issue threads and fix commits cited), and the correct look-alike next to it, which must stay
quiet. Programs are paraphrased, not copied."""

from __future__ import annotations

import libcst as cst

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_source
from gpudoc.lint.fix import apply_edits, choose_fixes
from gpudoc.lint.model import Finding


def findings(source: str, code: str) -> list[Finding]:
    result = lint_source(source, "train.py", LintConfig(select=(code,)))
    assert result.error is None, result.error
    return [f for f in result.findings if f.code == code]


def lines(source: str, code: str) -> list[int]:
    return [f.line for f in findings(source, code)]


def fixed(source: str, code: str) -> str:
    """``source`` with every fix of ``code`` applied (unsafe ones too); it must parse."""
    chosen, rejected = choose_fixes(source, findings(source, code), unsafe=True)
    assert chosen and not rejected
    text = apply_edits(source, [edit for fix in chosen for edit in fix.edits])
    cst.parse_module(text)
    return text


# -- GPD108: a noise schedule on the CPU indexed by GPU timesteps (mattroz/diffusion-ddpm#5,
#    explainingai-code/DDPM-Pytorch#5) ------------------------------------------------------
DDPM = """\
import torch
import torch.nn as nn

class Scheduler:
    def __init__(self, steps=1000):
        self.betas = torch.linspace(1e-4, 0.02, steps)
        self.alphas_hat = torch.cumprod(1.0 - self.betas, dim=0)

    def add_noise(self, images, device):
        timesteps = torch.randint(0, 1000, (images.size(0),), device=device)
        alpha_hat = self.alphas_hat[timesteps].to(images.device)
        noise = torch.randn_like(images)
        return alpha_hat.sqrt()[:, None, None, None] * images + noise, timesteps

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Conv2d(3, 3, 3, padding=1).to(device)
"""


def test_gpd108_schedule_of_a_plain_class_indexed_by_device_timesteps() -> None:
    assert lines(DDPM, "GPD108") == [11]
    message = findings(DDPM, "GPD108")[0].message
    assert "self.alphas_hat" in message and "indices should be either on cpu" in message


def test_gpd108_quiet_on_buffers_and_schedules_moved_in_init() -> None:
    buffered = DDPM.replace(
        "        self.alphas_hat = torch.cumprod(1.0 - self.betas, dim=0)\n",
        "        self.alphas_hat = torch.cumprod(1.0 - self.betas, dim=0).to(device)\n",
    )
    moved_on_use = DDPM.replace("self.alphas_hat[timesteps]", "self.alphas_hat.to(device)[t]")
    assert lines(buffered, "GPD108") == []
    assert lines(moved_on_use, "GPD108") == []


def test_gpd108_one_hot_of_device_labels_and_host_labels() -> None:
    source = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(10, 10).to(device)
for images, labels in torch.utils.data.DataLoader(dataset, batch_size=8):
    images, labels = images.to(device), labels.to(device)
    target = torch.eye(10)[labels]
    host_target = torch.eye(10)[labels.cpu()]
    placed_target = torch.eye(10, device=device)[labels]
"""
    assert lines(source, "GPD108") == [6]


# -- GPD109: a layer built in forward() ---------------------------------------------------------
def test_gpd109_batchnorm_and_linear_built_in_forward() -> None:
    source = """\
import torch.nn as nn
import torch.nn.functional as F

class Block(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        x = self.conv(x)
        x = nn.BatchNorm2d(x.size(1))(x)
        head = nn.Linear(x.size(1), 10)
        x = F.relu(x)
        return head(x.mean((2, 3)))
"""
    assert lines(source, "GPD109") == [11, 12]


def test_gpd109_quiet_on_functional_and_parameterless_layers() -> None:
    source = """\
import torch.nn as nn
import torch.nn.functional as F

class Block(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.proj = None

    def forward(self, x):
        x = F.batch_norm(self.conv(x), None, None, training=True)
        x = nn.Upsample(scale_factor=2)(nn.ReLU()(x))
        if self.proj is None:
            self.proj = nn.Linear(x.size(1), 10).to(x.device)
        return self.proj(nn.Flatten()(x))
"""
    assert lines(source, "GPD109") == []


# -- GPD110: generators (pytorch/pytorch#98792, zhang-can/CoLA#10) ------------------------------
def test_gpd110_cuda_generator_handed_to_the_loader() -> None:
    source = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
data = TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
generator = torch.Generator(device=device)
generator.manual_seed(0)
loader = DataLoader(data, batch_size=8, shuffle=True, generator=generator)
noise = torch.randn(8, 4, device=device, generator=generator)
"""
    assert lines(source, "GPD110") == [7]


def test_gpd110_quiet_under_a_default_device() -> None:
    # amdegroot/ssd.pytorch#578 fails from set_default_tensor_type, not from a generator
    source = """\
import torch
from torch.utils.data import DataLoader
torch.set_default_tensor_type("torch.cuda.FloatTensor")
loader = DataLoader(dataset, shuffle=True, generator=torch.Generator(device="cuda"))
"""
    assert lines(source, "GPD110") == []
    late = """\
import torch
from torch.utils.data import DataLoader

def train(dataset):
    return DataLoader(dataset, shuffle=True, generator=torch.Generator(device="cuda"))

if __name__ == "__main__":
    torch.set_default_tensor_type(torch.cuda.FloatTensor)
    train(dataset)
"""
    assert lines(late, "GPD110") == []


# -- GPD111: a move named, not called -----------------------------------------------------------
def test_gpd111_bare_cuda_is_reported_and_fixed_with_parentheses() -> None:
    source = """\
import torch
import torchvision
model = torchvision.models.resnet18()
if torch.cuda.is_available():
    model.cuda
criterion = torch.nn.CrossEntropyLoss()
use_cuda = args.cuda
"""
    assert lines(source, "GPD111") == [5]
    assert "    model.cuda()\n" in fixed(source, "GPD111")


# -- GPD112: a target packed from the host captions (yunjey/pytorch-tutorial's captioning loop,
#    with the move written after the packing) ---------------------------------------------------
CAPTIONING = """\
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence

class Captioner(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(1000, 32)
        self.lstm = nn.LSTM(32, 32, batch_first=True)
        self.linear = nn.Linear(32, 1000)

    def forward(self, features, captions, lengths):
        packed = pack_padded_sequence(self.embed(captions), lengths, batch_first=True)
        hiddens, _ = self.lstm(packed)
        return self.linear(hiddens[0])

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
decoder = Captioner().to(device)
criterion = nn.CrossEntropyLoss()
data_loader = torch.utils.data.DataLoader(dataset, batch_size=16, collate_fn=None)
for i, (images, captions, lengths) in enumerate(torch.utils.data.DataLoader(dataset)):
    targets = pack_padded_sequence(captions, lengths, batch_first=True)[0]
    images = images.to(device)
    captions = captions.to(device)
    outputs = decoder(images, captions, lengths)
    loss = criterion(outputs, targets)
"""


def test_gpd112_targets_packed_before_the_captions_moved() -> None:
    assert lines(CAPTIONING, "GPD112") == [22]
    assert "captions = captions.to(device)" in findings(CAPTIONING, "GPD112")[0].message


def test_gpd112_quiet_in_the_tutorial_order() -> None:
    ordered = CAPTIONING.replace(
        "    targets = pack_padded_sequence(captions, lengths, batch_first=True)[0]\n", ""
    ).replace(
        "    outputs = decoder(",
        "    targets = pack_padded_sequence(captions, lengths, batch_first=True)[0]\n"
        "    outputs = decoder(",
    )
    assert lines(ordered, "GPD112") == []


# -- GPD113: init_hidden ignores its device (char-rnn shapes) -----------------------------------
def test_gpd113_init_hidden_that_ignores_its_device() -> None:
    source = """\
import torch
import torch.nn as nn

class CharRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(64, 128, 2)

    def init_hidden(self, batch_size, device):
        return (torch.zeros(2, batch_size, 128), torch.zeros(2, batch_size, 128))

    def init_state(self, batch_size, device):
        weight = next(self.parameters())
        return weight.new_zeros(2, batch_size, 128).to(device)
"""
    assert lines(source, "GPD113") == [9]
    moved_later = """\
import torch
def make_batch(n, rank, output_device=None):
    inputs = torch.randn(n, 2)
    return inputs.cuda(rank)
"""
    assert lines(moved_later, "GPD113") == []


# -- GPD205: nanoGPT's bf16 probe before karpathy/nanoGPT#304 was fixed -------------------------
NANOGPT = """\
import torch
device = 'cuda'  # 'cpu', 'cuda', 'cuda:0', or 'mps'
dtype = 'bfloat16' if torch.cuda.is_bf16_supported() else 'float16'
exec(open('configurator.py').read())
device_type = 'cuda' if 'cuda' in device else 'cpu'
ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16}[dtype]
"""


def test_gpd205_nanogpt_bf16_probe_and_its_fix() -> None:
    assert lines(NANOGPT, "GPD205") == [3]
    repaired = fixed(NANOGPT, "GPD205")
    assert "(torch.cuda.is_available() and torch.cuda.is_bf16_supported())" in repaired
    assert lines(repaired, "GPD205") == []


def test_gpd205_quiet_in_gpu_only_scripts_and_behind_guards() -> None:
    gpu_only = NANOGPT.replace("device_type = 'cuda' if 'cuda' in device else 'cpu'\n", "")
    guarded = NANOGPT.replace(
        "if torch.cuda.is_bf16_supported()",
        "if torch.cuda.is_available() and torch.cuda.is_bf16_supported()",
    )
    assert lines(gpu_only, "GPD205") == []
    assert lines(guarded, "GPD205") == []


def test_gpd205_helpers_count_where_the_file_calls_them() -> None:
    source = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

def gpu_report():
    print(torch.cuda.get_device_name(0))

def main():
    free, total = torch.cuda.mem_get_info()
    if torch.cuda.is_available():
        gpu_report()

def library_helper():
    return torch.cuda.get_device_capability()

if __name__ == "__main__":
    main()
"""
    assert lines(source, "GPD205") == [8]


# -- GPD206: a sampling helper that defaults to CUDA --------------------------------------------
def test_gpd206_reported_only_where_a_call_relies_on_the_default() -> None:
    source = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

def sample(model, n, device="cuda"):
    return model(torch.randn(n, 128, device=device))

def evaluate(model, loader, device="cuda"):
    return [model(x.to(device)) for x, _ in loader]

images = sample(generator, 64)
scores = evaluate(generator, loader, device=device)
"""
    assert lines(source, "GPD206") == [4]
    assert 'device="cuda" if torch.cuda.is_available() else "cpu"' in fixed(source, "GPD206")


# timm 047a5ec0 "Fix bugs that Mixup does not work device=cpu": mixup_target's default
MIXUP = """\
import torch

def one_hot(x, num_classes, on_value=1.0, off_value=0.0, device="cuda"):
    x = x.long().view(-1, 1)
    return torch.full((x.size(0), num_classes), off_value, device=device).scatter_(1, x, on_value)

def mixup_target(target, num_classes, lam=1.0, smoothing=0.0, device="cuda"):
    y1 = one_hot(target, num_classes, device=device)
    y2 = one_hot(target.flip(0), num_classes, device=device)
    return y1 * lam + y2 * (1.0 - lam)

class Mixup:
    def _mix_batch(self, x):
        return torch.tensor(0.5, device=x.device, dtype=x.dtype)

    def __call__(self, x, target):
        lam = self._mix_batch(x)
        return x, mixup_target(target, self.num_classes, lam, self.label_smoothing)

class FastCollateMixup(Mixup):
    def __call__(self, batch):
        target = torch.tensor([b[1] for b in batch], dtype=torch.int64)
        return mixup_target(target, self.num_classes, 0.5, self.label_smoothing, device="cpu")
"""


def test_gpd206_timm_mixup_default_and_its_fix() -> None:
    assert lines(MIXUP, "GPD206") == [7]
    repaired = MIXUP.replace("self.label_smoothing)\n", "self.label_smoothing, x.device)\n")
    assert lines(repaired, "GPD206") == []


def test_gpd206_a_torch_function_of_the_same_name_is_not_a_call_site() -> None:
    # timm's fast_norm wraps torch.is_autocast_enabled in a function of the same name
    source = """\
import torch
device = "cuda" if torch.cuda.is_available() else "cpu"

def is_autocast_enabled(device_type="cuda"):
    try:
        return torch.is_autocast_enabled(device_type)
    except TypeError:
        return torch.is_autocast_enabled()
"""
    assert lines(source, "GPD206") == []


# -- GPD303: hand-made weights moved after the optimizer ("What is torch.nn really?" shapes) ---
def test_gpd303_weights_moved_after_the_optimizer() -> None:
    source = """\
import math
import torch
dev = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
weights = torch.randn(784, 10) / math.sqrt(784)
weights.requires_grad_()
weights = torch.randn(784, 10, requires_grad=True)
bias = torch.zeros(10, requires_grad=True)
opt = torch.optim.SGD([weights, bias], lr=0.5)
weights, bias = weights.to(dev), bias.to(dev)
"""
    assert lines(source, "GPD303") == [9]


def test_gpd303_quiet_when_the_optimizer_comes_after_the_move() -> None:
    source = """\
import torch
dev = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
weights = torch.randn(784, 10, requires_grad=True)
weights = weights.to(dev).detach().requires_grad_()
opt = torch.optim.SGD([weights], lr=0.5)
"""
    assert lines(source, "GPD303") == []


# -- GPD406: a length broadcast from a CPU tensor (mistralai/mistral-inference#252) -------------
def test_gpd406_cpu_length_broadcast_over_nccl() -> None:
    source = """\
import torch
import torch.distributed as dist

def broadcast_prompt(tokens, rank):
    length = torch.tensor([len(tokens)], dtype=torch.long)
    dist.broadcast(length, src=0)
    ids = torch.tensor(tokens, device=f"cuda:{rank}")
    dist.broadcast(ids, src=0)
    return ids

dist.init_process_group(backend="nccl")
torch.cuda.set_device(dist.get_rank())
"""
    assert lines(source, "GPD406") == [6]


# pytorch/examples#1034: imagenet's AverageMeter reduced a torch.FloatTensor over NCCL
IMAGENET = """\
import argparse
import torch
import torch.distributed as dist
parser = argparse.ArgumentParser()
parser.add_argument("--dist-backend", default="nccl", type=str)
args = parser.parse_args()

class AverageMeter:
    def __init__(self, use_accel):
        self.sum, self.count, self.use_accel = 0.0, 0, use_accel

    def all_reduce(self):
        total = torch.FloatTensor([self.sum, self.count])
        dist.all_reduce(total, dist.ReduceOp.SUM, async_op=False)
        self.sum, self.count = total.tolist()

dist.init_process_group(backend=args.dist_backend, init_method="env://")
model = torch.nn.Linear(8, 8).cuda()
"""


def test_gpd406_imagenet_meter_before_and_after_its_fix() -> None:
    assert lines(IMAGENET, "GPD406") == [14]
    fixed_then = IMAGENET.replace(
        "        total = torch.FloatTensor([self.sum, self.count])\n",
        '        device = "cuda" if torch.cuda.is_available() else "cpu"\n'
        "        total = torch.tensor([self.sum, self.count], device=device)\n",
    )
    fixed_now = IMAGENET.replace(
        "        total = torch.FloatTensor([self.sum, self.count])\n",
        "        if self.use_accel:\n"
        "            device = torch.accelerator.current_accelerator()\n"
        "        else:\n"
        '            device = torch.device("cpu")\n'
        "        total = torch.tensor([self.sum, self.count], device=device)\n",
    )
    assert lines(fixed_then, "GPD406") == []
    assert lines(fixed_now, "GPD406") == []


def test_gpd406_quiet_on_gloo_and_on_cuda_plus_cpu_backends() -> None:
    source = """\
import torch
import torch.distributed as dist
dist.init_process_group(backend="cuda:nccl,cpu:gloo")
length = torch.tensor([3])
dist.broadcast(length, src=0)
"""
    assert lines(source, "GPD406") == []
    assert lines(source.replace("cuda:nccl,cpu:gloo", "gloo"), "GPD406") == []


# -- GPD202 on lists: np.mean over device losses ------------------------------------------------
def test_gpd202_numpy_on_a_list_of_device_losses() -> None:
    source = """\
import numpy as np
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)
criterion = torch.nn.CrossEntropyLoss()

def validate(loader):
    losses, accuracies = [], []
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        out = model(x)
        losses.append(criterion(out, y))
        accuracies.append((out.argmax(1) == y).float().mean().item())
    return np.mean(losses), np.mean(accuracies)
"""
    assert lines(source, "GPD202") == [14]
    assert "losses" in findings(source, "GPD202")[0].message
    plotted = source.replace(
        "    return np.mean(losses), np.mean(accuracies)",
        "    plt.plot(losses)\n    return accuracy_score(labels, accuracies)",
    ).replace(
        "import numpy as np",
        "import matplotlib.pyplot as plt\nfrom sklearn.metrics import accuracy_score",
    )
    assert lines(plotted, "GPD202") == [15]
    quiet = source.replace(
        "losses.append(criterion(out, y))", "losses.append(criterion(out, y).item())"
    )
    assert lines(quiet, "GPD202") == []
