"""Precision and recall regressions of the thirty-ninth round (public repositories), reduced and
rewritten here: correct code each rule must leave alone, next to the bug it still finds."""

from __future__ import annotations

from lint_lines import lines

# tgn, set 38: the best epoch's checkpoint, named by the same path-building lambda the loop
# saves with, is this run's own file
BUILDER = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
{builder}
model = torch.nn.Linear(4, 2).to(device)
for epoch in range(3):
    torch.save(model.state_dict(), ckpt_path({saved}))
    best = epoch
model.load_state_dict(torch.load(ckpt_path({loaded})))
"""


def test_a_path_built_by_the_same_builder_is_this_runs_file() -> None:
    lam = 'ckpt_path = lambda epoch: f"./saved/ckpt-{epoch}.pt"'
    assert lines(BUILDER.format(builder=lam, saved="epoch", loaded="best"), "GPD201") == []
    named = 'def ckpt_path(name):\n    return "./saved/" + name'
    same = BUILDER.format(builder=named, saved="epoch", loaded="best")
    assert lines(same, "GPD201") == []
    # the builder given another literal name reads another file (a download, a release)
    other = BUILDER.format(builder=named, saved='"mine.pt"', loaded='"released.pt"')
    assert lines(other, "GPD201") == [10]


# girafe-ai's seminar, set 37: a runner object saves to the path its constructor was given
RUNNER = """\
import torch
from torch import nn

device = torch.device("cuda:0") if torch.cuda.is_available() else torch.device("cpu")


class Runner:
    def __init__(self, model, checkpoint_name=None):
        self.model = model
        self.checkpoint_name = checkpoint_name


class CNNRunner(Runner):
    def save_checkpoint(self):
        torch.save(self.model, open(self.checkpoint_name, "wb"))


model = nn.Linear(4, 2).to(device)
ckpt_name = "model_cnn.ckpt"
runner = CNNRunner(model, {given})
with open(ckpt_name, "rb") as f:
    best = torch.load(f)
"""


def test_a_path_given_to_a_saving_objects_constructor_is_this_runs_file() -> None:
    assert lines(RUNNER.format(given="ckpt_name"), "GPD201") == []
    assert lines(RUNNER.format(given="checkpoint_name=ckpt_name"), "GPD201") == []
    assert lines(RUNNER.format(given='"other.ckpt"'), "GPD201") == [22]


# Mastering-PyTorch's notebook: the cell saves `lstm_model.pt`, the next loads it by a longer path
BASENAME = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)
torch.save(model.state_dict(), "lstm_model.pt")
model.load_state_dict(torch.load("../../book/04_rnn/{name}"))
"""


def test_a_file_of_the_name_this_run_saved_is_its_own() -> None:
    assert lines(BASENAME.format(name="lstm_model.pt"), "GPD201") == []
    assert lines(BASENAME.format(name="pretrained_lstm.pt"), "GPD201") == [6]


# nlptown's notebook: train() returns the path of the best state it saved; a test() loads it
RETURNED = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)


def train(model, epochs):
    best_state_path = None
    for epoch in range(epochs):
        path = f"model_state_{{epoch}}"
        torch.save(model.state_dict(), path)
        best_state_path = path
    return {returned}


best_state_path = train(model, 3)
STATE_PATH = best_state_path


def test(model, state_path):
    model.load_state_dict(torch.load(state_path))


test(model, STATE_PATH)
"""


def test_a_path_a_saving_function_returns_is_this_runs_file() -> None:
    assert lines(RETURNED.format(returned="best_state_path"), "GPD201") == []
    assert lines(RETURNED.format(returned="args.resume"), "GPD201") == [21]


# ReChorus, set 39: every model class nests a `Dataset`; the later ones subclass the first by a
# dotted name, which is no dataset base the linter knows. Linting it stopped with an internal
# error (the walk closed a dataset the later class never opened).
NESTED_DATASETS = """\
import torch
from torch import nn
from torch.utils.data import Dataset as BaseDataset


