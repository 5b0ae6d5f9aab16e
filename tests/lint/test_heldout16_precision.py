"""Precision regressions from the sixteenth held-out set (public repositories linted before any
tuning, every finding judged): minimal programs of our own for each cause of a wrong finding,
beside the variant that must still be reported."""

from __future__ import annotations

from lint_lines import lines

# a plotting helper moves its input to the device the layer's own parameters are on
OWN_PARAMETERS = """\
import torch
import torch.nn as nn
def transformed(layer):
    device = {device}
    corners = torch.tensor([[-1.0, -1.0], [1.0, 1.0]])
    return layer(corners.to(device)).detach().cpu().numpy()
device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Linear(2, 2).to(device)
print(transformed(nn.Linear(2, 2)))
"""


def test_an_input_moved_to_the_module_s_own_device_meets_it() -> None:
    for own in (
        "next(layer.parameters()).device",
        "list(layer.parameters())[0].device",
        "list(layer.parameters())[0].device.type",
    ):
        assert lines(OWN_PARAMETERS.format(device=own), "GPD102") == [], own
    # moved to the script's GPU device instead: the host layer meets a device input
    assert lines(OWN_PARAMETERS.format(device='"cuda"'), "GPD102") == [6]


# a detection head's grid, moved by `.type(x.type())` (a type name that names the device too)
GRID = """\
import torch
import torch.nn as nn
class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 2, 1)
    def grid(self, out, dtype):
        grids = []
        for h, w in [out.shape[-2:]]:
            yv, xv = torch.meshgrid([torch.arange(h), torch.arange(w)], indexing="ij")
            grids.append(torch.stack((xv, yv), 0))
        return torch.cat(grids){move}
    def forward(self, x):
        out = self.conv(x)
        return out + self.grid(out, x.type())
model = Head().cuda()
"""


def test_a_grid_moved_by_a_tensor_type_name_is_on_the_input_s_device() -> None:
    assert lines(GRID.format(move=".type(dtype)"), "GPD106") == []
    assert lines(GRID.format(move=".to(out.device)"), "GPD106") == []
    assert lines(GRID.format(move=""), "GPD106") == [10, 10]


# (set 3, PyTorch-VAE's tests) each unittest test starts from a fresh setUp: one test's
# `self.model.cuda()` is not the next test's model
UNIT_TESTS = """\
import torch
import unittest
from models import BetaVAE
class TestVAE(unittest.TestCase):
    def setUp(self):
        self.model = BetaVAE(3, 64)
    def test_sample(self):
        self.model.cuda()
        print(self.model.sample(8, "cuda").shape)
    def test_forward(self):
        x = torch.randn(16, 3, 64, 64)
        print(self.model(x)[0].size())
"""


def test_each_unit_test_starts_from_its_set_up() -> None:
    assert lines(UNIT_TESTS, "GPD101") == []
    # one test that moves the model and then feeds it host data: reported
    one_test = UNIT_TESTS.replace("    def test_forward(self):\n", "")
    assert lines(one_test, "GPD101") == [11]


# a tutorial demonstrates pos_weight on two host tensors, beside its GPU model
LOSS_DEMO = """\
import torch
import torch.nn as nn
device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Linear(2, 1).to(device)
labels = torch.tensor([1.0, 0.0, 0.0, 0.0])
logits = torch.tensor([2.0, -1.0, -1.0, -1.0])
pos_weight = ((labels == 0).sum() / (labels == 1).sum()).view(1,)
loss_fn = nn.BCEWithLogitsLoss(pos_weight=pos_weight)
print(loss_fn({inputs}))
"""


def test_a_weighted_loss_used_only_on_host_tensors_is_fine() -> None:
    assert lines(LOSS_DEMO.format(inputs="logits, labels"), "GPD107") == []
    x = "model(torch.randn(4, 2, device=device)).squeeze(1), labels.to(device)"
    assert lines(LOSS_DEMO.format(inputs=x), "GPD107") == [8]


# a random draw read as a Python bool (teacher forcing), and shape numbers read as slice bounds
PYTHON_READS = """\
import torch
import torch.nn as nn
class Decoder(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        self.cell = nn.Linear(2, 2)
        self.p = p
    def forward(self, src, tgt):
        x, outs = src, []
        for i in range(tgt.shape[1]):
            out = self.cell(x)
            outs.append(out)
            if {test}:
                x = tgt[:, i]
            else:
                x = out
        return torch.stack(outs, 1)
model = Decoder().cuda()
"""


