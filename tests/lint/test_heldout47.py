"""Regressions of held-out sets 47-49 (public repositories) and of the recall reports gathered
beside them, reduced and rewritten here: correct code each rule must leave alone, next to the
bug it still finds, and the reported bugs it now finds."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines, project_lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_source

# self-supervised-depth-completion's criteria: losses that keep their last value on `self`
CRITERIA = """\
import torch
import torch.nn as nn


class PhotometricLoss(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, target, recon):
        diff = (target - recon).abs().sum(1)
        if diff.numel() > 0:
            self.loss = diff.mean()
        else:
            self.loss = 0
        return self.loss


class SmoothnessLoss(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, depth):
        def second_derivative(x):
            horizontal = 2 * x[:, :, 1:-1] - x[:, :, :-2] - x[:, :, 2:]
            return horizontal.abs().mean()

        self.loss = second_derivative(depth)
        return self.loss


class NTXent(nn.Module):
    def __init__(self, batch_size, temperature):
        super().__init__()
        self.temperature = temperature
        self.mask = self.correlated_mask(batch_size)
        self.criterion = nn.CrossEntropyLoss(reduction="sum")

    def correlated_mask(self, batch_size):
        mask = torch.ones((2 * batch_size, 2 * batch_size), dtype=bool)
        mask = mask.fill_diagonal_(0)
        return mask

    def forward(self, z_i, z_j):
        z = torch.cat((z_i, z_j), dim=0)
        return self.criterion(z @ z.T / self.temperature, z.argmax(1))
"""

MAIN = """\
import torch
import torch.nn as nn
import criteria

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 4).to(device)
photometric = criteria.PhotometricLoss()
smoothness = criteria.SmoothnessLoss()
contrastive = criteria.NTXent(8, 0.5)
for x, y in loader:
    x, y = x.to(device), y.to(device)
    loss = photometric(model(x), y) + smoothness(model(x))
    loss = loss + contrastive(model(x), model(y))
"""


def test_losses_that_keep_tensors_they_compute_hold_no_weights(tmp_path: Path) -> None:
    assert project_lines(tmp_path, {"criteria.py": CRITERIA, "main.py": MAIN}, "GPD102") == []


def test_a_loss_that_keeps_a_layer_it_built_still_needs_moving(tmp_path: Path) -> None:
    # the kept value is a module now (a layer's forward, not a tensor method): weights
    weighted = CRITERIA.replace(
        "self.mask = self.correlated_mask(batch_size)", "self.mask = nn.Linear(4, 4)"
    )
    found = project_lines(tmp_path, {"criteria.py": weighted, "main.py": MAIN}, "GPD102")
    assert found == [9]
    # a helper method that returns a layer, not a tensor
    layer = CRITERIA.replace("        return mask\n", "        return nn.Linear(4, 4)\n")
    assert project_lines(tmp_path, {"criteria.py": layer, "main.py": MAIN}, "GPD102") == [9]


# ICTP's DDP course: each rank's GPU picked as an integer index, under any name
RANK_INDEX = """\
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("nccl")
rank = dist.get_rank()
slot = {index}

net = nn.Linear(8, 2).to(slot)
for p in net.parameters():
    dist.broadcast(p.data, src=0)
wrapped = DDP(net, device_ids=[slot])
x = torch.randn(4, 8).to(slot)
total = wrapped(x).sum().detach()
dist.all_reduce(total)
"""


def test_a_gpu_index_from_the_rank_is_the_rank_device() -> None:
    source = RANK_INDEX.format(index="rank % torch.cuda.device_count()")
    for code in ("GPD102", "GPD401", "GPD404", "GPD406"):
        assert lines(source, code) == [], code
    # the same code with a constant: every rank on one GPU
    constant = RANK_INDEX.format(index="0")
    assert lines(constant, "GPD404") == [6]


HELLO = """\
import torch.distributed as dist