class BaseModel(nn.Module):
    class Dataset(BaseDataset):
        def __getitem__(self, index):
            return torch.zeros(3)


class GeneralModel(BaseModel):
    class Dataset(BaseModel.Dataset):
        def __getitem__(self, index):
            return torch.ones(3)


model = GeneralModel().cuda()
out = model(torch.randn(2, 3))
"""


def test_a_nested_class_reusing_a_datasets_name_lints() -> None:
    assert lines(NESTED_DATASETS, "GPD101") == [19]


# Inside-Deep-Learning, set 39: a helper that moves the module it is given, called on several
# modules (one walk of its body serves calls of the same shape: each call's module is moved)
HELPER_MOVES = """\
import torch
from torch import nn


def train_network(model, loader, device="cpu"):
    model.to(device)
    for x in loader:
        model(x.to(device))


device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
other = nn.Linear(4, 4)
train_network(other, [torch.randn(3, 4)], device=device)
net = nn.Linear(4, 2)
{trained}
net = net.eval()
out = net(torch.randn(1, 4).to(device))
"""


def test_a_helper_moves_every_module_it_is_called_on() -> None:
    trained = "train_network(net, [torch.randn(3, 4)], device=device)"
    assert lines(HELPER_MOVES.format(trained=trained), "GPD102") == []
    assert lines(HELPER_MOVES.format(trained="pass"), "GPD102") == [16]


# the same book: a backbone inside a container that the helper moves is on the device too
CONTAINER = """\
import torch
from torch import nn


def train_network(model, loader, device="cpu"):
    model.to(device)


device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
backbone = nn.Linear(4, 4)
model = nn.Sequential({parts}, nn.Linear(4, 2))
train_network(model, [torch.randn(3, 4)], device=device)
x = torch.randn(1, 4).to(device)
feats = backbone(x)
"""


def test_a_module_inside_a_container_a_helper_moves_is_moved() -> None:
    assert lines(CONTAINER.format(parts="backbone"), "GPD102") == []
    assert lines(CONTAINER.format(parts="nn.Linear(4, 4)"), "GPD102") == [10]


# MedicalZooPytorch, set 39: `--cuda` is store_true with default=True, so always on: no CPU run
ALWAYS_ON = """\
import argparse
import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--cuda", action="store_true"{default})
args = parser.parse_args()
model = nn.Linear(4, 2)
if args.cuda:
    model = model.cuda()
x = torch.randn(3, 4).cuda()
out = model(x)
"""


def test_a_gpu_switch_that_is_always_on_offers_no_cpu_run() -> None:
    assert lines(ALWAYS_ON.format(default=", default=True"), "GPD203") == []
    assert lines(ALWAYS_ON.format(default=""), "GPD203") == [11]


# the same repository's tests/inference.py: `main()` tests `args.cuda` above the parser
OPTION_BELOW = """import argparse
import torch


def main(args, model):
    if args.cuda:
        model = model.cuda()
    x = torch.randn(3, 4).cuda()
    return model(x)


def arguments():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cuda", action="store_true"{default})
    return parser.parse_args()
"""


def test_an_always_on_switch_declared_below_its_use_offers_no_cpu_run() -> None:
    assert lines(OPTION_BELOW.format(default=", default=True"), "GPD203") == []
    assert lines(OPTION_BELOW.format(default=""), "GPD203") == [8]


# WaveRNN, set 39: `generate` makes its own device copy of the mels it is given
GENERATE = """\
import torch
from torch import nn


class Vocoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def generate(self, mels):
        device = next(self.parameters()).device
        mels = {copy}
        return self.fc(mels)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Vocoder().to(device)
m = torch.tensor([[0.0, 1.0, 2.0, 3.0]])
model.generate(m)
"""


def test_a_generate_that_copies_its_input_to_the_device_takes_host_input() -> None:
    assert lines(GENERATE.format(copy="torch.as_tensor(mels, device=device)"), "GPD101") == []
    assert lines(GENERATE.format(copy="torch.as_tensor(mels)"), "GPD101") == [19]


# Inside-Deep-Learning, set 39: a trained model brought back to the CPU on purpose
BACK_TO_CPU = """\
import torch
from torch import nn

