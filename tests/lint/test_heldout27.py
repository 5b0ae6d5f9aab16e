"""Wrong findings of the twenty-seventh held-out set (public repositories), reduced and rewritten
here: correct code each rule must leave alone, next to the bug it must still report."""

from __future__ import annotations

from lint_lines import lines

# dataflowr's spectral GNN notebook: the data set cell saves tensors made on the host and the
# next cell loads them; the file holds CPU storages whatever host loads it
SAVED = """\
import os
import torch
import torch.nn as nn
def check_dataset_exists(path_data="./"):
    if not os.path.isfile(path_data + "mnist/train_data.pt"):
        train_data = {made}
        torch.save(train_data, path_data + "mnist/train_data.pt")
    return path_data
_ = check_dataset_exists()
train_data = torch.load("mnist/train_data.pt").reshape(100, 784).numpy()
net = nn.Linear(784, 10)
if torch.cuda.is_available():
    net.cuda()
"""


def test_a_load_of_what_the_file_saved_from_host_tensors_is_clean() -> None:
    assert lines(SAVED.format(made="torch.Tensor(100, 28, 28)"), "GPD201") == []
    assert lines(SAVED.format(made="torch.zeros(100, 28, 28)"), "GPD201") == []


def test_a_load_of_what_the_file_saved_from_the_device_is_reported() -> None:
    made = 'torch.zeros(100, 28, 28, device="cuda" if torch.cuda.is_available() else "cpu")'
    assert lines(SAVED.format(made=made), "GPD201") == [10]


# the re-score, pytorch-YOLOv4's region loss: `build_targets` returns its masks, which the
# caller moves one by one; the first argument (a CPU copy of the predictions) is not what each
# returned name holds
REGION = """\
import torch
import torch.nn as nn
def convert2cpu(gpu_matrix):
    return torch.FloatTensor(gpu_matrix.size()).copy_(gpu_matrix)
def build_targets(pred_boxes, target, n):
    conf_mask = torch.ones(n, 4)
    tx = torch.zeros(n, 4)
    return conf_mask, tx
class RegionLoss(nn.Module):
    def forward(self, output, target):
        pred_boxes = convert2cpu(output.view(-1, 4))
        conf_mask, tx = build_targets(pred_boxes, target, output.size(0))
        tx = tx.cuda()
        conf_mask = conf_mask.cuda()
        return ((output - tx) * conf_mask).sum()
"""


def test_what_a_helper_returns_at_each_position_is_moved_by_the_caller() -> None:
    assert lines(REGION, "GPD106") == []
    assert lines(REGION.replace("        conf_mask = conf_mask.cuda()\n", ""), "GPD106") == [6]


# the re-score, legacy constructors of other data: tokens of a string (opacus'
# CharByteEncoder), an index table (powerful-gnns), a cast with `.type()` (graph-convnet-tsp)
LEGACY = """\
import torch
import torch.nn as nn
class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.dtype = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor
    def forward(self, x, text, pad):
        tokens = torch.LongTensor(list(text.encode()))
        picked = x[torch.LongTensor(pad)]
        scale = torch.Tensor(x.size()).type(self.dtype)
        return self.fc(picked) * scale, tokens
model = Encoder().cuda()
model(torch.randn(2, 4).cuda(), "ab", [0, 1])
"""


def test_legacy_constructors_of_tokens_indices_or_casts_are_left_alone() -> None:
    assert lines(LEGACY, "GPD106") == []


# the re-score, sub-sentence-encoder: a cache written and read by a pair of helpers, each with
# its own file object `f`; the encodings were moved to the CPU before they were saved
CACHE = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
def save_encoded(encoded, output_path):
    f = open(output_path, "wb")
    torch.save(encoded, f)
def load_encoded(path):
    f = open(path, "rb")
    return torch.load(f)
encoded = load_encoded("cache.pt")
"""


def test_a_save_and_load_helper_pair_of_file_objects_is_one_file() -> None:
    assert lines(CACHE, "GPD201") == []