def greet():
    dist.init_process_group("nccl")
    print(f"rank {dist.get_rank()} of {dist.get_world_size()}")
    {work}
    dist.destroy_process_group()


if __name__ == "__main__":
    greet()
"""


def test_an_nccl_group_that_no_tensor_reaches_uses_no_gpu() -> None:
    assert lines(HELLO.replace("{work}", "pass"), "GPD404") == []
    # a collective on the group uses a GPU, and every rank picks cuda:0
    assert lines(HELLO.replace("{work}", "dist.barrier()"), "GPD404") == [5]


# multi-omics' GCN: a flag switches between building the tensors from a data frame and
# reading them back from files a previous run wrote
CACHE = """\
import numpy as np
import torch

from_cache = False
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def prepare(frame, name):
    if not from_cache:
        feats = torch.tensor(frame.values.astype(np.float32))
        mask = torch.tensor([v > 0 for v in frame.values[:, 0]])
    else:
        feats = torch.load(open(name + "_geno.pth", "rb"))
        {other} = torch.load(open(name + "_mask.pkl", "rb"))
    return feats, mask
"""


def test_a_load_standing_in_for_host_data_reads_a_data_cache() -> None:
    assert lines(CACHE.format(other="mask"), "GPD201") == []
    # a model's state loaded in that arm is no stand-in for the data
    assert lines(CACHE.format(other="state"), "GPD201") == [14]


# pyro's VAE example (pyro#538): the class moves itself before it builds its parts
LATE_PARTS = """\
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 50)


class VAE(nn.Module):
    def __init__(self, use_cuda=False):
        super().__init__()
        {early}
        self.z_dim = 50
        self.encoder = Encoder()
        self.decoder = nn.Linear(50, 784)
        {late}
"""


def test_parts_built_after_the_class_moves_itself_stay_on_the_host() -> None:
    move = "if use_cuda:\n            self.cuda()"
    assert lines(LATE_PARTS.format(early=move, late="pass"), "GPD102") == [16]
    # moved once every part exists: all of them go
    assert lines(LATE_PARTS.format(early="pass", late=move), "GPD102") == []
    assert lines(LATE_PARTS.format(early=move, late="self.to('cuda')"), "GPD102") == []


# set 48, Deep-Learning-Boot-Camp and DocyNoah: GPU notebooks whose first CUDA call needs a GPU
GPU_FIRST = """\
import numpy as np
import torch

{first}
x = torch.ones(3)
if torch.cuda.is_available():
    x = x.cuda() * 2
t = torch.from_numpy(np.zeros(4)).cuda()
"""


def test_a_script_whose_first_cuda_call_needs_a_gpu_offers_no_cpu_path() -> None:
    query = "print('devices', torch.cuda.device_count(), torch.cuda.current_device())"
    assert lines(GPU_FIRST.format(first=query), "GPD203") == []
    # the same query under a try: the script may go on without it
    guarded = f"try:\n    {query}\nexcept RuntimeError:\n    pass"
    assert lines(GPU_FIRST.format(first=guarded), "GPD203") == [11]
    # a fallback chosen first: the later query is a bug of a script that offers the CPU
    chosen = 'device = "cuda" if torch.cuda.is_available() else "cpu"\n' + query
    assert lines(GPU_FIRST.format(first=chosen), "GPD203") == [9]


SHOWN = """\
import torch


def show(value):
    print(value)


{flag}
show(torch.cuda.current_device())
show(torch.cuda.get_device_name(0))
"""


def test_a_query_only_shown_or_never_read_chooses_nothing() -> None:
    assert lines(SHOWN.format(flag="show(torch.cuda.is_available())"), "GPD205") == []
    assert lines(SHOWN.format(flag="HAS_CUDA = torch.cuda.is_available()"), "GPD205") == []
    # a flag the script reads is its CPU path
    read = "HAS_CUDA = torch.cuda.is_available()\nkwargs = {'pin_memory': True} if HAS_CUDA else {}"
    assert lines(SHOWN.format(flag=read), "GPD205") == [11]


# EECS498: an exercise that multiplies on the GPU and returns the result to the host
ROUND_TRIP = """\
import torch


