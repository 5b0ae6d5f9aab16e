"""GPD204: device work inside a Dataset that DataLoader workers run."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gpudoc.lint.analysis.events import CallEvent, Semantic
from gpudoc.lint.analysis.names import keyword
from gpudoc.lint.analysis.values import Kind, Place
from gpudoc.lint.rule import Context, Invalid, Report, Rule
from gpudoc.lint.rules._worker_callables import (
    collate_functions,
    definitions,
    transform_functions,
)

MOVES = frozenset({"to", "cuda", "to_empty"})
NOT_LOADERS = ("torch.cuda.", "torch.nn.", "torch.optim.")


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

    Also finds a DataLoader with `num_workers > 0` over a `TensorDataset` of tensors already on
    the GPU: each worker indexes them after the fork (`CUDA error: initialization error`,
    pytorch/pytorch#4377).

    Also finds the same inside a `collate_fn` the loader is given, or inside the `__call__` of a
    transform class that the loader's dataset is built with (`transform=Compose([..., ToCuda()])`).

    ## Known problems
    Only literal `num_workers` values are read; a loader built in another module is not seen.
    A loader given `multiprocessing_context=` (spawn workers can use CUDA) is not reported.
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

    EVENTS = ("call",)

    def __init__(self) -> None:
        super().__init__()
        self.moves: list[tuple[cst.Call, str]] = []
        """Device moves inside a Dataset subclass's methods, with the class."""
        self.forked: set[str] = set()
        """Dataset classes a DataLoader with ``num_workers > 0`` reads."""
        self.device_work: dict[cst.FunctionDef, cst.Call] = {}
        """The first call of each function that puts a tensor on the device."""
        self.forked_loaders: list[tuple[cst.Call, cst.BaseExpression | None]] = []
        """Loaders with forked workers, with their dataset argument."""
        self.device_datasets: list[cst.Arg] = []
        """``num_workers=`` of loaders whose workers would index CUDA tensors (a
        ``TensorDataset`` of tensors on the GPU)."""

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        qualified = event.qualified
        dataset, function = semantic.dataset, semantic.function_node
        # `.to(device)`, `.cuda()`, `torch.tensor(x, device=self.device)`
        on_device = (dataset is not None or function is not None) and _puts_on_device(event)
        if dataset is not None and on_device:
            self.moves.append((event.node, dataset))
        elif qualified is not None and _is_loader(qualified):
            self.note_loader(event)
        if function is not None and on_device:
            self.device_work.setdefault(function, event.node)

    def note_loader(self, event: CallEvent) -> None:
        node = event.node
        given = zip(node.args, event.args, strict=True)
        named = (value for arg, value in given if arg.keyword and arg.keyword.value == "dataset")
        dataset = next(named, None)
        first = dataset if dataset is not None else (event.args[0] if event.args else None)
        workers = keyword(node, "num_workers")
        count = workers.value if workers is not None else None
        forked = isinstance(count, cst.Integer) and int(count.value, 0) > 0
        forked = forked and keyword(node, "multiprocessing_context") is None
        if first is not None and first.source.startswith("dataset:") and forked:
            self.forked.add(first.source[8:])
        if forked:
            argument = keyword(node, "dataset") or (node.args[0] if node.args else None)
            self.forked_loaders.append((node, argument.value if argument is not None else None))
        on_device = first is not None and first.kind is Kind.LOADER and first.place is Place.DEVICE
        if workers is not None and forked and on_device:
            self.device_datasets.append(workers)

    def finish(self, context: Context) -> Iterator[Report]:
        for node, dataset in self.moves:
            if dataset in self.forked:
                message = (
                    f"`{dataset}` moves data to the device inside DataLoader worker "
                    "processes, where CUDA cannot start after a fork: move batches in the "
                    "training loop instead"
                )
                yield Report(node, message)
        for workers in self.device_datasets:
            message = (
                "the dataset holds tensors on the GPU and DataLoader workers index them after "
                "a fork, where CUDA cannot start (`CUDA error: initialization error`): keep the "
                "dataset on the host and move each batch in the loop, or use num_workers=0"
            )
            yield Report(workers, message)
        yield from self.worker_callables(context)

    def worker_callables(self, context: Context) -> Iterator[Report]:
        """A ``collate_fn`` or a dataset's transform that puts tensors on the device: workers
        call them after the fork."""
        if not self.forked_loaders or not self.device_work:
            return
        found = definitions(context.module)
        for loader, dataset in self.forked_loaders:
            for function in collate_functions(loader, found):
                if function in self.device_work:
                    message = (
                        f"the collate function `{function.name.value}` puts batches on the "
                        "device inside DataLoader worker processes, where CUDA cannot start "
                        "after a fork: collate on the host and move each batch in the loop"
                    )
                    yield Report(self.device_work[function], message)
            if dataset is None:
                continue
            for function in transform_functions(dataset, found):
                if function in self.device_work:
                    message = (
                        "this transform of the dataset puts tensors on the device inside "
                        "DataLoader worker processes, where CUDA cannot start after a fork: "
                        "move each batch in the training loop instead"
                    )
                    yield Report(self.device_work[function], message)


def _is_loader(qualified: str) -> bool:
    """``torch.utils.data.DataLoader`` and its kin (under any alias)."""
    last = qualified.rsplit(".", 1)[-1]
    torch = qualified.startswith("torch.") and not qualified.startswith(NOT_LOADERS)
    return torch and last.endswith("DataLoader")


def _puts_on_device(event: CallEvent) -> bool:
    """A move to the device, or a torch factory given a device (``torch.tensor(x, device=d)``)."""
    if _moves_to_device(event):
        return True
    factory = event.qualified is not None and event.qualified.startswith("torch.")
    return (
        factory and keyword(event.node, "device") is not None and event.result.place is Place.DEVICE
    )


def _moves_to_device(event: CallEvent) -> bool:
    """``x.to(device)`` / ``x.cuda()`` that lands on the device (a method call on a value)."""
    receiver = event.receiver
    if event.method not in MOVES or receiver is None or receiver.kind is Kind.LOADER:
        return False
    return event.result.place is Place.DEVICE
