"""GPD901: a tensor built on the host and immediately copied to the device (performance)."""

from __future__ import annotations

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import CallEvent, Semantic
from gpudoc.lint.analysis.names import keyword
from gpudoc.lint.analysis.values import Place
from gpudoc.lint.rule import Invalid, Rule

DEVICE_MOVES = frozenset({"to", "cuda", "to_empty"})


class HostFactoryThenTransfer(Rule):
    """`torch.zeros(...).to(device)`: allocate and fill on the CPU, then copy. Off by default.

    ## What it does
    Finds a torch factory (`zeros`, `ones`, `empty`, `full`, `rand*`, `arange`, `eye`, `tensor`)
    without `device=` whose result is moved straight to a device with `.to(...)` / `.cuda()`.

    ## Why is this bad?
    It allocates host memory, fills it on the CPU and copies it over PCIe, instead of creating the
    tensor on the device (PyTorch profiler's `ExtraCUDACopyPattern`). In a training step it costs a
    synchronising copy per call.

    ## Example
    ```python
    mask = torch.ones(batch, seq).to(device)
    ```

    ## Use instead
    ```python
    mask = torch.ones(batch, seq, device=device)
    ```

    ## Known problems
    For random factories, building on the CPU can be deliberate: a CPU generator gives the same
    numbers on every device. Off by default (GPD9xx); enable with `--select GPD901`.
    """

    CODE = "GPD901"
    NAME = "host-factory-then-transfer"
    SUMMARY = "a tensor built on the CPU and copied to the device at once (performance)"
    DEFAULT = False
    VALID = (
        """\
import torch
mask = torch.ones(4, 8, device="cuda")
copy = torch.from_numpy(array).to("cuda")
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
mask = torch.ones(4, 8).to("cuda")
""",
            line=2,
            col=8,
        ),
    )

    EVENTS = ("call",)

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        """``<factory>(...).to(device)``: the move's receiver is a factory call without
        ``device=``, and the move lands on the device."""
        if event.method not in DEVICE_MOVES or event.result.place is not Place.DEVICE:
            return
        func = event.node.func
        factory = func.value if isinstance(func, cst.Attribute) else None
        if not isinstance(factory, cst.Call) or keyword(factory, "device") is not None:
            return
        qualified = semantic.qualify(factory.func) or ""
        function = qualified[6:] if qualified.startswith("torch.") else ""
        if function in api.SHAPE_FACTORIES or function == "tensor":
            message = (
                f"`torch.{function}(...)` is filled on the CPU and then copied: pass "
                "`device=` to the factory instead"
            )
            self.report(event.node, message)
