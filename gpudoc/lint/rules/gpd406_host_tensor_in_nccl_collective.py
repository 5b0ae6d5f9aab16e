"""GPD406: a CPU tensor handed to a collective of an NCCL process group."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import CallEvent, Semantic
from gpudoc.lint.analysis.expressions import string_value
from gpudoc.lint.analysis.names import assigned_value, dotted
from gpudoc.lint.analysis.values import Place, Value
from gpudoc.lint.rule import Context, Invalid, Report, Rule
from gpudoc.lint.rules._helpers import bound_expression

PREFIX = "torch.distributed."
LEGACY_CONSTRUCTORS = frozenset(
    f"torch.{kind}Tensor"
    for kind in ("", "Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Byte", "Bool")
)
"""``torch.FloatTensor([...])``: always a CPU tensor (``torch.cuda.FloatTensor`` is not)."""


class HostTensorInNcclCollective(Rule):
    """A CPU tensor passed to `all_reduce` / `broadcast` / `all_gather` of an NCCL process group.

    ## What it does
    In a file whose process group is created with `backend="nccl"` (or with `args.backend`
    whose command-line default is `"nccl"`), finds `torch.distributed`
    collectives and point-to-point calls (`all_reduce`, `reduce`, `broadcast`, `all_gather`,
    `reduce_scatter`, `all_to_all`, `send`, ...) given a tensor the analysis knows is on the
    CPU: one made by a factory without `device=` (`torch.tensor([correct, total])`) or a legacy
    constructor (`torch.FloatTensor([...])`), or moved with `.cpu()`.

    ## Why is this bad?
    NCCL only moves GPU memory: the call fails with `RuntimeError: No backend type associated
    with device type cpu` (or, on older releases, `Tensors must be CUDA and dense`), usually
    at the end of the first epoch when the metrics are reduced.

    ## Example
    ```python
    dist.init_process_group("nccl")
    stats = torch.tensor([correct, total])
    dist.all_reduce(stats)
    ```

    ## Use instead
    ```python
    stats = torch.tensor([correct, total], device=device)
    dist.all_reduce(stats)
    ```

    ## Known problems
    Calls given `group=` are not reported (the group may be a gloo group made for CPU
    tensors), nor are files whose backend is not a literal containing `"nccl"` (unless read from
    `args` with an `add_argument` default of `"nccl"`) or that give CPU tensors a backend
    (`"cuda:nccl,cpu:gloo"`). A
    backend chosen with `"nccl" if torch.cuda.is_available() else "gloo"` is NCCL wherever
    there is a GPU: those calls are reported. So is `init_process_group()` with no backend in
    a file that calls `torch.cuda.set_device`: recent PyTorch (2.13, read in its source) makes
    the accelerator's backend alone, NCCL on a GPU; older versions also made gloo for CPU
    tensors, where the call works.

    ## Fix safety
    No fix: where the result is read back decides whether the tensor should move.
    """

    CODE = "GPD406"
    NAME = "host-tensor-in-nccl-collective"
    SUMMARY = "a CPU tensor passed to an NCCL collective (all_reduce, broadcast, ...)"
    EVENTS = ("call",)
    VALID = (
        """\
import torch
import torch.distributed as dist
dist.init_process_group(backend="nccl")
device = torch.device("cuda", dist.get_rank())
stats = torch.tensor([3, 10], device=device)
dist.all_reduce(stats)
""",
        """\
import torch
import torch.distributed as dist
dist.init_process_group(backend="nccl")
cpu_group = dist.new_group(backend="gloo")
stats = torch.tensor([3, 10])
dist.all_reduce(stats, group=cpu_group)
torch.cuda.set_device(dist.get_rank())
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
import torch.distributed as dist
dist.init_process_group("nccl")
torch.cuda.set_device(dist.get_rank())
stats = torch.tensor([3, 10])
dist.all_reduce(stats)
""",
            line=6,
            col=1,
        ),
        Invalid(
            """\
import torch
import torch.distributed as dist
backend = "nccl" if torch.cuda.is_available() else "gloo"
def gather_loss(loss, device):
    out = [torch.zeros(1, device=device) for _ in range(dist.get_world_size())]
    dist.all_gather(out, loss.detach().cpu())
    return out
