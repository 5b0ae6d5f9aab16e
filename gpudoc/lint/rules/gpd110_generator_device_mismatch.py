"""GPD110: a torch.Generator on another device than the tensors it draws."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import BindingEvent, CallEvent, Semantic
from gpudoc.lint.analysis.expressions import string_value
from gpudoc.lint.analysis.names import dotted, keyword
from gpudoc.lint.analysis.values import Kind, Place
from gpudoc.lint.rule import Context, Invalid, Report, Rule

HOST_CONSUMERS = frozenset({"DataLoader", "RandomSampler", "SubsetRandomSampler",
                            "WeightedRandomSampler", "random_split"})  # fmt: skip
"""torch.utils.data callables that draw from their generator on the CPU (``randperm``)."""
DRAWING_METHODS = frozenset({"normal_", "uniform_", "random_", "bernoulli_", "exponential_",
                             "geometric_", "cauchy_", "log_normal_", "multinomial"})  # fmt: skip


class GeneratorDeviceMismatch(Rule):
    """A `torch.Generator` on another device than the random tensors it draws.

    ## What it does
    Follows generators created with `torch.Generator(...)` (and `.manual_seed(...)` on one),
    and the default CPU generator that `torch.manual_seed(...)` returns, to the `generator=`
    argument of random factories (`torch.randn`, `torch.randint`, `torch.randperm`, ...), of
    in-place draws (`x.normal_(generator=g)`) and of the data loading helpers that draw on the
    CPU (`DataLoader`, `RandomSampler`, `random_split`), and compares the generator's device
    with the device of the draw.

    ## Why is this bad?
    A generator draws only on its own device: `torch.randn(n, device="cuda",
    generator=torch.Generator())` fails with `RuntimeError: Expected a 'cuda' device type for
    generator but found 'cpu'`, and a CUDA generator handed to a `DataLoader` or a sampler (they
    call `torch.randperm` on the CPU) fails with `Expected a 'cpu' device type for generator but
    found 'cuda'` when the first epoch starts.

    ## Example
    ```python
    g = torch.Generator(device=device).manual_seed(0)
    loader = DataLoader(train_set, shuffle=True, generator=g)
    ```

    ## Use instead
    ```python
    g = torch.Generator().manual_seed(0)  # data loading draws on the CPU
    loader = DataLoader(train_set, shuffle=True, generator=g)
    ```

    ## Known problems
    A generator is followed only within its scope, from the line that creates it; one stored
    in an attribute or passed in by a caller is not. Its device must be a literal (`"cuda"`,
    `"cpu"`) or a name the analysis knows holds a device. In a file that calls
    `torch.set_default_device(...)` (or `set_default_tensor_type`) anywhere, nothing is reported.

    ## Fix safety
    No fix: the generator may be shared by draws on both devices.
    """

    CODE = "GPD110"
    NAME = "generator-device-mismatch"
    SUMMARY = "a torch.Generator on another device than the tensors it draws"
    PLACEMENT = False  # a generator on a device is itself the placement
    EVENTS = ("binding", "call")
    VALID = (
        """\
import torch
from torch.utils.data import DataLoader
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
g = torch.Generator().manual_seed(0)
loader = DataLoader(dataset, shuffle=True, generator=g)
cuda_gen = torch.Generator(device=device)
noise = torch.randn(4, 8, device=device, generator=cuda_gen)
""",
        """\
import torch
g = torch.Generator(device="cuda")
g.manual_seed(0)
noise = torch.randn(4, 8, generator=g, device="cuda")
idx = torch.randperm(10, generator=torch.Generator())
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
device = torch.device("cuda")
g = torch.Generator()
noise = torch.randn(4, 8, device=device, generator=g)
""",
            line=4,
            col=42,
        ),
        Invalid(
            """\