def mm_round_trip(x, w):
    x = x.cuda()
    w = w.cuda()
    y = x.mm(w)
    y = y.to("cpu")
    {end}
"""


def test_a_result_brought_back_to_the_host_is_no_cpu_path() -> None:
    assert lines(ROUND_TRIP.format(end="return y"), "GPD203") == []
    # kept on the host and used there: the script chose the CPU for it
    assert lines(ROUND_TRIP.format(end="print(y)"), "GPD203") == [5, 6]


# RecentTrend's GAN notebook: noise moved under the same test that moves the generator
NOISE = """\
import torch
import torch.nn as nn


def make_noise(n):
    z = torch.randn(n, 16)
    if torch.cuda.is_available():
        return z.cuda()
    {rest}
    return z


gen = nn.Linear(16, 32)
if torch.cuda.is_available():
    gen.cuda()
fake = gen(make_noise(4))
"""


def test_what_follows_a_gpu_arm_that_returns_runs_on_the_cpu() -> None:
    assert lines(NOISE.format(rest="pass"), "GPD101") == []
    # an unrelated test that returns leaves the host value on a GPU path
    unrelated = NOISE.replace(
        "if torch.cuda.is_available():\n        return", "if n > 2:\n        return"
    )
    assert lines(unrelated.format(rest="pass"), "GPD101") == [16]


# Boot-Camp's two-layer notebook: `.cuda()` on an empty container moves nothing
EMPTY = """\
import torch

net = torch.nn.Sequential({parts}).cuda()
net.add_module("l1", torch.nn.Linear(10, 3))
xs = torch.randn(20, 10)
print(net(xs).data.numpy())
"""


def test_cuda_on_an_empty_container_moves_nothing() -> None:
    assert lines(EMPTY.format(parts=""), "GPD101") == []
    assert lines(EMPTY.format(parts=""), "GPD202") == []
    assert lines(EMPTY.format(parts="torch.nn.Linear(10, 10)"), "GPD101") == [6]


# RecentTrend's seq2seq model: an `init_hidden` left over from another version of the class
LEFTOVER = """\
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.rnn = nn.LSTM(size, size)
        {sets}

    def forward(self, seq, hidden=None):
        return self.rnn(seq, hidden)

    def init_hidden(self):
        return torch.zeros(1, self.batch, 6)


dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
enc = Encoder(6).to(dev)
print(enc(torch.randn(5, 2, 6, device=dev)))
"""


def test_a_method_reading_attributes_its_class_never_sets_is_dead() -> None:
    assert lines(LEFTOVER.format(sets="pass"), "GPD106") == []
    assert lines(LEFTOVER.format(sets="self.batch = 2"), "GPD106") == [15]


# FARM#5 (recall set 48): prediction heads moved one by one into a plain list
HEADS = """\
import torch.nn as nn


class AdaptiveModel(nn.Module):
    def __init__(self, language_model, prediction_heads, device):
        super().__init__()
        self.language_model = language_model.to(device)
        self.prediction_heads = [ph.to(device) for ph in prediction_heads]
        self.dropout = nn.Dropout(0.1)

    def forward(self, ids):
        pooled = self.language_model(ids)
        return [{use}(self.dropout(pooled)) for head in self.prediction_heads]
"""


def test_modules_moved_into_a_plain_list_are_not_registered() -> None:
    assert lines(HEADS.format(use="head"), "GPD104") == [8]
    # moved tensors in a list, never called: no submodules
    assert lines(HEADS.format(use="pooled * head.sum() + "), "GPD104") == []


# BLIP's demo notebook (salesforce/BLIP#168, recall set 48): a model from another library,
# switched to eval mode, brought to the CPU and fed the image a helper put on the device
BLIP = """\
import torch
from models.blip_itm import blip_itm

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def load_demo_image(size, device):
    return torch.randn(1, 3, size, size).to(device)


