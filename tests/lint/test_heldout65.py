"""Regressions of held-out set 65 and of the re-scores since set 64, reduced and rewritten here:
the bug each rule must report, next to the correct code it must leave alone."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines, project_lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths, lint_source

# Time-Series-Library (set 28, a regression of the thirteenth session): masks built on the host,
# converted to a dtype, then moved where the input is
MASKS = """\
import torch
import torch.nn as nn


class Gate(nn.Module):
    def forward(self, x):
        n = x.shape[-1]
        dtype = torch.float32
        masks = []
        for k in range(n):
            same = ((torch.arange(n) % 4 == k % 4) & (torch.arange(n) != k)).to(dtype){move}
            keep = (~torch.eye(n).bool()).to(dtype){move}
            masks.append(same * keep)
        return x * torch.stack(masks)
"""


def test_a_mask_converted_then_moved_to_the_input_is_placed() -> None:
    assert lines(MASKS.format(move=".to(x.device)"), "GPD106") == []
    # converted only, it stays on the host, and meets the input there
    assert lines(MASKS.format(move=""), "GPD106") == [11, 11, 12]


# a dtype conversion is no move, whether it names the dtype or reads it from a tensor
CONVERTED = """\
import torch
import torch.nn as nn


class Gate(nn.Module):
    def forward(self, x):
        dtype = torch.float32
        keep = torch.eye(x.shape[-1]).to({dtype})
        return x * keep
"""


def test_a_factory_converted_to_a_dtype_stays_on_the_host() -> None:
    for dtype in ("torch.float32", "dtype", "x.dtype", "dtype=x.dtype"):
        assert lines(CONVERTED.format(dtype=dtype), "GPD106") == [8], dtype
    assert lines(CONVERTED.format(dtype="x.dtype).to(x.device"), "GPD106") == []


# pytorch-llama (set 65): the script makes CUDA the default tensor type before it builds the
# model of another file, whose key/value cache is a plain `torch.zeros` attribute
CACHED_ATTENTION = """\
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, dim, max_len):
        super().__init__()
        self.wq = nn.Linear(dim, dim)
        self.cache_k = torch.zeros((1, max_len, dim))

    def forward(self, x, pos):
        q = self.wq(x)
        self.cache_k[:1, pos : pos + 1] = q
        keys = self.cache_k[:1, : pos + 1]
        return torch.matmul(q, keys.transpose(1, 2))
"""

INFERENCE = """\
import torch
from model import Attention


def build(device):
    if device == "cuda":
        torch.set_default_tensor_type({cuda_type})
    else:
        torch.set_default_tensor_type(torch.BFloat16Tensor)
    return Attention(16, 32).to(device)


if __name__ == "__main__":
    device = "cuda" if torch.cuda.is_available() else "cpu"
    attention = build(device)
    print(attention(torch.randn(1, 1, 16, device=device), 0))
"""


def model_findings(tmp_path: Path, cuda_type: str) -> list[tuple[int, str]]:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "model.py").write_text(CACHED_ATTENTION)
    (tmp_path / "inference.py").write_text(INFERENCE.format(cuda_type=cuda_type))
    result = lint_paths([str(tmp_path / "model.py")], LintConfig(), jobs=1, use_cache=False)
    assert not result.errors
    return [(finding.line, finding.code) for finding in result.findings]


def test_a_cache_built_after_an_importer_makes_cuda_the_default_is_on_the_gpu(
    tmp_path: Path,
) -> None:
    assert model_findings(tmp_path, "torch.cuda.HalfTensor") == []
    assert model_findings(tmp_path, "'torch.cuda.FloatTensor'") == []
    # a host tensor type changes the dtype only: the cache stays on the host
    assert model_findings(tmp_path, "torch.DoubleTensor") == [(9, "GPD105")]


def test_a_host_default_tensor_type_in_the_file_itself_is_no_device() -> None:
    script = CACHED_ATTENTION + INFERENCE.replace("from model import Attention\n", "")
    assert lines(script.format(cuda_type="torch.cuda.HalfTensor"), "GPD105") == []
    assert lines(script.format(cuda_type="torch.DoubleTensor"), "GPD105") == [9]


# deeplearning-lectures (set 65): the script hands its checkpoint path to another file's saver
# when it builds it, saves through the saver's method while it trains, and reloads the best
# model at the end of the same run
SAVER = """\
import torch