device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
model = nn.Linear(4, 2)
model.to(device)
model = model.eval().cpu()


def predict(x):
    return model(x)


{use}
"""


def test_a_model_brought_back_to_the_cpu_is_not_re_created() -> None:
    assert lines(BACK_TO_CPU.format(use=""), "GPD102") == []
    assert lines(BACK_TO_CPU.format(use="predict(torch.randn(1, 4))"), "GPD102") == []
    # fed a device tensor after the move back: still the host module it is
    assert lines(BACK_TO_CPU.format(use="model(torch.randn(1, 4).to(device))"), "GPD102") == [7]


# recall 39 (skeleton-aware networks): an encoder whose __init__ ends with
# `self.to(args.cuda_device)` is on the device wherever it is built
SELF_PLACED = """\
import torch
from torch import nn
from torch.utils.data import DataLoader


class Encoder(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        {placing}


def main(args, dataset):
    enc = Encoder(args)
    for x, y in DataLoader(dataset, batch_size=2):
        out = enc(x)
"""


def test_a_module_that_moves_itself_to_the_runs_device_is_placed() -> None:
    assert lines(SELF_PLACED.format(placing="self.to(args.cuda_device)"), "GPD101") == [16]
    assert lines(SELF_PLACED.format(placing="self.cuda()"), "GPD101") == [16]
    # a device the caller chooses (a parameter) may be the CPU: not known to be placed
    no_device = SELF_PLACED.replace("(self, args)", "(self, args, where)")
    assert lines(no_device.format(placing="self.to(where)"), "GPD101") == []


# recall 39 (Ada-CM): an element of a host mask updated with a device value, moved only on return
ELEMENT_UPDATE = """\
import numpy as np
import torch


def mask_generate(max_probs, max_idx, batch, threshold):
    mask_ori = torch.zeros(batch)
    for i in range(7):
        idx = np.where(max_idx.cpu() == i)[0]
        m = max_probs[idx].ge(threshold[i]).float()
        for k in range(len(idx)):
            mask_ori[idx[k]] += {added}
    return mask_ori.cuda()


probs = torch.rand(8).cuda()
mask = mask_generate(probs, probs, 8, [0.5] * 7)
"""


def test_an_element_updated_with_a_device_value_before_the_move_is_reported() -> None:
    assert lines(ELEMENT_UPDATE.format(added="m[k]"), "GPD106") == [6]
    assert lines(ELEMENT_UPDATE.format(added="1"), "GPD106") == []


# ReChorus's DIN, set 39: masked_fill's value may be a 0-dim host tensor (read with .item())
MASKED_FILL = """\
import torch
from torch import nn


class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = nn.Linear(4, 1)

    def forward(self, keys, lengths):
        output = self.mlp(keys).squeeze(-1)
        mask = {mask} >= lengths.unsqueeze(1)
        return output.masked_fill(mask=mask, value=torch.tensor(0.0))
"""


def test_a_zero_dim_host_fill_value_is_right() -> None:
    on_device = "torch.arange(keys.shape[1], device=keys.device).view(1, -1)"
    assert lines(MASKED_FILL.format(mask=on_device), "GPD106") == []
    # the mask itself made on the host is the bug
    assert lines(MASKED_FILL.format(mask="torch.arange(keys.shape[1]).view(1, -1)"), "GPD106") == [
        12
    ]


# ageron's handson-mlp, set 39: after the model is replaced, the optimizer is rebuilt from
# parameter groups
PARAM_GROUPS = """\
import torch
from torch import nn

device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
model = nn.Linear(4, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model = nn.Linear(4, 2).to(device)
decay = [p for n, p in model.named_parameters() if "bias" not in n]
{rebuilt}
loss = model(torch.randn(3, 4, device=device)).sum()
loss.backward()
optimizer.step()
"""


def test_an_optimizer_rebuilt_from_parameter_groups_is_not_stale() -> None:
    rebuilt = 'optimizer = torch.optim.SGD([{"params": decay, "weight_decay": 1e-4}], lr=0.1)'
    assert lines(PARAM_GROUPS.format(rebuilt=rebuilt), "GPD301") == []
    assert lines(PARAM_GROUPS.format(rebuilt="pass"), "GPD301") == [7]


# char_rnn (code-of-learn-deep-learning), set 39: a function that selects a GPU first runs only
# where CUDA exists
SET_DEVICE = """\
import torch
from torch import nn

use_gpu = torch.cuda.is_available()


def predict(path):
    {select}
    model = nn.Linear(4, 2)
    if use_gpu:
        model = model.cuda()
    model.load_state_dict(torch.load(path))
"""


def test_a_load_after_an_unconditional_set_device_runs_on_a_gpu() -> None:
    assert lines(SET_DEVICE.format(select="torch.cuda.set_device(0)"), "GPD201") == []
    assert lines(SET_DEVICE.format(select="pass"), "GPD201") == [12]


# recall 39 (pytorch-summary#16): torchsummary's summary() builds CUDA inputs by default
SUMMARY = """\
import torch
from torch import nn
from torchsummary import summary

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Conv2d(3, 16, 3), nn.Flatten())
{before}
print(summary(model, (3, 30, 16){device}))
model = model.to(device)
"""


def test_torchsummary_feeds_a_host_model_cuda_inputs() -> None:
    assert lines(SUMMARY.format(before="", device=""), "GPD102") == [8]
    assert lines(SUMMARY.format(before="", device=', device="cuda"'), "GPD102") == [8]
    assert lines(SUMMARY.format(before="", device=', device="cpu"'), "GPD102") == []
    assert lines(SUMMARY.format(before="model.to(device)", device=""), "GPD102") == []
    torchinfo = SUMMARY.replace("from torchsummary import", "from torchinfo import")
    assert lines(torchinfo.format(before="", device=""), "GPD102") == []


# set 40 (ogb, ML2021/2022 course notebooks): loads of data files, not of a model's state
DATA_LOAD = """\
import os.path as osp
import torch
from torch import nn
from torch.utils.data import Dataset

device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Linear(39, 2).to(device)
{load}
"""


def test_data_files_hold_no_device_tensors() -> None:
    data = [
        "x = torch.load('embedding.pt').to(device)",
        "meta = torch.load(osp.join(root, 'meta.pt'))",
        "split = torch.load(osp.join(root, 'split_dict.pt'))",
        "path = osp.join(root, 'split', 'time')\ntrain = torch.load(osp.join(path, 'train.pt'))",
        "def load_feat(path):\n    return torch.load(path)",
        "class Vox(Dataset):\n"
        "    def __getitem__(self, i):\n"
        "        return torch.load(self.paths[i])",
        "fp_processed_file = make(root)\nd = torch.load(fp_processed_file)",
    ]
    for load in data:
        assert lines(DATA_LOAD.format(load=load), "GPD201") == [], load
    model_state = [
        "model.load_state_dict(torch.load('model.ckpt'))",
        "model.load_state_dict(torch.load(osp.join(root, 'feature_extractor.pth')))",
        "model.load_state_dict(torch.load(config.encoder))",
    ]
    for load in model_state:
        assert lines(DATA_LOAD.format(load=load), "GPD201") == [8], load


# ML2021/2022 HW09: the only availability test guards a CUDA seed; the notebook is GPU-only
SEED_GUARD = """\
import torch
import torch.nn as nn

{guard}
model = nn.Linear(4, 2).cuda()
model.load_state_dict(torch.load("model.ckpt"))
"""


def test_a_seeding_guard_is_no_cpu_path() -> None:
    seed = (
        "if torch.cuda.is_available():\n"
        "    torch.cuda.manual_seed_all(0)\n"
        "    torch.backends.cudnn.deterministic = True"
    )
    assert lines(SEED_GUARD.format(guard=seed), "GPD201") == []
    assert lines(SEED_GUARD.format(guard=seed), "GPD203") == []
    choice = 'device = "cuda" if torch.cuda.is_available() else "cpu"'
    assert lines(SEED_GUARD.format(guard=choice), "GPD201") == [6]


# Efficient-Segmentation-Networks' FLOPs tools: an int `--device` is which GPU, not whether
GPU_INDEX = """\
import argparse
import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--device", type=int, default={default}, help="{help}")
args = parser.parse_args()
with torch.cuda.device(args.device):
    net = nn.Linear(4, 2).cuda()
"""


def test_an_int_device_option_is_a_gpu_index() -> None:
    assert lines(GPU_INDEX.format(default="0", help="GPU index"), "GPD203") == []
    assert lines(GPU_INDEX.format(default="-1", help="GPU index, -1 for the CPU"), "GPD203") == [9]


# ML2021/2022 HW09, set 40: a notebook re-creates `model` as a host BERT fed host tokens; the
# GPU classifier's `predict` above it is only handed to a library (lime)
RECREATED = """\
import torch
import torch.nn as nn
from transformers import BertModel, BertTokenizerFast

model = nn.Linear(4, 2).cuda()
model.load_state_dict(torch.load("model.ckpt", map_location="cuda"))


def predict(x):
    return model(x.cuda())


model = BertModel.from_pretrained("bert-base-chinese").eval()
tokenizer = BertTokenizerFast.from_pretrained("bert-base-chinese")
ts = tokenizer("a", return_tensors="pt")
outputs = model(**ts)
{call}
"""


def test_a_model_re_created_for_host_inputs_is_left_alone() -> None:
    assert lines(RECREATED.format(call=""), "GPD102") == []
    assert lines(RECREATED.format(call=""), "GPD101") == []
    # predict called after the re-creation: the host BERT gets a device tensor
    assert lines(RECREATED.format(call="predict(torch.randn(1, 4))"), "GPD102") == [13]


# ogb's cluster-GCN inference, set 40: a model re-created over NumPy weights, fed NumPy arrays
NUMPY_MODULE = """\
import numpy as np
import torch
import torch.nn as nn


class NumpyInference(nn.Module):
    def __init__(self, weights):
        super().__init__()
        self.weights = weights

    def forward(self, x):
        for w in self.weights:
            x = np.clip(x @ w, 0, None)
        return x


def test(model, data, device):
    weights = [conv.weight.t().cpu().detach().numpy() for conv in model.convs]
    model = NumpyInference(weights)
    return model({fed})


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Linear(4, 4)])


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = Net().to(device)
test(net, torch.randn(2, 4), device)
"""


def test_a_module_fed_numpy_arrays_runs_on_the_host() -> None:
    assert lines(NUMPY_MODULE.format(fed="data.numpy()"), "GPD102") == []
    assert lines(NUMPY_MODULE.format(fed="data.to(device)"), "GPD102") == [19]


# GRU4REC-pytorch, set 40: the load retried with a map location when it fails
RETRIED = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
try:
    checkpoint = torch.load("model.pt")
except Exception:
    checkpoint = torch.load("model.pt"{mapped})
model = checkpoint["model"].to(device)
"""