image = load_demo_image(384, device=device)
model = blip_itm(pretrained="model_base_retrieval_coco.pth")
{mode}
model = model.to(device="cpu")
score = model(image, "a woman sitting on the beach")
"""


def test_a_name_switched_to_eval_mode_holds_a_module() -> None:
    assert lines(BLIP.format(mode="model.eval()"), "GPD102") == [14]
    # nothing says the library's result is a module
    assert lines(BLIP.format(mode="pass"), "GPD102") == []


# set 48, pseudoESM: fairseq's sinusoidal positions, brought to the module's device with
# `type_as` on a registered buffer before use
SINUSOIDAL = """\
import math
import torch
import torch.nn as nn


class SinusoidalPositionalEmbedding(nn.Module):
    def __init__(self, dim, padding_idx):
        super().__init__()
        self.dim = dim
        self.padding_idx = padding_idx
        self.register_buffer("_float_tensor", torch.FloatTensor(1))
        self.weights = None

    def forward(self, tokens):
        bsz, seq_len = tokens.shape
        max_pos = self.padding_idx + 1 + seq_len
        if self.weights is None or max_pos > self.weights.size(0):
            self.weights = self.get_embedding(max_pos)
        {convert}
        positions = torch.arange(seq_len, device=tokens.device) + self.padding_idx + 1
        return self.weights.index_select(0, positions).view(bsz, seq_len, -1).detach()

    def get_embedding(self, num_embeddings):
        half_dim = self.dim // 2
        emb = math.log(10000) / (half_dim - 1)
        emb = torch.exp(torch.arange(half_dim, dtype=torch.float) * -emb)
        emb = torch.arange(num_embeddings, dtype=torch.float).unsqueeze(1) * emb.unsqueeze(0)
        return torch.cat([torch.sin(emb), torch.cos(emb)], dim=1)
"""


def test_a_table_brought_to_a_buffers_device_with_type_as_is_placed() -> None:
    convert = "self.weights = self.weights.type_as(self._float_tensor)"
    assert lines(SINUSOIDAL.format(convert=convert), "GPD106") == []
    assert lines(SINUSOIDAL.format(convert="pass"), "GPD106") == [26, 27]


# set 49, the GAN specialization's notebooks: `device = 'cuda'`, and a helper whose own
# default is the CPU
HELPER_DEFAULT = """\
import torch
import torch.nn as nn


def get_noise(n_samples, z_dim, device="cpu"):
    return torch.randn(n_samples, z_dim, device=device)


{device}
gen = nn.Linear(8, 16).to(device)
gen.load_state_dict(torch.load("gen_pretrained.pth"))
print(gen(get_noise(4, 8, device=device)).shape)
"""


def test_a_helpers_cpu_default_is_no_cpu_path_of_a_script_on_cuda() -> None:
    hard = HELPER_DEFAULT.format(device='device = "cuda"')
    assert lines(hard, "GPD201") == []
    assert lines(hard, "GPD203") == []
    # a script that chooses no device of its own: the helper's default is where it runs
    chosen = HELPER_DEFAULT.format(device='device = "cuda" if torch.cuda.is_available() else "cpu"')
    assert lines(chosen, "GPD201") == [11]


# set 49, pytorch-deepdream: a blur written as a module, with its kernel a plain tensor on
# the device, built where it is used
BLUR = """\
import torch
import torch.nn as nn
import torch.nn.functional as F

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Blur(nn.Module):
    def __init__(self, size):
        super().__init__()
        kernel = torch.ones(3, 1, size, size) / (size * size)
        self.weight = {weight}

    def forward(self, x):
        return F.conv2d(x, self.weight, groups=3)


