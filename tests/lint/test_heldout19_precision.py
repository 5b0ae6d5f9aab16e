"""Precision regressions from the nineteenth held-out set (public repositories linted before any
tuning, every finding judged): minimal programs of our own for each cause of a wrong finding,
beside the variant that must still be reported."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths

# an HF-style run script with a per-rank arm: each rank reads a cache of prepared examples
RUN_SCRIPT = """\
import argparse
import os
import torch
def load_examples(args, texts):
    path = os.path.join(args.data_dir, {name})
    if os.path.exists(path):
        features = torch.load(path)
    else:
        features = [[len(t)] for t in texts]
    return torch.tensor(features, dtype=torch.float)
parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=-1)
parser.add_argument("--data_dir", default=".")
args = parser.parse_args()
if args.local_rank == -1:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
else:
    torch.cuda.set_device(args.local_rank)
    device = torch.device("cuda", args.local_rank)
    torch.distributed.init_process_group(backend="nccl")
model = torch.nn.Linear(1, 2).to(device)
print(model(load_examples(args, ["a", "bb"]).to(device)))
"""


def test_a_cache_of_prepared_data_holds_no_device_tensors() -> None:
    assert lines(RUN_SCRIPT.format(name='"cached_train_examples"'), "GPD201") == []
    assert lines(RUN_SCRIPT.format(name='"scheduler.pt"'), "GPD201") == []
    assert lines(RUN_SCRIPT.format(name='"vocab.bin"'), "GPD201") == []
    # a model's weights are what a rank restores onto cuda:0
    assert lines(RUN_SCRIPT.format(name='"pytorch_model.bin"'), "GPD201") == [7]


# a script that saves each epoch under a name built with `+` and reloads the best one
RELOAD = """\
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda:0")
parser.add_argument("--save", default="./garage/model")
args = parser.parse_args()
device = torch.device(args.device)
model = torch.nn.Linear(3, 1).to(device)
losses = []
for epoch in range(3):
    loss = model(torch.randn(5, 3, device=device)).pow(2).mean().item()
    losses.append(loss)
    torch.save(model.state_dict(), args.save + "_epoch_" + str(epoch) + ".pth")
best = losses.index(min(losses))
model.load_state_dict(torch.load({loaded}))
"""


def test_a_name_built_with_plus_reloads_the_runs_own_checkpoint() -> None:
    own = 'args.save + "_epoch_" + str(best) + ".pth"'
    assert lines(RELOAD.format(loaded=own), "GPD201") == []
    other = 'args.pretrained + "_best.pth"'
    assert lines(RELOAD.format(loaded=other), "GPD201") == [15]


# a relative-position helper whose masking arm no call turns on
SHIFT = """\
import torch
def rel_shift(x, zero_triu=False):
    x = torch.cat([torch.zeros(x.size(0), 1, device=x.device), x], dim=1)[:, 1:]
    if zero_triu:
        ones = torch.ones(x.size(0), x.size(1))
        x = x * torch.tril(ones)
    return x
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 4).to(device)
y = rel_shift(model(torch.randn(4, 4, device=device)){flag})
"""


def test_an_arm_under_a_flag_the_call_leaves_false_does_not_run() -> None:
    assert lines(SHIFT.format(flag=""), "GPD106") == []
    assert lines(SHIFT.format(flag=", zero_triu=False"), "GPD106") == []
    assert lines(SHIFT.format(flag=", zero_triu=True"), "GPD106") == [5]


# a vocoder whose own `generate` moves its input to the GPU when there is one
VOCODER = """\
import numpy as np
import torch
import torch.nn as nn
class Vocoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
    def generate(self, mels):
        {move}
        return self.fc(mels).cpu().numpy()
model = Vocoder()
if torch.cuda.is_available():
    model = model.cuda()
def infer(mel: np.ndarray):
    return model.generate(torch.from_numpy(mel[None, ...]))
"""


def test_a_modules_own_method_is_walked_for_its_call() -> None:
    move = "mels = mels.cuda() if torch.cuda.is_available() else mels"
    assert lines(VOCODER.format(move=move), "GPD101") == []
    # without the move, the host input meets the GPU module at the call
    assert lines(VOCODER.format(move="pass"), "GPD101") == [15]


# a graph model's edge dropout whose probability comes in as a parameter
DROPOUT = """\
import torch
import torch.nn as nn
class Graph(nn.Module):
    def __init__(self, graph, n, config):
        super().__init__()
        self.emb = nn.Embedding(n, 8)
        self.graph = graph
        self.config = config
    def drop(self, g, keep_prob):
        index, values = g.indices(), g.values()
        mask = (torch.rand(len(values)) + keep_prob).int().bool()
        return torch.sparse_coo_tensor(index[:, mask], values[mask] / keep_prob, g.size())
    def forward(self):
        g = self.drop(self.graph, self.config["keep_prob"])
        return torch.sparse.mm(g, self.emb.weight)