class ModelCheckpoint:
    def __init__(self, filepath, state):
        self.best = None
        self.filepath = filepath
        self.state = state

    def update(self, loss):
        if self.best is None or loss < self.best:
            torch.save(self.state, self.filepath)
            self.best = loss
"""

TRAIN = """\
import os
import sys

import torch
import torch.nn as nn

import utils

device = torch.device("cuda") if "--use_gpu" in sys.argv else torch.device("cpu")
logdir = os.path.join("runs", sys.argv[-1])
model = nn.Linear(8, 2).to(device)
{resume}
checkpoint = utils.ModelCheckpoint(logdir + "/best_model.pt", {{"model": model}})
for step in range(10):
    loss = model(torch.randn(4, 8, device=device)).pow(2).mean()
    loss.backward()
    checkpoint.update(loss.item())

best_model_path = logdir + "/best_model.pt"
model = torch.load(best_model_path)["model"].to(device)
"""


def test_a_checkpoint_saved_by_a_saver_built_with_its_path_is_the_runs_own(
    tmp_path: Path,
) -> None:
    files = {"utils.py": SAVER, "main.py": TRAIN.format(resume="")}
    assert project_lines(tmp_path, files, "GPD201") == []
    # a resume before the saver exists reads another run's checkpoint
    resume = 'model = torch.load("pretrained.pt")["model"].to(device)'
    files["main.py"] = TRAIN.format(resume=resume)
    assert project_lines(tmp_path, files, "GPD201") == [12]


# d2l-en (recall set 65): a validation loss summed on the device, handed to the book's
# Animator, which plots each point with matplotlib
ANIMATED = """\
import torch
from torch import nn
from d2l import torch as d2l

loss = nn.CrossEntropyLoss(reduction="none")


def evaluate_loss(data_iter, net, device):
    total, n = 0.0, 0
    for features, labels in data_iter:
        features, labels = features.to(device), labels.to(device)
        total += loss(net(features), labels).sum()
        n += labels.numel()
    return (total / n){item}


def train(net, train_iter, valid_iter, num_epochs, device):
    net = net.to(device)
    animator = d2l.Animator(xlabel="epoch", xlim=[1, num_epochs], legend=["valid loss"])
    for epoch in range(num_epochs):
        valid_loss = evaluate_loss(valid_iter, net, device)
        animator.add(epoch + 1, (None, valid_loss))


train(nn.Linear(4, 2), [], [], 10, d2l.try_gpu())
"""


def test_a_device_loss_handed_to_the_d2l_animator() -> None:
    assert lines(ANIMATED.format(item=""), "GPD202") == [22]
    assert lines(ANIMATED.format(item=".item()"), "GPD202") == []


# CQL (set 64): SAC's temperature, a learnable host scalar with its own optimizer, moved or
# kept on the host by hand wherever it is read
TEMPERATURE = """\
import torch
import torch.nn as nn
import torch.optim as optim