image = torch.rand(1, 3, 32, 32, device=DEVICE)
smooth = Blur(5)(image)
"""


def test_a_module_built_where_it_is_called_is_named_by_its_constructor() -> None:
    assert lines(BLUR.format(weight="kernel.to(DEVICE)"), "GPD102") == []
    weighted = BLUR.format(weight="nn.Parameter(kernel)")
    result = lint_source(weighted, "x.py", LintConfig(select=("GPD102",)))
    assert [f.line for f in result.findings] == [19]
    assert "`Blur(5)` is built on the host where it is called" in result.findings[0].message


# set 49, PyTorchTutorial: a whole data set made on the device, split, then batched
SPLIT = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, random_split

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class PairSet(Dataset):
    def __init__(self, xs, ys):
        self.xs, self.ys = xs, ys

    def __len__(self):
        return len(self.xs)

    def __getitem__(self, i):
        return self.xs[i], self.ys[i]


xs = {xs}
train_part, test_part = random_split(PairSet(xs, xs.sum(1)), [800, 200])
net = nn.Linear(2, 1).to(device)
for bx, by in DataLoader(train_part, batch_size=32):
    out = net(bx)
"""


def test_a_split_of_a_data_set_on_the_device_yields_device_batches() -> None:
    assert lines(SPLIT.format(xs="torch.rand(1000, 2, device=device)"), "GPD101") == []
    assert lines(SPLIT.format(xs="torch.rand(1000, 2)"), "GPD101") == [23]


# set 48, EECS498: a reference convolution kept as a static `forward` of a plain class
REFERENCE = """\
import torch


class RefConv(object):
    {decorator}
    def forward(x, w, b):
        conv = torch.nn.Conv2d(w.shape[1], w.shape[0], w.shape[2:])
        conv.weight = torch.nn.Parameter(w)
        return conv(x)


dev = "cuda" if torch.cuda.is_available() else "cpu"
x = torch.randn(1, 3, 8, 8, device=dev)
print(RefConv.forward(x, torch.randn(4, 3, 3, 3, device=dev), None))
"""


def test_a_static_forward_of_a_plain_class_is_no_modules_forward() -> None:
    assert lines(REFERENCE.format(decorator="@staticmethod"), "GPD109") == []
    assert lines(REFERENCE.format(decorator=""), "GPD109") == [7]


# set 48, DDPM notebook: a device name bound and never read
LEFTOVER_DEVICE = """\
import torch
import torch.nn as nn

dev = "cuda"
model = nn.Linear(2, 2)
print(model(torch.randn(16, 2)){use})
"""


def test_a_cuda_name_nothing_reads_allocates_nothing() -> None:
    assert lines(LEFTOVER_DEVICE.format(use=""), "GPD203") == []
    assert lines(LEFTOVER_DEVICE.format(use=".to(dev)"), "GPD203") == [4]


def test_an_agents_train_method_is_no_mode_switch() -> None:
    # BCQ's `policy.train(replay_buffer, iterations)`: an agent's own method, no module
    agent = BLIP.replace("{mode}", "model.train(replay_buffer, 100)")
    assert lines(agent, "GPD102") == []
    switched = BLIP.replace("{mode}", "model.train(False)")
    assert lines(switched, "GPD102") == [14]


def test_a_helpers_cpu_default_that_a_call_leaves_out_is_a_cpu_run() -> None:
    # Inside-Deep-Learning's chapter 2: later sections call the trainer without a device
    left_out = HELPER_DEFAULT.format(device='device = "cuda"') + "cpu_noise = get_noise(4, 8)\n"
    assert lines(left_out, "GPD203") == [9]
    # left out, then moved at once: made on the CPU, used on the device
    moved = HELPER_DEFAULT.format(device='device = "cuda"') + "z = get_noise(4, 8).to(device)\n"
    assert lines(moved, "GPD203") == []


