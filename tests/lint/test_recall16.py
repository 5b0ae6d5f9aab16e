"""Recall regressions from the sixteenth recall set (real bug reports), reduced and rewritten
here: the bug each rule must report, next to the correct code it must leave alone."""

from __future__ import annotations

from lint_lines import lines

# report 05 (WGAN-GP): `.cuda(self.cuda_index)` picks one GPU for every run, as `.cuda()` does
GAN = """\
import torch
import torch.nn as nn
class WGAN:
    def __init__(self, cuda):
        self.G = nn.Linear(4, 4)
        self.cuda = cuda == "True"
        self.cuda_index = 0
        if self.cuda:
            self.G.cuda(self.cuda_index)
    def sample(self):
        z = torch.randn(8, 4).cuda({index})
        return self.G(z)
model = WGAN("False")
print(model.sample())
"""


def test_a_gpu_index_chosen_once_is_hard_coded_cuda() -> None:
    assert lines(GAN.format(index="self.cuda_index"), "GPD203") == [11]
    assert lines(GAN.format(index="0"), "GPD203") == [11]
    # the rank's own GPU (`.cuda(args.gpu)`): one process per GPU, not a hard-coded device
    assert lines(GAN.format(index="self.local_rank"), "GPD203") == []


def test_a_move_with_only_non_blocking_is_hard_coded_cuda() -> None:
    # tacotron2's utils: `x.cuda(non_blocking=True)` names no rank, so other `.cuda()` calls count
    source = """\
import torch
def to_gpu(x):
    x = x.contiguous()
    if torch.cuda.is_available():
        x = x.cuda(non_blocking=True)
    return x
def get_mask_from_lengths(lengths):
    max_len = torch.max(lengths).item()
    ids = torch.arange(0, max_len).cuda()
    return ids < lengths.unsqueeze(1)
"""
    assert lines(source, "GPD203") == [9]


# report 02 (a TensorBoard tutorial): add_graph traces the model on a batch never moved
GRAPH = """\
import torch
import torch.nn as nn
from torch.utils.tensorboard import SummaryWriter
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
writer = SummaryWriter("runs/mnist")
model = nn.Linear(784, 10).to(device)
images = torch.randn(8, 784)
writer.add_graph(model, {example})
"""


def test_add_graph_traces_a_call_of_the_model() -> None:
    assert lines(GRAPH.format(example="images"), "GPD101") == [8]
    assert lines(GRAPH.format(example="images.to(device)"), "GPD101") == []
    assert lines(GRAPH.format(example="images.to(device)"), "GPD102") == []


# report 10 (faster-rcnn): the optimizer's groups filled in a loop over named_parameters()
RESUME = """\
import torch
import torch.nn as nn
from model.faster_rcnn.resnet import resnet
fasterRCNN = resnet(21, 101, pretrained=True)
params = []
for key, value in dict(fasterRCNN.named_parameters()).items():
    if value.requires_grad:
        params += [{{"params": [value], "lr": 0.01}}]
optimizer = torch.optim.SGD(params, momentum=0.9)
checkpoint = torch.load("faster_rcnn.pth", map_location="cpu")
optimizer.load_state_dict(checkpoint["optimizer"])
{move}
"""


def test_an_optimizer_over_groups_filled_from_named_parameters_is_the_model_s() -> None:
    assert lines(RESUME.format(move="fasterRCNN.cuda()"), "GPD302") == [11]
    # groups of two modules belong to neither
    two = RESUME.replace(
        "optimizer = ", "for p in head.parameters():\n    params.append(p)\noptimizer = "
    )
    assert lines(two.format(move="fasterRCNN.cuda()"), "GPD302") == []