import torch
from torch.utils.data import DataLoader
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
g = torch.Generator(device=device).manual_seed(0)
loader = DataLoader(dataset, batch_size=8, shuffle=True, generator=g)
""",
            line=5,
            col=58,
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self.pending: list[Report] = []
        self.generators: dict[tuple[str | None, str], Place] = {}
        """(function, name) -> the device of the generator it holds."""

    def on_binding(self, event: BindingEvent, semantic: Semantic) -> None:
        key = (semantic.function, event.name)
        value = event.assigned
        place = _generator_place(value, semantic) if value is not None else None
        if place is None:
            self.generators.pop(key, None)
        else:
            self.generators[key] = place

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        generator = _keyword(event.node, "generator")
        if generator is None or semantic.default_device_context is not None:
            return  # under `with torch.device(...):` samplers draw on that device
        held = self.generator_place(generator, semantic)
        if held is None or held is Place.UNKNOWN:
            return
        drawn, what = _draw_place(event, semantic)
        if drawn is Place.UNKNOWN or drawn is held:
            return
        gen_side = "the CPU" if held is Place.HOST else "the GPU"
        draw_side = "the CPU" if drawn is Place.HOST else "the GPU"
        message = (
            f"the generator `{dotted(generator) or 'torch.Generator(...)'}` lives on {gen_side}, "
            f"but {what} draws on {draw_side}: PyTorch fails with `Expected a "
            f"'{'cpu' if drawn is Place.HOST else 'cuda'}' device type for generator`; "
            f"create the generator on the device it draws on"
        )
        # at the `generator=` argument: the line to change, in a call written over several lines
        argument = keyword(event.node, "generator")
        self.pending.append(Report(argument if argument is not None else event.node, message))

    def finish(self, context: Context) -> Iterator[Report]:
        # under torch.set_default_device("cuda") (anywhere in the file, even after the loader
        # is built) samplers draw on the GPU: a CUDA generator is then the right one
        if not context.flags.default_device:
            yield from self.pending

    def generator_place(self, node: cst.BaseExpression, semantic: Semantic) -> Place | None:
        name = dotted(node)
        if name is None:
            return _generator_place(node, semantic)
        for key in ((semantic.function, name), (None, name)):
            if key in self.generators:
                return self.generators[key]
        return None


SEEDING_FUNCTIONS = frozenset({"torch.manual_seed", "torch.random.manual_seed"})
"""They seed the default CPU generator and return it (``generator = torch.manual_seed(0)``,
the diffusers tutorials' idiom); ``torch.cuda.manual_seed`` returns nothing."""


def _generator_place(node: cst.BaseExpression, semantic: Semantic) -> Place | None:
    """The device of ``torch.Generator(...)`` (or ``.manual_seed(...)`` on it, or the default
    generator ``torch.manual_seed(...)`` returns); None if ``node`` makes no generator."""
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        if node.func.attr.value != "manual_seed" or semantic.qualify(node.func) is not None:
            break
        node = node.func.value
    if not isinstance(node, cst.Call):
        return None
    qualified = semantic.qualify(node.func)
    if qualified in SEEDING_FUNCTIONS:
        return Place.HOST
    if qualified != "torch.Generator":
        return None
    device = _keyword(node, "device")
    if device is None and node.args and node.args[0].keyword is None:
        device = node.args[0].value
    return Place.HOST if device is None else _device_place(device, semantic)


def _device_place(node: cst.BaseExpression, semantic: Semantic) -> Place:
    text = string_value(node)
    if text is not None:
        if api.CPU_LITERAL.match(text):
            return Place.HOST
        return Place.DEVICE if api.DEVICE_LITERAL.match(text) else Place.UNKNOWN
    if isinstance(node, cst.Call) and semantic.qualify(node.func) == "torch.device" and node.args:
        return _device_place(node.args[0].value, semantic)
    name = dotted(node)
    value = semantic.lookup(name) if name is not None else None
    if value is None or value.kind is not Kind.DEVICE or value.by_name:
        return Place.UNKNOWN
    if value.cpu_device:
        return Place.HOST
    # a device variable bound in this file (`torch.device("cuda" if ... else "cpu")`): the GPU
    # wherever there is one; a device parameter could be anything
    return Place.DEVICE if value.binding is not None else Place.UNKNOWN


def _draw_place(event: CallEvent, semantic: Semantic) -> tuple[Place, str]:
    qualified = event.qualified or ""
    last = qualified.rsplit(".", 1)[-1]
    if qualified.startswith("torch.utils.data.") and last in HOST_CONSUMERS:
        return Place.HOST, f"`{last}` (it shuffles with `torch.randperm` on the CPU)"
    if qualified.startswith("torch.") and last in api.TENSOR_FACTORIES:
        device = _keyword(event.node, "device")
        if device is not None:
            return _device_place(device, semantic), f"`torch.{last}(...)`"
        if last in api.LIKE_FACTORIES:
            return event.result.place, f"`torch.{last}(...)`"
        return Place.HOST, f"`torch.{last}(...)` (no `device=`)"
    if event.method in DRAWING_METHODS and event.receiver is not None:
        receiver = event.receiver
        if receiver.is_tensorish:
            return receiver.place, f"`.{event.method}(...)`"
    return Place.UNKNOWN, ""


def _keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None
