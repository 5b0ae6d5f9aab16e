"""Regressions of held-out set 55 and of the recall reports gathered beside it, reduced and
rewritten here: the reported bugs each rule now finds, next to the correct code it must leave
alone."""

from __future__ import annotations

from lint_lines import lines

# DecisionTransformerInterpretability#106 (recall set 55): a device flag that cannot be turned off
ALWAYS_ON = """\
import argparse
import torch

parser = argparse.ArgumentParser()
parser.add_argument(
    "--use_gpu",
    action="store_true",
    default={default},
    help="if toggled, cuda will be enabled by default",
)
args = parser.parse_args()
device = torch.device("cuda" if args.use_gpu else "cpu")
"""


def test_a_store_true_device_flag_that_defaults_to_true_is_always_on() -> None:
    assert lines(ALWAYS_ON.format(default="True"), "GPD503") == [5]
    assert lines(ALWAYS_ON.format(default="False"), "GPD503") == []
    # not read anywhere: turning it on or off changes nothing
    unread = ALWAYS_ON.format(default="True").replace("args.use_gpu", "torch.cuda.is_available()")
    assert lines(unread, "GPD503") == []
    # Time-Series-Library: a `store_false` option of the same destination turns it off
    off = 'parser.add_argument("--no_use_gpu", action="store_false", dest="use_gpu")\nargs = '
    assert lines(ALWAYS_ON.format(default="True").replace("args = ", off), "GPD503") == []


# Packt's GPU-tensor lesson: the availability check only tells the reader, then GPU 0 is used
LESSON = """\
import torch

if torch.cuda.is_available():
    print({found})
else:
    print("no GPU")

print(torch.cuda.get_device_name(0))
t = torch.FloatTensor([4, 5]).cuda(0)
"""


def test_an_availability_check_that_only_prints_is_no_cpu_path() -> None:
    assert lines(LESSON.format(found='"GPU found"'), "GPD203") == []
    assert lines(LESSON.format(found='"GPU found"'), "GPD205") == []
    # a guarded CUDA query keeps a CPU run from failing: the file expects one
    guarded = LESSON.format(found="torch.cuda.max_memory_allocated()")
    assert lines(guarded, "GPD203") == [9]


# PyTorch_Practice's fine-tuning lesson and Bert-Multi-Label's save helper: what is loaded was
# saved on the CPU
WEIGHTS = """\
import os
import torch
import torchvision.models as models

dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
weights_file = os.path.join("data", "{name}")
net = models.resnet18()
net.load_state_dict(torch.load(weights_file))
net.to(dev)
"""
SAVER = """\
import torch


def pick_device(n_gpu):
    return torch.device("cuda:0" if torch.cuda.device_count() > 0 and n_gpu else "cpu")


def save_weights(net, path, epoch):
    sd = net.state_dict()
    {copy}
    torch.save({{"state_dict": sd, "epoch": epoch}}, path)


def resume(path, net):
    ckpt = torch.load(path)
    net.load_state_dict(ckpt["state_dict"])
"""


def test_released_hub_weights_load_anywhere() -> None:
    assert lines(WEIGHTS.format(name="resnet18-5c106cde.pth"), "GPD201") == []
    assert lines(WEIGHTS.format(name="resnet18_finetuned.pth"), "GPD201") == [8]


def test_a_state_dict_copied_to_the_cpu_item_by_item_loads_anywhere() -> None:
    copied = "for k in sd:\n        sd[k] = sd[k].cpu()"
    assert lines(SAVER.format(copy=copied), "GPD201") == []
    assert lines(SAVER.format(copy="pass"), "GPD201") == [15]