def test_a_host_draw_compared_in_a_test_is_a_python_bool() -> None:
    assert lines(PYTHON_READS.format(test="torch.rand(1) <= self.p"), "GPD106") == []
    assert lines(PYTHON_READS.format(test="torch.rand(1) < 0.5 and i > 0"), "GPD106") == []
    # compared with a device tensor made by a call, the draw meets the device
    assert lines(PYTHON_READS.format(test="(torch.rand(1) <= out.mean(0)).all()"), "GPD106") == [13]


# each rank saves its own queue file and reads it back (SwAV)
RANK_FILE = """\
import os
import torch
import torch.distributed as dist
def main(rank, world_size, dump_path):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    torch.cuda.set_device(rank % torch.cuda.device_count())
    queue_path = os.path.join(dump_path, {name})
    queue = None
    if os.path.isfile(queue_path):
        queue = torch.load(queue_path)["queue"]
    for epoch in range(3):
        if queue is None:
            queue = torch.zeros(128, 16).cuda()
        torch.save({{"queue": queue}}, queue_path)
if __name__ == "__main__":
    main(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), "run")
"""


def test_a_file_each_rank_saves_and_reads_back_is_its_own() -> None:
    assert lines(RANK_FILE.format(name='"queue" + str(rank) + ".pth"'), "GPD201") == []
    # one file for all ranks: every rank restores it onto the GPU it was saved from
    assert lines(RANK_FILE.format(name='"queue.pth"'), "GPD201") == [10]


# a notebook saves through the trainer's method, then a new trainer loads that file
METHOD_PAIR = """\
import torch
import torch.nn as nn
class Trainer:
    def __init__(self, model):
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model = model.to(self.device)
    def save_checkpoint(self, filename):
        torch.save({{"model": self.model.state_dict()}}, filename)
    def load_checkpoint(self, filename):
        self.model.load_state_dict(torch.load(filename)["model"])
{save}Trainer(nn.Linear(2, 1)).load_checkpoint("model_checkpoint.pth")
"""


def test_a_checkpoint_the_run_saved_through_a_method_loads_back() -> None:
    saved = 'Trainer(nn.Linear(2, 1)).save_checkpoint("model_checkpoint.pth")\n'
    assert lines(METHOD_PAIR.format(save=saved), "GPD201") == []
    assert lines(METHOD_PAIR.format(save=""), "GPD201") == [10]


# a GPU tutorial notebook that displays devices, and a demo that spreads over every GPU
GPU_DEMO = """\
import torch
import torch.nn as nn
{shown}
x = torch.ones((2, 3), device=torch.device("cuda:0"))
z = x.cuda(1)
net = nn.DataParallel(nn.Linear(3, 1), device_ids=range(torch.cuda.device_count()))
"""


def test_devices_only_displayed_or_counted_offer_no_cpu_path() -> None:
    shown = 'torch.device("cpu"), torch.device("cuda"), torch.device("cuda:1")'
    assert lines(GPU_DEMO.format(shown=shown), "GPD203") == []
    # a device the script binds and runs on is a CPU path
    chosen = 'device = torch.device("cpu")\nprint(torch.ones(2, device=device))'
    assert lines(GPU_DEMO.format(shown=chosen), "GPD203") == [5, 6]


# the last step of packed sequences: an arange index on one arm, a slice on the other
LAST_STEP = """\
import torch
import torch.nn as nn
import torch.nn.utils.rnn as rnn_utils
class Last(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(2, 3, batch_first=True)
    def forward(self, X):
        out, _ = self.rnn(X)
        if isinstance(X, rnn_utils.PackedSequence):
            padded, sizes = rnn_utils.pad_packed_sequence(out, batch_first=True)
            rows = torch.arange(sizes.size(0))
        else:
            padded, sizes = out, 0
            rows = {other}
        return {use}
model = Last().cuda()
"""


def test_an_index_bound_to_a_slice_on_the_other_arm_is_still_an_index() -> None:
    index = "padded[rows, sizes - 1]"
    assert lines(LAST_STEP.format(other="slice(None, None, None)", use=index), "GPD106") == []
    # read as arithmetic with the device output, the host arange fails
    product = "padded[:, -1] * rows[:, None]"
    assert lines(LAST_STEP.format(other="slice(None, None, None)", use=product), "GPD106") == [12]