def test_a_load_retried_with_a_map_location_handles_the_cpu() -> None:
    mapped = ", map_location=lambda storage, loc: storage"
    assert lines(RETRIED.format(mapped=mapped), "GPD201") == []
    assert sorted(lines(RETRIED.format(mapped=""), "GPD201")) == [5, 7]


# ptflops (Efficient-Segmentation-Networks), set 40: `new_empty(..., device=...)` makes the
# tensor there, whatever the receiver's device
NEW_EMPTY = """\
import torch
import torch.nn as nn


def count(model, input_res):
    batch = torch.ones(()).new_empty((1, *input_res){device})
    return model(batch)


net = nn.Linear(4, 2).cuda()
count(net, (4,))
"""


def test_a_new_tensor_made_on_the_models_device_is_placed() -> None:
    placed = ", device=next(model.parameters()).device"
    assert lines(NEW_EMPTY.format(device=placed), "GPD101") == []
    assert lines(NEW_EMPTY.format(device=""), "GPD101") == [7]


# MONAI's transchex notebook (set 31): `.cuda()` on a loss without weights touches no tensor
LOSS_CUDA = """\
import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"
criterion = {loss}.cuda()
"""


def test_cuda_on_a_module_without_tensors_needs_no_gpu() -> None:
    assert lines(LOSS_CUDA.format(loss="nn.BCELoss()"), "GPD203") == []
    assert lines(LOSS_CUDA.format(loss='nn.L1Loss(reduction="sum")'), "GPD203") == []
    assert lines(LOSS_CUDA.format(loss="nn.CrossEntropyLoss(weight=torch.ones(3))"), "GPD203") == [
        5
    ]
    assert lines(LOSS_CUDA.format(loss="nn.CrossEntropyLoss(w)"), "GPD203") == [5]
    assert lines(LOSS_CUDA.format(loss="nn.Linear(2, 2)"), "GPD203") == [5]


