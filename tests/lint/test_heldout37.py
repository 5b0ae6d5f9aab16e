"""Precision regressions from the thirty-seventh held-out set (public repositories), reduced and
rewritten here: correct code each rule must leave alone, next to the bug it still finds."""

from __future__ import annotations

from lint_lines import lines

# adversarial-attacks-pytorch's input diversity: a size list of 1-element tensors is no input
INTERPOLATE = """\
import torch
import torch.nn.functional as F

device = torch.device("cuda")
x = torch.rand(1, 3, 32, 32).to(device)
r = torch.randint(low=28, high=32, size=(1,), dtype=torch.int32)
out = F.interpolate(x, {argument}, mode="bilinear")
"""


def test_a_size_argument_is_read_as_numbers() -> None:
    assert lines(INTERPOLATE.format(argument="size=[r, r]"), "GPD101") == []
    assert lines(INTERPOLATE.format(argument="scale_factor=r"), "GPD101") == []


# ndb796's notebooks: ToPILImage makes a PIL image of a device tensor, which imshow takes
TO_PIL = """\
import torch
import torchvision
import matplotlib.pyplot as plt

net = torch.nn.Conv2d(3, 3, 1).cuda()
adv = net(torch.rand(1, 3, 8, 8).cuda())
img = {convert}
plt.imshow(img)
"""


def test_a_pil_image_of_a_device_tensor_is_no_device_tensor() -> None:
    to_pil = "torchvision.transforms.ToPILImage()(torch.clamp(adv, 0, 1).squeeze(0))"
    assert lines(TO_PIL.format(convert=to_pil), "GPD202") == []
    assert lines(TO_PIL.format(convert="torch.clamp(adv, 0, 1).squeeze(0)"), "GPD202") == [8]


# recall 38, HandMesh: the `else:` of `if -1 in idx or not torch.cuda.is_available():` has CUDA
EITHER_CPU = """\
import torch

if {test}:
    device = torch.device("cpu")
elif len(args.device_idx) == 1:
    device = torch.device("cuda", args.device_idx[0])
else:
    device = torch.device("cuda")
model = torch.nn.Linear(2, 2).to(device)
"""


def test_the_else_of_an_or_that_means_the_cpu_is_a_gpu_path() -> None:
    test = "-1 in args.device_idx or not torch.cuda.is_available()"
    assert lines(EITHER_CPU.format(test=test), "GPD203") == []
    # an `and`: the CPU arm needs both, so the `else:` may run without CUDA
    test = "-1 in args.device_idx and not torch.cuda.is_available()"
    assert lines(EITHER_CPU.format(test=test), "GPD203") == [8]


# set 38, BiSeNet: an OHEM loss whose only tensor is a threshold computed (and moved) in __init__
OHEM = """\
import torch
import torch.nn as nn


class OhemLoss(nn.Module):
    def __init__(self, thresh, n_min):
        super().__init__()
        self.cut = {cut}
        self.n_min = n_min
        self.ce = nn.CrossEntropyLoss(reduction="none")

    def forward(self, logits, labels):
        loss, _ = torch.sort(self.ce(logits, labels).view(-1), descending=True)
        return loss[loss > self.cut].mean()


net = nn.Conv2d(3, 4, 1).cuda()
crit = OhemLoss(0.7, 16)
loss = crit(net(torch.rand(1, 3, 8, 8).cuda()), torch.zeros(1, 8, 8, dtype=torch.long).cuda())
"""


def test_a_loss_holding_only_a_computed_threshold_needs_no_move() -> None:
    cut = "-torch.log(torch.tensor(thresh, dtype=torch.float)).cuda()"
    assert lines(OHEM.format(cut=cut), "GPD102") == []
    # a layer of weights of its own: the move is needed
    assert lines(OHEM.format(cut="nn.Linear(4, 4)"), "GPD102") == [18]


def test_a_loss_given_a_count_computed_from_the_batch_size_holds_no_weights() -> None:
    """BiSeNet's train.py: `n_min = n_per_gpu * h * w // 16`, an unknown number by value, a
    count by its name."""
    cut = "-torch.log(torch.tensor(thresh, dtype=torch.float)).cuda()"
    source = OHEM.format(cut=cut).replace("OhemLoss(0.7, 16)", "OhemLoss(0.7, n_min=batch * 4)")
    assert lines(source, "GPD102") == []


# set 38, nnUNet: the DDP worker joins an NCCL group through the file's own `setup`, then uses
# its rank's GPU; the file offers the CPU elsewhere
NCCL_WORKER = """\
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def setup(rank, world_size):
    dist.init_process_group({backend}, rank=rank, world_size=world_size)


def run_ddp(rank, world_size):
    setup(rank, world_size)
    torch.cuda.set_device(torch.device("cuda", rank))
    net = torch.nn.Linear(4, 4).cuda()


def run(num_gpus):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if num_gpus > 1:
        mp.spawn(run_ddp, args=(num_gpus,), nprocs=num_gpus)
    else:
        net = torch.nn.Linear(4, 4).to(device)
"""


def test_cuda_after_joining_an_nccl_group_is_no_hard_coding() -> None:
    assert lines(NCCL_WORKER.format(backend='"nccl"'), "GPD203") == []
    # a gloo group runs on the CPU too: there CUDA is hard-coded
    assert lines(NCCL_WORKER.format(backend='"gloo"'), "GPD203") == [12, 13]
