"""GPD502: a shuffling DataLoader without a generator when CUDA is the default device."""

from __future__ import annotations

from collections.abc import Iterator

from gpudoc.lint.analysis.facts import Facts
from gpudoc.lint.rule import Context, Invalid, Report, Rule


class ShuffleWithCudaDefaultDevice(Rule):
    """`DataLoader(..., shuffle=True)` in a script that makes CUDA the default device.

    ## What it does
    Finds a `DataLoader` with `shuffle=True` and no `generator=` (nor a sampler of its own) in a
    file that calls `torch.set_default_device("cuda")` or
    `torch.set_default_tensor_type(torch.cuda.FloatTensor)`.

    ## Why is this bad?
    The loader's `RandomSampler` makes a CPU `torch.Generator()` and calls `torch.randperm`,
    which now allocates on the GPU: the first batch fails with `RuntimeError: Expected a 'cuda'
    device type for generator but found 'cpu'` (older releases: `can't convert cuda:0 device type
    tensor to numpy`, pytorch/pytorch#118084). On a laptop without a GPU the default device falls
    back to the CPU and the script works, so the crash appears only on the GPU machine.

    ## Example
    ```python
    torch.set_default_device("cuda")
    loader = DataLoader(train_set, batch_size=64, shuffle=True)
    ```

    ## Use instead
    ```python
    torch.set_default_device("cuda")
    loader = DataLoader(
        train_set, batch_size=64, shuffle=True, generator=torch.Generator(device="cuda")
    )
    ```

    ## Known problems
    The whole file counts: a default device set in one function and a loader built in another
    are reported together. A `with torch.device("cuda"):` block is not recognised.
    """

    CODE = "GPD502"
    NAME = "shuffle-with-cuda-default-device"
    SUMMARY = "DataLoader(shuffle=True) without generator= fails once CUDA is the default device"
    PLACEMENT = False
    VALID = (
        """\
import torch
from torch.utils.data import DataLoader
torch.set_default_device("cuda")
loader = DataLoader(list(range(8)), shuffle=True, generator=torch.Generator(device="cuda"))
ordered = DataLoader(list(range(8)))
""",
        """\
import torch
from torch.utils.data import DataLoader
torch.set_default_device("cpu")
loader = DataLoader(list(range(8)), shuffle=True)
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
from torch.utils.data import DataLoader
torch.set_default_device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(list(range(8)), batch_size=2, shuffle=True)
""",
            line=4,
            col=10,
        ),
        Invalid(
            """\
import torch
import torch.utils.data
loader = torch.utils.data.DataLoader(list(range(8)), shuffle=True)
torch.set_default_tensor_type(torch.cuda.FloatTensor)
""",
            line=3,
            col=10,
        ),
    )

    def check(self, facts: Facts, context: Context) -> Iterator[Report]:
        if not facts.cuda_default_devices:
            return
        where = f"`{context.code(facts.cuda_default_devices[0])}`"
        for loader in facts.shuffled_loaders:
            message = (
                f"shuffle=True without generator= while {where} makes CUDA the default device: "
                "the sampler's CPU generator fails the first batch on the GPU ('Expected a "
                "'cuda' device type for generator'); pass generator=torch.Generator(device=...)"
            )
            yield Report(loader.call, message)