# captum's tests (set 31): a test class defined only when CUDA is available
GPU_CLASS = """\
import unittest
import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"

{guard}

    class GpuTest(unittest.TestCase):
        def test_move(self):
            net = nn.Linear(2, 2).cuda()

    def zeros_on_device():
        return torch.zeros(2).cuda()
"""


def test_definitions_under_an_availability_guard_run_on_a_gpu() -> None:
    assert lines(GPU_CLASS.format(guard="if torch.cuda.is_available():"), "GPD203") == []
    assert lines(GPU_CLASS.format(guard="if True:"), "GPD203") == [11, 14]


# Atcold's NYU-DLSP21 notebooks, set 41: a plotting helper brings the model back to the CPU
BROUGHT_BACK = """\
import torch
from torch import nn


def plot_model(X, model):
    {move}
    return model(X)


device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
X = torch.randn(10, 2)
model = nn.Linear(2, 3).to(device)
plot_model(X, model)
grid = torch.randn(5, 2)
s = model(grid)
"""


def test_a_helper_that_moves_the_model_to_the_cpu_moves_the_callers() -> None:
    assert lines(BROUGHT_BACK.format(move="model.cpu()"), "GPD101") == []
    assert lines(BROUGHT_BACK.format(move='model.to("cpu")'), "GPD101") == []
    # a helper that builds its own model leaves the caller's on the device
    assert lines(BROUGHT_BACK.format(move="model = nn.Linear(2, 3)"), "GPD101") == [15]