# thuml's forecasting experiments (Autoformer, iTransformer, PatchTST, ...): `train()` saves
# the best model through another file's EarlyStopping, `predict()` reloads it from a path built
# the same way
TOOLS = """\
import torch


class EarlyStopping:
    def __call__(self, val_loss, model, path):
        torch.save(model.state_dict(), path + "/" + "checkpoint.pth")
"""

EXPERIMENT = """\
import os
import torch
from tools import EarlyStopping


class Exp:
    def __init__(self, args):
        self.args = args
        self.device = torch.device("cuda:0" if args.use_gpu else "cpu")
        self.model = torch.nn.Linear(4, 1).to(self.device)

    def train(self, setting):
        path = os.path.join(self.args.checkpoints, setting)
        early_stopping = EarlyStopping()
        early_stopping(0.1, self.model, path)

    def predict(self, setting):
        path = {path}
        self.model.load_state_dict(torch.load(path + "/" + "checkpoint.pth"))


exp = Exp(args)
exp.train("s")
exp.predict("s")
"""


def test_a_checkpoint_a_sibling_method_saved_through_a_helper_is_the_runs_own(
    tmp_path: Path,
) -> None:
    same = EXPERIMENT.format(path="os.path.join(self.args.checkpoints, setting)")
    assert project_lines(tmp_path, {"tools.py": TOOLS, "main.py": same}, "GPD201") == []
    # a path the run never saved to: another run's checkpoint
    other = EXPERIMENT.format(path="self.args.pretrained")
    assert project_lines(tmp_path, {"tools.py": TOOLS, "main.py": other}, "GPD201") == [19]


# set 49, the GAN course's C3W1: a unit test also run on CUDA, in a notebook on `device = 'cuda'`
CUDA_CHECK = """\
import torch


def combine(real, fake, p):
    keep = torch.rand(len(real), device=real.device) < p
    real[~keep] = fake[~keep]
    return real


if torch.cuda.is_available():
    out = combine(torch.ones(4, 2).cuda(), torch.zeros(4, 2).cuda(), 0.5)
    {check}

device = {device}
gen = torch.nn.Linear(2, 2).to(device)
gen.load_state_dict(torch.load("gen.pth"))
"""


def test_a_unit_test_also_run_on_cuda_is_no_cpu_path() -> None:
    check = 'assert str(out.device).startswith("cuda")'
    assert lines(CUDA_CHECK.format(check=check, device='"cuda"'), "GPD201") == []
    # no test: the guard is the script's CPU fallback
    assert lines(CUDA_CHECK.format(check="print(out)", device='"cuda"'), "GPD201") == [16]
    # a script that falls back itself: its load fails on a CPU-only host
    chosen = '"cuda" if torch.cuda.is_available() else "cpu"'
    assert lines(CUDA_CHECK.format(check=check, device=chosen), "GPD201") == [16]


# InnerEye (recall set 50): a holder's `to_cuda()`, which its callers run under `if use_gpu:`
TO_CUDA = """\
import torch


def is_gpu_available():
    return torch.cuda.is_available()


class ModelAndInfo:
    def __init__(self, model):
        self.model = model

    def {name}(self):
        self.model = self.model.cuda()
"""


def test_a_method_named_for_the_gpu_leaves_the_choice_to_its_callers() -> None:
    assert lines(TO_CUDA.format(name="to_cuda"), "GPD203") == []
    assert lines(TO_CUDA.format(name="prepare"), "GPD203") == [13]


def test_a_method_call_of_the_helpers_name_does_not_leave_its_default_out() -> None:
    # set 50, falloutdurham's chapter 6: `def train(..., device="cpu")` beside `model.train()`
    hard = HELPER_DEFAULT.format(device='device = "cuda"').replace("get_noise", "train")
    assert lines(hard + "gen.train()\n", "GPD203") == []
    assert lines(hard + "train(4, 8)\n", "GPD203") == [9]