model = Graph(torch.eye(4).to_sparse(), 4, {"keep_prob": 0.6}).cuda()
"""


def test_a_probability_parameter_is_a_number() -> None:
    assert lines(DROPOUT, "GPD106") == []
    assert lines(DROPOUT.replace("+ keep_prob).int()", "+ g.values()).int()"), "GPD106") == [11]


# a sampler that builds a GRUCell on the host and points its weights at the model's GRU
CELL = """\
import torch
import torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(4, 4, batch_first=True)
    def cell(self, gru):
        c = nn.GRUCell(gru.input_size, gru.hidden_size)
        {repoint}
        return c
    def generate(self, steps):
        rnn = self.cell(self.rnn)
        dev = next(self.parameters()).device
        x = torch.zeros(1, 4, device=dev)
        h = torch.zeros(1, 4, device=dev)
        for _ in range(steps):
            h = rnn(x, h)
        return h
net = Net().to("cuda" if torch.cuda.is_available() else "cpu")
net.generate(3)
"""


def test_a_module_whose_weights_are_repointed_at_device_data_is_placed() -> None:
    repoint = "c.weight_hh.data = gru.weight_hh_l0.data"
    assert lines(CELL.format(repoint=repoint), "GPD102") == []
    assert lines(CELL.format(repoint="pass"), "GPD102") == [12]


# a distributed helper module that joins the NCCL group; its caller pins the GPU right after
HELPER = """\
import torch.distributed as dist
def join_group(rank, world_size):
    dist.init_process_group(backend="nccl", world_size=world_size, rank=rank)
    return dist.get_rank()
{use}
"""


def test_a_group_joined_in_a_helper_no_code_here_uses_is_left_to_its_callers() -> None:
    assert lines(HELPER.format(use=""), "GPD404") == []
    # the file's own entry point spawns it: no rank ever picks a GPU
    spawned = "import torch.multiprocessing as mp\nmp.spawn(join_group, args=(2,), nprocs=2)"
    assert lines(HELPER.format(use=spawned), "GPD404") == [3]


# a forecaster that takes `device` and ignores it: its layers move with the module
FORECASTER = """\
import torch
import torch.nn as nn
class Forecaster(nn.Module):
    def __init__(self, d_model=16, device=torch.device("cuda:0")):
        super().__init__()
        self.proj = nn.Linear(d_model, d_model)
        {extra}
    def forward(self, x):
        return self.proj(x)
"""


def test_a_modules_own_layers_need_no_device_parameter() -> None:
    assert lines(FORECASTER.format(extra="pass"), "GPD113") == []
    # a raw tensor kept as a plain attribute does not move with the module
    extra = "self.mask = torch.ones(d_model)"
    assert lines(FORECASTER.format(extra=extra), "GPD113") == [4]


def test_a_module_mirroring_torch_factory_arguments_keeps_its_promise() -> None:
    """`device=None, dtype=None` beside the layers is torch.nn's factory-argument promise:
    `Attention(..., device="cuda")` should build the layers there, and here it does not."""
    source = FORECASTER.format(extra="pass").replace(
        'device=torch.device("cuda:0")):', "device=None, dtype=None):"
    )
    assert lines(source, "GPD113") == [4]


def test_a_module_method_of_another_project_file_is_walked_for_its_call(tmp_path: Path) -> None:
    """Real-Time-Voice-Cloning's vocoder: the model class lives in models/, the inference
    script hands its own `generate` a host mel, which `generate` moves itself."""
    model_file, script = VOCODER.split("model = Vocoder()\n")
    script = (
        "import numpy as np\nimport torch\nfrom vocoder import Vocoder\nmodel = Vocoder()\n"
        + script
    )
    move = "mels = mels.cuda() if torch.cuda.is_available() else mels"
    (tmp_path / "vocoder.py").write_text(model_file.format(move=move))
    (tmp_path / "infer.py").write_text(script)
    result = lint_paths([str(tmp_path / "infer.py")], LintConfig(select=("GPD101",)))
    assert [f.line for r in result.files for f in r.findings] == []
    (tmp_path / "vocoder.py").write_text(model_file.format(move="pass"))
    result = lint_paths([str(tmp_path / "infer.py")], LintConfig(select=("GPD101",)))
    assert [f.line for r in result.files for f in r.findings] == [8]