dist.init_process_group(backend=backend)
model = torch.nn.Linear(2, 2).to("cuda")
""",
            line=6,
            col=5,
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[cst.Call, str, str]] = []
        """(call, collective, the host argument as written)."""
        self.backends: list[cst.BaseExpression] = []
        self.nccl_default = False
        """An ``add_argument(..., default="nccl")``: a backend read from ``args`` is NCCL."""
        self.unnamed_backend = False
        """``init_process_group()`` without a backend: the accelerator's alone in recent
        PyTorch (NCCL on a GPU); older versions also made gloo for CPU tensors."""
        self.sets_device = False
        """``torch.cuda.set_device(rank)``: each rank runs on a GPU."""

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        qualified = event.qualified
        if event.method == "add_argument" and qualified is None:
            default = next((a.value for a in event.node.args if _keyword(a) == "default"), None)
            self.nccl_default |= default is not None and string_value(default) == "nccl"
            return
        if qualified == "torch.cuda.set_device":
            self.sets_device = True
        if qualified is None or not qualified.startswith(PREFIX):
            return
        name = qualified[len(PREFIX) :]
        if name == "init_process_group":
            self.note_backend(event.node, semantic)
            return
        if name not in api.COLLECTIVES or any(_keyword(arg) == "group" for arg in event.node.args):
            return
        for arg, value in zip(event.node.args, event.args, strict=True):
            if _on_host(arg.value, value, semantic):
                self.calls.append((event.node, name, _shown(arg.value)))
                return

    def note_backend(self, call: cst.Call, semantic: Semantic) -> None:
        for position, arg in enumerate(call.args):
            keyword = _keyword(arg)
            if keyword == "backend" or (keyword is None and position == 0):
                self.backends.append(bound_expression(arg.value, semantic))
                return
        if not any(arg.star for arg in call.args):
            self.unnamed_backend = True

    def finish(self, context: Context) -> Iterator[Report]:
        if not self.calls or not (self.backends or self.unnamed_backend):
            return
        texts = [_backend_text(backend, context) for backend in self.backends]
        if self.unnamed_backend and self.sets_device:
            texts.append("nccl")  # the accelerator's backend, on the GPU each rank sets
        if self.nccl_default:  # backend=args.dist_backend, whose default is "nccl"
            texts += ["nccl" for backend in self.backends if isinstance(backend, cst.Attribute)]
        # "cuda:nccl,cpu:gloo" gives CPU tensors a backend too
        if not any("nccl" in text and "cpu:" not in text for text in texts):
            return
        for call, name, shown in self.calls:
            message = (
                f"`{shown}` is on the CPU, but `{name}` runs on the NCCL backend, which only "
                "moves GPU memory: this fails with `No backend type associated with device type "
                f"cpu`; create or move `{shown}` on this rank's GPU first"
            )
            yield Report(call, message)


def _on_host(node: cst.BaseExpression, value: Value, semantic: Semantic) -> bool:
    """A tensor known to be on the CPU: typed so by the walk, ``x.cpu()``, or a legacy
    constructor (``torch.FloatTensor([...])``), passed directly or through the name it was
    bound to. A tensor made with ``device=<a variable>`` is not: the variable may be chosen in
    an ``if`` whose arms the walk does not join."""
    if value.place is Place.DEVICE:
        return False
    made = node
    name = dotted(node)
    held = semantic.lookup(name) if name is not None else None
    if held is not None and held.binding is not None and name is not None:
        made = assigned_value(held.binding, name) or node
    if isinstance(made, cst.Call):
        device = next((a.value for a in made.args if _keyword(a) == "device"), None)
        if device is not None and string_value(device) != "cpu":
            return False
        if (semantic.qualify(made.func) or "") in LEGACY_CONSTRUCTORS:
            return True
    return value.place is Place.HOST and (value.is_tensorish or _cpu_call(node))


def _cpu_call(node: cst.BaseExpression) -> bool:
    """``x.cpu()``: on the host whatever ``x`` is."""
    func = node.func if isinstance(node, cst.Call) else None
    return isinstance(func, cst.Attribute) and func.attr.value == "cpu"


def _keyword(arg: cst.Arg) -> str | None:
    return arg.keyword.value if arg.keyword is not None else None


def _shown(node: cst.BaseExpression) -> str:
    return dotted(node) or "the tensor"


def _backend_text(node: cst.BaseExpression, context: Context) -> str:
    """``"nccl"``, or every string of ``"nccl" if ... else "gloo"`` / a name bound to one."""
    text = string_value(node)
    if text is not None:
        return text
    return context.code(node) if isinstance(node, cst.IfExp) else ""
