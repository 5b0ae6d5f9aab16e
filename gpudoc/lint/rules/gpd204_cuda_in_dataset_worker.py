"""GPD204: device work inside a Dataset that DataLoader workers run."""

from __future__ import annotations

from collections.abc import Iterator

from gpudoc.lint.analysis.facts import Facts
from gpudoc.lint.rule import Context, Invalid, Report, Rule


class CudaInDatasetWorker(Rule):
    """A `Dataset` moves tensors to the device, and a DataLoader reads it with worker processes.

    ## What it does
    Finds `.to(device)` / `.cuda()` inside the methods of a `Dataset` subclass that a
    `DataLoader(..., num_workers=N)` with `N > 0` reads in the same file.

    ## Why is this bad?
    DataLoader workers are forked processes; CUDA cannot be used after a fork: `RuntimeError:
    Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use
    the 'spawn' start method` (pytorch/pytorch#40403). Users then fall back to `num_workers=0` and
    starve the GPU.

    ## Example
    ```python
    class Images(Dataset):
        def __getitem__(self, i):
            return self.images[i].cuda()


    loader = DataLoader(Images(), batch_size=32, num_workers=4)
    ```

    ## Use instead
    ```python
    class Images(Dataset):
        def __getitem__(self, i):
            return self.images[i]


    loader = DataLoader(Images(), batch_size=32, num_workers=4, pin_memory=True)
    for images in loader:
        images = images.to(device, non_blocking=True)
    ```

    ## Known problems
    Only literal `num_workers` values are read; a loader built in another module is not seen.
    """

    CODE = "GPD204"
    NAME = "cuda-in-dataset-worker"
    SUMMARY = "a Dataset moves tensors to the GPU inside forked DataLoader workers"
    VALID = (
        """\
import torch
from torch.utils.data import DataLoader, Dataset
class Images(Dataset):
    def __getitem__(self, i):
        return torch.randn(3).cuda()
loader = DataLoader(Images(), batch_size=32, num_workers=0)
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
from torch.utils.data import DataLoader, Dataset
class Images(Dataset):
    def __getitem__(self, i):
        return torch.randn(3).cuda()
loader = DataLoader(Images(), batch_size=32, num_workers=4)
""",
            line=5,
            col=16,
        ),
    )

    def check(self, facts: Facts, context: Context) -> Iterator[Report]:
        for move in facts.dataset_moves:
            if move.dataset in facts.worker_datasets:
                message = (
                    f"`{move.dataset}` moves data to the device inside DataLoader worker "
                    "processes, where CUDA cannot start after a fork: move batches in the "
                    "training loop instead"
                )
                yield Report(move.node, message)
