"""Precision regressions from the tenth held-out set of public repositories (an SSD demo, a
temporal-convolution benchmark, an LSTM language model's generator and its weight-drop
module), reduced and rewritten here: correct code each rule must leave alone, next to the bug
it must still report."""

from __future__ import annotations

from lint_lines import lines

# a live demo declares `--cuda` with type=bool and never reads it
UNREAD_FLAG = """\
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument("--weights", default="ssd.pth")
parser.add_argument({flag}, default=False, type=bool)
args = parser.parse_args()
net = torch.nn.Linear(2, 2)
{use}
"""


def test_a_bool_device_flag_never_read_changes_nothing() -> None:
    source = UNREAD_FLAG.format(flag='"--cuda"', use="print(args.weights)")
    assert lines(source, "GPD503") == []


def test_a_bool_device_flag_read_stays_gpd503() -> None:
    assert lines(UNREAD_FLAG.format(flag='"--cuda"', use="if args.cuda: net.cuda()"), "GPD503") == [
        5
    ]
    source = UNREAD_FLAG.format(flag='"-c", dest="use_cuda"', use='print(vars(args)["use_cuda"])')
    assert lines(source, "GPD503") == [5]


def test_a_dest_declared_but_never_read_is_not_a_read() -> None:
    source = UNREAD_FLAG.format(flag='"-c", dest="use_cuda"', use="print(args.weights)")
    assert lines(source, "GPD503") == []


# the benchmark saves its best model through open() and reloads it the same way at the end
SAME_RUN = """\
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument("--cuda", action="store_false")
parser.add_argument("--data", default="Nott")
args = parser.parse_args()
model = torch.nn.Linear(4, 2)
if args.cuda:
    model.cuda()
model_name = "poly_music_{{0}}.pt".format(args.data)
for epoch in range(3):
    with open({saved}, "wb") as f:
        torch.save(model, f)
model = torch.load(open(model_name, "rb"))
"""


def test_a_reload_through_open_of_the_file_this_run_saved() -> None:
    assert lines(SAME_RUN.format(saved="model_name"), "GPD201") == []


def test_a_reload_through_open_of_another_file_stays_gpd201() -> None:
    assert lines(SAME_RUN.format(saved='"other.pt"'), "GPD201") == [14]


# PyTorch 0.3: the generator moves its input by replacing its data
DATA_MOVE = """\
import argparse
import torch
from torch.autograd import Variable
parser = argparse.ArgumentParser()
parser.add_argument("--cuda", action="store_true")
args = parser.parse_args()
model = torch.nn.Embedding(10, 4)
if args.cuda:
    model.cuda()
input = Variable(torch.rand(1, 1).mul(10).long(), volatile=True)
if args.cuda:
    {move}
for i in range(3):
    output = model(input)
    input.data.fill_(1)
"""


def test_replacing_a_tensors_data_with_moved_data_moves_it() -> None:
    assert lines(DATA_MOVE.format(move="input.data = input.data.cuda()"), "GPD101") == []


def test_replacing_it_with_host_data_stays_gpd101() -> None:
    assert lines(DATA_MOVE.format(move="input.data = input.data.long()"), "GPD101") == [14]


# a weight-drop module follows its weights' device; the self-test below it is GPU-only
WEIGHT_DROP = """\
import torch
class WeightDrop(torch.nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module
    def forward(self, x):
        raw_w = self.module.weight
        mask = torch.ones(raw_w.size(0), 1)
        if {test}:
            mask = mask.cuda()
        return self.module(x) * mask.sum()
if __name__ == "__main__":
    x = torch.randn(2, 1, 10).cuda()
    lin = WeightDrop(torch.nn.Linear(10, 10))
    lin.cuda()
"""


def test_a_test_of_a_tensors_own_device_is_no_cpu_path() -> None:
    assert lines(WEIGHT_DROP.format(test="raw_w.is_cuda"), "GPD203") == []


def test_a_script_flag_still_offers_a_cpu_path() -> None:
    source = WEIGHT_DROP.format(test="torch.cuda.is_available()")
    assert lines(source, "GPD203") == [13, 15]
