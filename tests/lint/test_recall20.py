"""Recall regressions from the twentieth recall set (real bug reports), reduced and rewritten
here: the bug each rule must report, next to the correct code it must leave alone."""

from __future__ import annotations

from lint_lines import lines

# report 05: a GAN's noise helper hands back the bound method instead of a moved tensor
NOISE = """\
import torch
def noise(size):
    n = torch.randn(size, 100)
    {body}
    return n
"""


def test_a_move_method_returned_or_bound_on_one_line_is_not_called() -> None:
    assert lines(NOISE.format(body="if torch.cuda.is_available(): return n.cuda"), "GPD111") == [4]
    assert lines(NOISE.format(body="if torch.cuda.is_available(): n = n.cuda"), "GPD111") == [4]
    called = "if torch.cuda.is_available(): return n.cuda()"
    assert lines(NOISE.format(body=called), "GPD111") == []


# report 10: every rank the script spawns binds the same GPU with set_device(0)
SPAWNED_RANKS = """\
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
def run(rank, world_size):
    {visible}
    dist.init_process_group(backend="nccl", rank=rank, world_size=world_size)
    torch.cuda.set_device({binding})
    t = torch.ones(1).cuda()
    dist.all_reduce(t)
if __name__ == "__main__":
    {launch}
"""


def _spawned(binding: str = "0", visible: str = "pass", launch: str = "") -> str:
    launch = launch or "mp.spawn(run, args=(2,), nprocs=2)"
    return SPAWNED_RANKS.format(binding=binding, visible=visible, launch=launch)


def test_a_constant_gpu_binding_in_ranks_the_file_spawns_is_shared_by_all() -> None:
    assert lines(_spawned(), "GPD404") == [7]
    assert lines(_spawned('"cuda:0"'), "GPD404") == [7]
    assert lines(_spawned("rank"), "GPD404") == []
    # each process sees one GPU: its cuda:0 is its own
    visible = 'os.environ["CUDA_VISIBLE_DEVICES"] = str(rank)'
    assert lines(_spawned(visible=visible), "GPD404") == []
    # launched by torchrun or srun, which may show each process one GPU
    assert lines(_spawned(launch="run(int(os.environ['RANK']), 2)"), "GPD404") == []


# report 12: a transform class moves each sample to the GPU inside the loader's workers
TRANSFORM_IN_WORKERS = """\
import torch
import torchvision
class ToCuda:
    def __init__(self):
        self.is_cuda = torch.cuda.is_available()
    def __call__(self, tensor):
        if self.is_cuda:
            tensor = tensor.cuda()
        return tensor
transform = torchvision.transforms.Compose([torchvision.transforms.ToTensor(), {last}])
dataset = torchvision.datasets.MNIST("data", transform=transform)
loader = torch.utils.data.DataLoader(dataset, batch_size=256, num_workers={workers})
"""


def test_a_transform_of_a_worker_read_dataset_that_moves_to_the_gpu_is_reported() -> None:
    assert lines(TRANSFORM_IN_WORKERS.format(last="ToCuda()", workers=1), "GPD204") == [8]
    assert lines(TRANSFORM_IN_WORKERS.format(last="ToCuda()", workers=0), "GPD204") == []
    host_only = "torchvision.transforms.Normalize((0.5,), (0.5,))"
    assert lines(TRANSFORM_IN_WORKERS.format(last=host_only, workers=1), "GPD204") == []


# report 14: a collate_fn builds each batch on the device, and the loader forks workers
COLLATE_IN_WORKERS = """\
import torch
from torch.utils.data import DataLoader
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
def collate_fn(batch):
    ids = [item[0] for item in batch]
    return torch.tensor(ids, dtype=torch.long{device})
loader = DataLoader(data, batch_size=8, collate_fn=collate_fn, num_workers={workers})
for ids in loader:
    ids = ids.to(device)
"""


def test_a_collate_fn_that_builds_batches_on_the_device_in_workers_is_reported() -> None:
    on_device = ", device=device"
    assert lines(COLLATE_IN_WORKERS.format(device=on_device, workers=2), "GPD204") == [6]
    assert lines(COLLATE_IN_WORKERS.format(device=on_device, workers=0), "GPD204") == []
    assert lines(COLLATE_IN_WORKERS.format(device="", workers=2), "GPD204") == []