class Agent(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.device = device
        self.critic = nn.Linear(4, 1).to(device)
        self.log_alpha = torch.tensor([0.0], requires_grad=True)
        self.alpha_optimizer = optim.Adam(params=[self.log_alpha], lr=3e-4)

    def learn(self, states, log_pis):
        q = self.critic(states)
        alpha_loss = -(self.log_alpha.exp() * (log_pis.cpu() - 1.0).detach().cpu()).mean()
        self.alpha_optimizer.zero_grad()
        alpha_loss.backward()
        self.alpha_optimizer.step()
        alpha = torch.clamp(self.log_alpha.exp(), min=0.0, max=1e6).to(self.device)
        return {use}


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
agent = Agent(device)
agent.learn(torch.randn(2, 4, device=device), torch.randn(2, 1, device=device))
"""


def test_a_learnable_host_scalar_placed_by_hand_at_every_read() -> None:
    assert lines(TEMPERATURE.format(use="q * alpha"), "GPD105") == []
    # one read that meets the device unmoved is the bug
    assert lines(TEMPERATURE.format(use="q * self.log_alpha.exp()"), "GPD105") == [11]


# distributed_shampoo's tests (set 64): the devices to test on, CUDA only where it is
DEVICES = """\
import torch

available_devices = (torch.device("cpu"),) + (torch.device("cuda"),) * {times}


def check(device):
    return torch.ones(2, device=device).sum()


for device in available_devices:
    check(device)
"""


def test_a_device_tuple_repeated_by_an_availability_test() -> None:
    assert lines(DEVICES.format(times="torch.cuda.is_available()"), "GPD203") == []
    assert lines(DEVICES.format(times="int(torch.cuda.is_available())"), "GPD203") == []
    assert lines(DEVICES.format(times="2"), "GPD203") == [3]


# modded-nanogpt (set 64): a rotary cache built in forward on the input's device, in a script
# that moves its model once, before it runs it
ROTARY = """\
import torch
import torch.nn as nn


class Rotary(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim
        self.seq_len_cached = None
        self.cos_cached = None

    def forward(self, x):
        seq_len = x.shape[1]
        if seq_len != self.seq_len_cached:
            self.seq_len_cached = seq_len
            t = torch.arange(seq_len, device=x.device).float()
            self.cos_cached = torch.outer(t, t[: self.dim]).cos()
        return x * self.cos_cached


model = Rotary(8)
model = model.cuda()
for step in range(10):
    out = model(torch.randn(2, 8, 8, device="cuda"))
{after}
"""


def test_a_forward_cache_in_a_script_that_moves_its_model_once() -> None:
    assert lines(ROTARY.format(after=""), "GPD105") == []
    # moved again after it ran: the cache stays where it was built
    after = "model = model.cpu()\nprint(model(torch.randn(2, 8, 8)))"
    assert lines(ROTARY.format(after=after), "GPD105") == [10]


# ragas (recall set 65): a class keeps a Hugging Face model it moved in `__init__`, and
# predicts over a DataLoader whose collate_fn is its own method, bound to an attribute
QUESTIONS = """\
import torch
from torch.utils.data import DataLoader
from tqdm import tqdm
from transformers import AutoModelForSeq2SeqLM


class QGen:
    def __init__(self, name, device):
        self.model = AutoModelForSeq2SeqLM.from_pretrained(name)
        self.model.to(device)
        self.device = device
        self.collate_fn = self.collate

    def collate(self, batch):
        return {{"input_ids": torch.tensor(batch){move}}}, torch.tensor(batch)

    def predict(self, sentences):
        dataloader = tqdm(DataLoader(sentences, batch_size=4, collate_fn=self.collate_fn))
        for _, data in enumerate(dataloader):
            inputs, labels = data
            logits = self.model(**inputs).logits
        return logits


device = "cuda" if torch.cuda.is_available() else "cpu"
print(QGen("t5-base", device).predict([[1, 2]]))
"""


def test_a_batch_from_the_classs_own_collate_method_is_on_the_host() -> None:
    source = QUESTIONS.format(move="")
    result = lint_source(source, "x.py", LintConfig(select=("GPD101",)))
    assert [finding.line for finding in result.findings] == [21]
    # spread as keywords: the hint moves each tensor, and no fix calls `.to()` on a dict
    assert "for k, v in inputs.items()" in result.findings[0].message
    assert not result.findings[0].fixable
    # a collate_fn that moves the batch itself puts it on the device
    assert lines(QUESTIONS.format(move=".to(self.device)"), "GPD101") == []


# XLNet's attention mask (bert-loves-chemistry, set 51): built on the host, returned moved to
# the model's first parameter, which carries its device (and dtype)
XLNET_MASK = """\
import torch
import torch.nn as nn


class XLNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def create_mask(self, qlen, mlen):
        attn_mask = torch.ones([qlen, qlen])
        mask_up = torch.triu(attn_mask, diagonal=1)
        attn_mask_pad = torch.zeros([qlen, mlen])
        ret = torch.cat([attn_mask_pad, mask_up], dim=1)
        ret = ret.to({target})
        return ret

    def forward(self, x):
        return self.proj(x) * self.create_mask(x.shape[0], 0)


model = XLNet().to("cuda")
print(model(torch.randn(8, 8, device="cuda")))
"""


def test_a_mask_moved_to_the_models_first_parameter_is_placed() -> None:
    assert lines(XLNET_MASK.format(target="next(self.parameters())"), "GPD106") == []
    assert lines(XLNET_MASK.format(target='torch.device("cuda")'), "GPD106") == []
    # converted to the parameter's dtype only, it stays on the host
    assert lines(XLNET_MASK.format(target="self.proj.weight.dtype"), "GPD106") == [11, 13]
