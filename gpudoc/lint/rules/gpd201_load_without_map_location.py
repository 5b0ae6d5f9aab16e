"""GPD201: torch.load without map_location."""

from __future__ import annotations

from collections.abc import Iterator

from gpudoc.lint.analysis.facts import Facts
from gpudoc.lint.rule import Context, FixSpec, Invalid, NodeEdit, Report, Rule


class LoadWithoutMapLocation(Rule):
    """`torch.load` without `map_location` in a script that uses devices.

    ## What it does
    Finds `torch.load(path)` calls with neither `map_location=` nor a second positional argument,
    in files that mention a device (CUDA, `torch.device`, `.to(device)`).

    ## Why is this bad?
    A checkpoint saved from GPU tensors is restored onto the GPU it came from. On a CPU-only host
    that fails with `RuntimeError: Attempting to deserialize object on a CUDA device but
    torch.cuda.is_available() is False`; on a multi-GPU host every rank loads onto `cuda:0`.

    ## Example
    ```python
    net.load_state_dict(torch.load(PATH))
    ```

    ## Use instead
    ```python
    net.load_state_dict(torch.load(PATH, map_location=device))
    ```

    ## Known problems
    A checkpoint known to hold CPU tensors is safe to load without it; add `# noqa: GPD201`. The
    fix (unsafe: it changes where the loaded tensors live) passes the script's device, or
    `"cpu"` when the script names none.
    """

    CODE = "GPD201"
    NAME = "load-without-map-location"
    SUMMARY = "torch.load without map_location fails on a CPU-only host for GPU checkpoints"
    PLACEMENT = False
    VALID = (
        """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
state = torch.load("model.pt", map_location=device)
""",
        """\
import torch
state = torch.load("model.pt")
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
state = torch.load("model.pt")
""",
            line=3,
            col=9,
        ),
    )

    def check(self, facts: Facts, context: Context) -> Iterator[Report]:
        if not (facts.flags.device_notion or facts.flags.places):
            return
        for load in facts.loads:
            location = load.device_name or '"cpu"'
            message = (
                "`torch.load` without `map_location` restores tensors onto the device they were "
                f"saved from; pass `map_location={location}`"
            )
            fix = None
            if load.call.args and not load.call.args[-1].star:
                edit = NodeEdit(load.call.args[-1].value, f", map_location={location}", "after")
                fix = FixSpec((edit,), safe=False, description=f"map_location={location}")
            yield Report(load.call, message, fix)