# rtdl-revisiting-models, set 41: a class's own to_file/from_file round trip in one run
ROUND_TRIP = """\
import torch


class Ensemble:
    @classmethod
    def from_file(cls, path):
        return torch.load(path)["models"]

    def to_file(self, path):
        torch.save({{"models": self.models}}, path)


device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
net = Ensemble()
net.to_file("{saved}")
net = Ensemble.from_file("ensemble.pt")
"""


def test_a_file_a_method_saved_is_this_runs_own() -> None:
    assert lines(ROUND_TRIP.format(saved="ensemble.pt"), "GPD201") == []
    assert lines(ROUND_TRIP.format(saved="other.pt"), "GPD201") == [7]
    # saved in one mode of the script, loaded in another (Popular-RL-Algorithms' qt_opt: a
    # `--train` run on a GPU box, a `--test` run anywhere): not this run's file
    modes = ROUND_TRIP.replace('net.to_file("', 'if args.train:\n    net.to_file("')
    assert lines(modes.format(saved="ensemble.pt"), "GPD201") == [7]


# recall 41 (EfficientDet.Pytorch#8): the file's own block class built anew in a helper forward
# calls
OWN_BLOCK = """\
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        {layer}

    def forward(self, x):
        return x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3)
        self.blocks = nn.ModuleList([Block(8)])

    def features(self, x):
        x = self.stem(x)
        {use}
        return x

    def forward(self, x):
        return self.features(x)
"""


