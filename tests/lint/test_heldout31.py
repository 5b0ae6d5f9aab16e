"""Precision regressions from the thirty-first held-out set (public repositories), reduced and
rewritten here: correct code each rule must leave alone, next to the bug it still finds."""

from __future__ import annotations

from lint_lines import lines

# RepDistiller's ABLoss: a loss that keeps a list of numbers, nothing to move
NUMBERS_LOSS = """\
import torch
import torch.nn as nn
class MarginLoss(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.w = {weights}
    def forward(self, s, t):
        return sum(w * (a - b).abs().sum() for w, a, b in zip(self.w, s, t))
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Linear(4, 4).to(device)
criterion = MarginLoss(3)
x = torch.randn(8, 4).to(device)
loss = criterion([net(x)], [x])
"""


def test_a_loss_keeping_a_comprehension_of_numbers_is_no_unmoved_module() -> None:
    assert lines(NUMBERS_LOSS.format(weights="[2.0 ** i for i in range(n)]"), "GPD102") == []
    layers = "nn.ModuleList([nn.Linear(4, 4) for i in range(n)])"
    assert lines(NUMBERS_LOSS.format(weights=layers), "GPD102") == [11]


# PatchTST's positional encoding: a helper that returns an nn.Parameter
PARAMETER_HELPER = """\
import torch
import torch.nn as nn
def positional_encoding(n, d):
    w = torch.empty(n, d)
    nn.init.uniform_(w, -0.02, 0.02)
    return {wrap}
class Encoder(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.W_pos = positional_encoding(n, d)
    def forward(self, x):
        return x + self.W_pos
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
encoder = Encoder(16, 8).to(device)
"""


def test_an_attribute_a_helper_builds_as_a_parameter_is_registered() -> None:
    assert lines(PARAMETER_HELPER.format(wrap="nn.Parameter(w)"), "GPD105") == []
    assert lines(PARAMETER_HELPER.format(wrap="w"), "GPD105") == [10]


# Mastering-PyTorch's tagger: host lengths handed to a forward that packs them
LENGTHS = """\
import torch
import torch.nn as nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 8)
        self.rnn = nn.LSTM(8, 8)
    def forward(self, seq, {name}):
        packed = nn.utils.rnn.pack_padded_sequence(self.emb(seq), {name})
        return self.rnn(packed)[1][0]
model = Tagger().to(device)
x = torch.LongTensor([3, 4, 5]).to(device).unsqueeze(1)
length_input = torch.LongTensor([3])
print(model(x, length_input))
"""


def test_host_lengths_for_a_forward_parameter_named_for_lengths() -> None:
    assert lines(LENGTHS.format(name="seq_lengths"), "GPD101") == []
    assert lines(LENGTHS.format(name="mask"), "GPD101") == [15]


# recall set 31, report 05 (DialogRPT): the load of a subclass of a class that moves only
# under its own flag (`if self.opt.cuda:`), run with `--cpu`
FLAGGED_BASE = """\
import torch
class ScorerBase(torch.nn.Module):
    def __init__(self, opt):
        super().__init__()
        self.opt = opt
    def predict(self, ids):
        ids = torch.LongTensor(ids)
        if self.opt.cuda:
            ids = ids.cuda()
        return self.core(ids)
class Scorer({base}):
    def __init__(self, opt):
        super().__init__(opt)
        self.score = torch.nn.Linear(8, 1)
    def load(self, path):
        self.load_state_dict(torch.load(path))
"""


def test_a_subclass_shares_its_base_class_device_flag() -> None:
    assert lines(FLAGGED_BASE.format(base="ScorerBase"), "GPD201") == [16]
    assert lines(FLAGGED_BASE.format(base="torch.nn.Module"), "GPD201") == []


# yunjey's pytorch-tutorial-style loop: a literal reload of one of the files saved above
ONE_OF_THE_SAVES = """\
import os
import torch
import torch.nn as nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Linear(4, 2).to(device)
for epoch in range(2):
    for i in range(3000):
        torch.save(net.state_dict(), os.path.join("models/", "net-{{}}-{{}}.ckpt".format(epoch, i)))
net = nn.Linear(4, 2).to(device)
net.load_state_dict(torch.load("{path}"))
"""


def test_a_literal_reload_of_one_of_the_templated_saves_is_the_run_own() -> None:
    assert lines(ONE_OF_THE_SAVES.format(path="models/net-2-3000.ckpt"), "GPD201") == []
    # another folder's file may come from another run, on a GPU
    assert lines(ONE_OF_THE_SAVES.format(path="pretrained/net-2-3000.ckpt"), "GPD201") == [10]


# PatchTST's lazy mask: built on the input's device through a local name, then kept
LAZY_MASK = """\
import torch
import torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.mask = None
        self.enc = nn.Linear(8, 8)
    def forward(self, x):
        if self.mask is None or self.mask.size(0) != len(x):
            mask = torch.triu(torch.ones(len(x), len(x))){move}
            self.mask = mask
        return self.enc(x) + self.mask.sum()
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = Net().to(device)
print(net(torch.randn(5, 8, device=device)))
"""


def test_a_cache_built_through_a_local_name_on_the_input_device_is_rebuilt() -> None:
    assert lines(LAZY_MASK.format(move=".to(x.device)"), "GPD105") == []
    assert lines(LAZY_MASK.format(move=""), "GPD105") != []
