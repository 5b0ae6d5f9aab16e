"""GPD502: a shuffling DataLoader without a generator when CUDA is the default device."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gpudoc.lint.analysis.events import BindingEvent, CallEvent, Semantic
from gpudoc.lint.analysis.expressions import string_value
from gpudoc.lint.analysis.names import assigned_value, dotted
from gpudoc.lint.analysis.values import UNKNOWN, Kind, Value
from gpudoc.lint.rule import Context, Invalid, Report, Rule
from gpudoc.lint.visit import children


class ShuffleWithCudaDefaultDevice(Rule):
    """`DataLoader(..., shuffle=True)` in a script that makes CUDA the default device.

    ## What it does
    Finds a `DataLoader` with `shuffle=True` and no `generator=` (nor a sampler of its own) in a
    file that calls `torch.set_default_device("cuda")` or
    `torch.set_default_tensor_type(torch.cuda.FloatTensor)`, or inside a
    `with torch.device("cuda"):` block (or the script's device).

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

    A `DistributedSampler` (which shuffles unless given `shuffle=False`) or a `RandomSampler`
    without `generator=` built after the switch fails the same way: each makes its own CPU
    generator.

    ## Known problems
    Only loaders built or iterated (`for ... in loader`, `iter(loader)`) after the switch, in the
    order the script runs (functions where they are called, notebook cells in order), are
    reported.
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
for batch in loader:
    print(batch)
""",
            line=3,
            col=10,
        ),
    )

    EVENTS = ("call", "binding")

    def __init__(self) -> None:
        super().__init__()
        self.defaults: list[cst.Call] = []
        """``torch.set_default_device("cuda")`` / ``set_default_tensor_type(torch.cuda.*)``."""
        self.loaders: list[cst.Call] = []
        """``DataLoader(..., shuffle=True)`` with neither ``generator=`` nor a sampler."""
        self.in_context: list[tuple[cst.Call, cst.BaseExpression]] = []
        """Such loaders inside ``with torch.device(<CUDA or the script's device>):``."""
        self.early: dict[str, cst.Call] = {}
        """Such loaders built before any switch, by the name bound to them."""
        self.built_early: set[cst.Call] = set()
        self.cuda_default = False
        """CUDA is the default device now (a later ``set_default_device("cpu")`` undoes it)."""
        self.samplers: list[cst.Call] = []
        """``DistributedSampler(...)`` / ``RandomSampler(...)`` built after the switch, shuffling
        with a CPU generator of their own."""

    def on_binding(self, event: BindingEvent, semantic: Semantic) -> None:
        """``loader = DataLoader(...)`` before the switch; ``for batch in loader`` after it."""
        statement = event.statement
        if isinstance(statement, cst.For):
            self.drawn(statement.iter)
            return
        value = assigned_value(statement, event.name)
        if isinstance(value, cst.Call) and value in self.built_early:
            self.early[event.name] = value

    def drawn(self, iterated: cst.BaseExpression) -> None:
        """A loader built before the switch draws its batches after it: the sampler runs now."""
        if not self.cuda_default:
            return
        while isinstance(iterated, cst.Call) and iterated.args:
            iterated = iterated.args[0].value  # enumerate(loader), iter(loader), tqdm(loader)
        loader = self.early.pop(dotted(iterated) or "", None)
        if loader is not None:
            self.loaders.append(loader)

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        qualified = event.qualified or ""
        if dotted(event.node.func) == "iter":
            self.drawn(event.node)
        if not qualified.startswith("torch."):
            return
        node = event.node
        if qualified in DEFAULT_SETTERS and node.args and event.args:
            if _names_cuda(node.args[0].value, event.args[0]):
                self.defaults.append(node)
                self.cuda_default = True
            elif _names_cpu(node.args[0].value, event.args[0]) and not semantic.in_branch:
                # undone for good (a notebook's later cell); the `else:` of `if args.cuda:`
                # is another path, and the `if` path still switched on the GPU machine
                self.cuda_default = False
        elif _sampler_shuffles_unseeded(qualified, node):
            # `DistributedSampler(dataset)`: its own `torch.Generator()` on the CPU
            if self.cuda_default:
                self.samplers.append(node)
        elif qualified.rsplit(".", 1)[-1].endswith("DataLoader") and _shuffles_unseeded(node):
            context = semantic.default_device_context
            if context is not None and _context_names_cuda(context, semantic):
                self.in_context.append((node, context))
            elif self.cuda_default:
                self.loaders.append(node)
            else:  # a notebook cell above `set_default_tensor_type`: drawn from before it
                self.built_early.add(node)

    def finish(self, context: Context) -> Iterator[Report]:
        for loader, device in self.in_context:
            message = (
                f"shuffle=True without generator= inside `with {context.code(device)}:`, which "
                "makes CUDA the default device on a GPU machine: the sampler's CPU generator "
                "fails the first batch ('Expected a 'cuda' device type for generator'); pass "
                "generator=torch.Generator(device=...) or build the loader outside the block"
            )
            yield Report(loader, message)
        if not self.defaults:
            return
        where = f"`{context.code(self.defaults[0])}`"
        for loader in self.loaders:
            message = (
                f"shuffle=True without generator= while {where} makes CUDA the default device: "
                "the sampler's CPU generator fails the first batch on the GPU ('Expected a "
                "'cuda' device type for generator'); pass generator=torch.Generator(device=...)"
            )
            yield Report(loader, message)
        for sampler in self.samplers:
            name = (dotted(sampler.func) or "sampler").rsplit(".", 1)[-1]
            message = (
                f"`{name}` shuffles with a CPU generator of its own while {where} makes CUDA "
                "the default device: its first epoch fails on the GPU ('Expected a 'cuda' "
                "device type for generator'); make CUDA the default only where the model is "
                'built (`with torch.device("cuda"):`)'
            )
            if name == "RandomSampler":
                message += ", or pass generator=torch.Generator(device=...)"
            elif name == "DistributedSampler":
                message += ", or pass shuffle=False and shuffle the data set yourself"
            yield Report(sampler, message)


SAMPLERS = frozenset(
    {
        "torch.utils.data.DistributedSampler",
        "torch.utils.data.distributed.DistributedSampler",
        "torch.utils.data.RandomSampler",
        "torch.utils.data.sampler.RandomSampler",
    }
)
"""Samplers that draw ``torch.randperm`` with a CPU ``torch.Generator()`` they make
themselves (a ``RandomSampler`` given none, a ``DistributedSampler`` always)."""


def _sampler_shuffles_unseeded(qualified: str, node: cst.Call) -> bool:
    """``DistributedSampler(data)`` (``shuffle`` defaults to True, its fourth parameter),
    ``RandomSampler(data)`` without ``generator=``."""
    if qualified not in SAMPLERS:
        return False
    keywords = {arg.keyword.value: arg.value for arg in node.args if arg.keyword is not None}
    if any(arg.star for arg in node.args):
        return False  # `DistributedSampler(**options)`: not known
    if qualified.endswith("RandomSampler"):
        return "generator" not in keywords and len(node.args) < 4
    positional = [arg.value for arg in node.args if arg.keyword is None]
    shuffle = keywords.get("shuffle", positional[3] if len(positional) > 3 else None)
    return shuffle is None or (isinstance(shuffle, cst.Name) and shuffle.value == "True")


DEFAULT_SETTERS = frozenset({"torch.set_default_device", "torch.set_default_tensor_type"})


def _shuffles_unseeded(node: cst.Call) -> bool:
    """``shuffle=True`` and no ``generator=``, ``sampler=`` or ``batch_sampler=``."""
    keywords = {arg.keyword.value: arg.value for arg in node.args if arg.keyword is not None}
    shuffle = keywords.get("shuffle")
    if not (isinstance(shuffle, cst.Name) and shuffle.value == "True"):
        return False
    return not any(name in keywords for name in ("generator", "sampler", "batch_sampler"))


def _context_names_cuda(context: cst.BaseExpression, semantic: Semantic) -> bool:
    """``with torch.device("cuda"):`` or ``with torch.device(device):`` for the script's
    (non-CPU) device; ``"meta"`` or ``"cpu"`` make nothing draw on the GPU."""
    if isinstance(context, cst.Call) and semantic.qualify(context.func) == "torch.device":
        if not context.args:
            return False
        context = context.args[0].value
    name = dotted(context)
    value = semantic.lookup(name) if name is not None else None
    return _names_cuda(context, value if value is not None else UNKNOWN)


def _names_cpu(argument: cst.BaseExpression, value: Value) -> bool:
    """``set_default_device("cpu")`` (or ``torch.device("cpu")``: the walk's CPU device,
    ``None``, ``set_default_tensor_type(torch.FloatTensor)``): the host is the default again."""
    if value.kind is Kind.DEVICE:
        return value.cpu_device
    name = string_value(argument) or dotted(argument) or ""
    return name == "None" or (name.startswith("torch.") and ".cuda." not in name)


def _names_cuda(argument: cst.BaseExpression, value: Value) -> bool:
    """A default device that is (or may be) CUDA: ``torch.cuda.FloatTensor``, a ``"cuda..."``
    string anywhere in the argument (``"cuda" if ok else "cpu"`` is CUDA on the GPU machine), or
    a device value the analysis knows is not the CPU."""
    if value.kind is Kind.DEVICE and not value.cpu_device and isinstance(argument, cst.Name):
        return True
    if "cuda" in (dotted(argument) or "").split("."):
        return True
    stack: list[cst.CSTNode] = [argument]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.SimpleString | cst.FormattedStringText) and "cuda" in node.value:
            return True
        stack.extend(children(node))
    return False