def test_the_files_own_weighted_block_built_in_forward_is_reported() -> None:
    conv = "self.conv = nn.Sequential(nn.Conv2d(c, c, 1), nn.ReLU())"
    assert lines(OWN_BLOCK.format(layer=conv, use="x = Block(8)(x)"), "GPD109") == [22]
    # a block without weights (SigmoidRange-like), or a loop variable named like the class
    assert (
        lines(OWN_BLOCK.format(layer="self.act = nn.ReLU()", use="x = Block(8)(x)"), "GPD109") == []
    )
    shadowed = "for Block in self.blocks:\n            x = Block(x)"
    assert lines(OWN_BLOCK.format(layer=conv, use=shadowed), "GPD109") == []


# recall 41 (pytorch-lightning#4408): metrics kept in a plain dict are never moved with the model
METRICS = """\
import torch
from torch import nn
from torchmetrics import Accuracy


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(32, 2)
        self.metrics = {container}
        self.metrics["accuracy"] = Accuracy()
"""


def test_metrics_in_a_plain_dict_are_not_moved() -> None:
    assert lines(METRICS.format(container="{}"), "GPD104") == [10]
    assert lines(METRICS.format(container="nn.ModuleDict()"), "GPD104") == []


# StyleTTS2 (set 36): samplers whose only class-level statements are data (an annotated empty
# list, a list of the diffusion classes they accept) hold no weights
SAMPLER = """\
from typing import List

import torch
from torch import nn


class Sampler(nn.Module):
    diffusion_types: List[type] = []

    def forward(self, noise, fn):
        raise NotImplementedError()


class ADPM2Sampler(Sampler):
    diffusion_types = [nn.Module, Sampler]

    def __init__(self, rho=1.0):
        super().__init__()
        self.rho = rho{extra}

    def forward(self, noise, fn):
        return fn(noise) * self.rho


class DiffusionSampler(nn.Module):
    def __init__(self, diffusion, *, sampler):
        super().__init__()
        self.denoise = diffusion
        self.sampler = sampler

    def forward(self, noise):
        return self.sampler(noise, fn=self.denoise)


device = "cuda" if torch.cuda.is_available() else "cpu"
net = nn.Linear(2, 2).to(device)
sampler = DiffusionSampler(net, sampler=ADPM2Sampler())
out = sampler(torch.randn(1, 2).to(device))
"""


def test_a_sampler_with_class_data_only_holds_no_weights() -> None:
    assert lines(SAMPLER.format(extra=""), "GPD102") == []
    layer = "\n        self.proj = nn.Linear(2, 2)"
    assert lines(SAMPLER.format(extra=layer), "GPD102") == [38]


# face.evoLVe's heads, set 42: `.cuda(self.device_id[i])` in the `else:` of
# `if self.device_id == None:` runs only where GPU ids were given
DEVICE_IDS = """\
import torch
import torch.nn as nn
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "cpu"


class Head(nn.Module):
    def __init__(self, n_in, n_out, {name}):
        super().__init__()
        self.{name} = {name}
        self.weight = nn.Parameter(torch.randn(n_out, n_in))

    def forward(self, x):
        if self.{name} == None:
            out = F.linear(x, self.weight)
        else:
            temp_x = x.cuda(self.{name}[0])
            out = F.linear(temp_x, self.weight.cuda(self.{name}[0]))
        return out
"""


def test_the_gpu_ids_branch_of_a_none_test_runs_on_a_gpu() -> None:
    assert lines(DEVICE_IDS.format(name="device_id"), "GPD203") == []
    assert lines(DEVICE_IDS.format(name="device_ids"), "GPD203") == []
    assert lines(DEVICE_IDS.format(name="shard"), "GPD203") == [18, 19]


# Deep-RL Hands-On (set 42): a plain list that keeps references to the layers a Sequential
# registers
NOISY = """\
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.noisy_layers = [nn.Linear(4, 8), nn.Linear(8, 2)]
        {registered}

    def forward(self, x):
        return self.noisy_layers[1](self.noisy_layers[0](x))
"""


def test_a_list_of_layers_a_sequential_registers_is_fine() -> None:
    both = "self.fc = nn.Sequential(self.noisy_layers[0], nn.ReLU(), self.noisy_layers[1])"
    assert lines(NOISY.format(registered=both), "GPD104") == []
    assert lines(NOISY.format(registered="self.act = nn.ReLU()"), "GPD104") == [7]


# Modern-Computer-Vision (set 42): Hugging Face's Trainer moves the model it trains
HF_TRAINER = """\
import torch
from transformers import AutoModelForTokenClassification, Trainer, TrainingArguments

device = "cuda" if torch.cuda.is_available() else "cpu"
model = AutoModelForTokenClassification.from_pretrained("bert-base-uncased")
{trainer}
x = torch.tensor([[1, 2, 3]]).to(device)
out = model(x)
"""


def test_a_model_trained_by_hugging_faces_trainer_is_placed() -> None:
    trained = (
        'trainer = Trainer(model=model, args=TrainingArguments(output_dir="out"))\ntrainer.train()'
    )
    assert lines(HF_TRAINER.format(trainer=trained), "GPD102") == []
    assert lines(HF_TRAINER.format(trainer="pass"), "GPD102") == [5]


# FastSpeech (set 42): a copy of a factory's tensor moved on the same line moves the factory too
COPY_MOVED = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.device = device
        self.pos = nn.Embedding(16, 8)

    def forward(self, x):
        position = torch.tensor(torch.arange(x.size(1)), dtype=torch.long){moved}
        return x + self.pos(position)
"""


def test_a_copy_moved_on_the_same_line_moves_the_factory() -> None:
    assert lines(COPY_MOVED.format(moved=".to(self.device)"), "GPD106") == []
    assert set(lines(COPY_MOVED.format(moved=""), "GPD106")) == {12}


# recall 42 (pytorch#34470, crnn.pytorch's train.py): `crnn = crnn.CRNN(...)` rebinds the
# imported module's name to the model; `crnn.cuda()` then moves the model
REBOUND_IMPORT = """\
import torch
import models.crnn as crnn

crnn = crnn.CRNN(32, 1, 37, 256)
optimizer = torch.optim.Adam(crnn.parameters(), lr=0.01)
checkpoint = torch.load(opt.resume, map_location="cpu")
optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
if opt.cuda:
    crnn.cuda()
"""


def test_an_imported_name_rebound_to_a_model_is_the_model() -> None:
    assert lines(REBOUND_IMPORT, "GPD302") == [7]


# x-transformers' train_free.py (set 20): generate() copies only latents that are no tensor
# (a guard for this session's own first reading of such copies, which lost this finding)
LATENTS = """\
import torch
from torch import nn


class Free(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def generate(self, prompts, latents=None):
        if not torch.is_tensor(latents):
            latents = torch.tensor(latents, device=self.fc.weight.device)
        return self.fc(prompts) + latents


model = Free().cuda()
one_hot = torch.randint(0, 4, ())
out = model.generate(torch.randn(2, 4).cuda(), latents=one_hot)
"""


def test_a_copy_of_non_tensors_only_leaves_a_tensor_argument_where_it_is() -> None:
    assert lines(LATENTS, "GPD101") == [18]


# MONAI's tutorials (set 31): a helper saves "model.pt" into a directory, the notebook loads it
# back joined to the same directory
JOINED = """\
import os
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)
root_dir = "/tmp/run"


def save_checkpoint(model, epoch, filename="model.pt", dir_add=root_dir):
    filename = os.path.join(dir_add, filename)
    torch.save({{"state_dict": model.state_dict()}}, filename)


save_checkpoint(model, 1)
model.load_state_dict(torch.load(os.path.join(root_dir, "{name}"))["state_dict"])
"""


def test_a_file_joined_to_its_directory_is_the_one_the_run_saved() -> None:
    assert lines(JOINED.format(name="model.pt"), "GPD201") == []
    assert lines(JOINED.format(name="pretrained.pt"), "GPD201") == [15]
