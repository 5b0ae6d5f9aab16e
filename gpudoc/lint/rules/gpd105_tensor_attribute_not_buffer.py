"""GPD105: a tensor kept as a plain attribute of an nn.Module."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import (
    BindingEvent,
    CallEvent,
    ClassEvent,
    MemberEvent,
    Semantic,
)
from gpudoc.lint.analysis.expressions import converts_only, string_value
from gpudoc.lint.analysis.functions import argument_for
from gpudoc.lint.analysis.names import (
    assigned_value,
    class_method,
    dotted,
    is_number_expression,
    iter_statements,
    keyword,
)
from gpudoc.lint.analysis.semantic import ModuleClass
from gpudoc.lint.analysis.values import Kind, Place
from gpudoc.lint.rule import Context, Invalid, Report, Rule
from gpudoc.lint.rules._class_attrs import ClassAttr, InitAttributes
from gpudoc.lint.rules._default_device import cuda_by_default
from gpudoc.lint.rules._factory_uses import read_only_as_index
from gpudoc.lint.rules._forward_cache import cached_without_device_check, none_in_init
from gpudoc.lint.rules._helpers import chain_root
from gpudoc.lint.rules._importers import is_entry
from gpudoc.lint.rules._project_scripts import importer_texts
from gpudoc.lint.rules._zero_dim import read_only_as_scalar_operand, zero_dim
from gpudoc.lint.visit import walk

COERCING_SOLVERS = ("torchdiffeq.",)
"""Libraries whose solvers move the tensors they are given to the state's device
(torchdiffeq's ``_check_inputs`` moves ``t`` to ``y0.device``)."""


class TensorAttributeNotBuffer(Rule):
    """A tensor stored as a plain attribute of an `nn.Module` instead of a buffer.

    ## What it does
    Finds `self.name = torch.tensor(...)` (or another new tensor) in the `__init__` of an
    `nn.Module` subclass, not wrapped in `nn.Parameter` or `register_buffer`, and then used in
    another method without being moved there. Also a tensor the module caches on itself while it
    runs: `self.mask = None` in `__init__`, then `if self.mask is None: self.mask = ...` (or
    rebuilt only when the batch size changes) in `forward` or a helper it calls. Built on the
    input's device, the cache stays there when the module is moved (Lightning hands it back on
    the CPU after training, a CPU probe runs before `.cuda()`), and the next forward mixes devices.

    ## Why is this bad?
    `model.to(device)` moves parameters and buffers only. The plain tensor stays on the CPU and
    `forward` fails with `Expected all tensors to be on the same device` (pytorch/audio#457,
    Lightning's "register it as a buffer"). It is also missing from the `state_dict`.

    ## Example
    ```python
    class Norm(nn.Module):
        def __init__(self):
            super().__init__()
            self.mean = torch.tensor([0.485, 0.456, 0.406])

        def forward(self, x):
            return x - self.mean
    ```

    ## Use instead
    ```python
    class Norm(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]), persistent=False)
    ```

    A 0-dim tensor (a full reduction, `torch.mean(w ** 2) ** 0.5`, `torch.tensor(0.5)`) read
    only as an operand of arithmetic or a comparison (`x.mul(self.scale)`, `x * self.scale`) is
    not reported: PyTorch takes a 0-dim host tensor as a number beside CUDA operands.

    It also checks library modules (no `if __name__ == "__main__":`) that place nothing
    themselves, since the scripts that import their classes move them; there, only attributes
    used in arithmetic (`(x - self.mean) / self.std`) are reported.

    Nor is one placed by hand at every read: moved before it meets anything
    (`torch.clamp(self.log_alpha.exp(), max=1e6).to(self.device)`) or met only by operands the
    code takes to the host itself (`self.log_alpha.exp() * (log_pi.cpu() + h).cpu()`), as SAC
    agents keep their learnable temperature, with its own optimizer, on the CPU.

    Nothing is reported in a file whose new tensors are made on the GPU: one that calls
    `torch.set_default_device("cuda")` or `torch.set_default_tensor_type(torch.cuda.HalfTensor)`,
    or that a project script imports after making CUDA the default that way (a Llama
    `inference.py` before it builds `model.py`'s key/value caches).

    ## Known problems
    A tensor moved where it is used (`self.mean.to(x.device)`, or through a project helper whose
    body is `x.to(tensor.device)`), or by the class's own `to` / `cuda` / `_apply` override, is
    not reported (an override that moves attributes by name at run time, through `vars(self)` or
    `getattr`, silences the whole class); 0-dim tensors
    (`torch.tensor(0.5)`) combine with device tensors and are not reported either. In a file
    that places nothing itself (a library module), an attribute is reported only where it meets
    the inputs in another method: in arithmetic, or handed to a torch function or to one of the
    module's layers (also through a local alias or a subscript); one handed to the class's own
    helper methods is not, since they may move it. An attribute only ever read as an index or a
    mask of other tensors (`sim[self.mask]`) is not reported: PyTorch copies a host index to the
    indexed tensor's device. One indexed itself by device indices (`self.eye[labels]`) is.
    Neither is one whose every read converts it to host data (`self.header.numpy()`, file
    metadata written beside the weights): a buffer would take it to the GPU, where `.numpy()`
    fails. A cache whose test looks at the device (`self.mask.device != x.device`) rebuilds
    itself after a move and is not reported; nor, in a script that moves its modules only
    before it first runs one (`model = model.cuda()`, then its training loop), is a cache built
    on the input's device, which the model never leaves. Nor is a tensor built on the device in
    `__init__`
    (derived from `torch.linspace(...).to(device)`), or a copy of an `__init__` argument
    (`torch.tensor(mean)`) where every construction of the class in the file passes a device
    tensor: it is where the module will be, unless the module is later moved elsewhere, or
    the file or a project script wraps a model in `nn.DataParallel`: its replicas on the other
    GPUs get their own parameters and buffers, and read a plain tensor on the first GPU. One
    handed to a torchdiffeq solver (`odeint(self.func, x, self.times)`) is not reported: the
    solver moves the times to the state's device itself.
    """

    CODE = "GPD105"
    NAME = "tensor-attribute-not-buffer"
    SUMMARY = "a tensor kept as a plain nn.Module attribute is not moved by .to(device)"
    IN_LIBRARIES = True  # the class is wrong wherever it is moved, often by another file
    VALID = (
        """\
import torch
import torch.nn as nn
class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.5, 0.5]))
        self.scale = nn.Parameter(torch.ones(2))
        self.eps = torch.tensor(1e-5)
    def forward(self, x):
        return (x - self.mean) * self.scale + self.eps
model = Norm().cuda()
""",
        """\
import torch
import torch.nn as nn
class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.mean = torch.tensor([0.5, 0.5])
    def forward(self, x):
        return x - self.mean.to(x.device)
model = Norm().cuda()
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
import torch.nn as nn
class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.mean = torch.tensor([0.5, 0.5])
    def forward(self, x):
        return x - self.mean
model = Norm().cuda()
""",
            line=6,
            col=9,
        ),
        Invalid(
            """\
import torch
import torch.nn as nn
class Causal(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
        self.mask = None
    def forward(self, x):
        if self.mask is None:
            n = x.shape[1]
            self.mask = torch.ones(n, n, device=x.device).triu(1).bool()
        return self.attn(x, x, x, attn_mask=self.mask)[0]
model = Causal().cuda()
""",
            line=7,
            col=9,
        ),
    )

    EVENTS = ("class", "binding", "member", "call")

    def __init__(self) -> None:
        super().__init__()
        self.attrs = InitAttributes()
        self.used_elsewhere: dict[int, set[str]] = {}
        """id of a module class -> attributes read in methods other than ``__init__``."""
        self.moved_on_use: dict[int, set[str]] = {}
        """id of a module class -> attributes moved where they are used (``self.mean.to(x)``)."""
        self.rebuilt: dict[int, set[str]] = {}
        """id of a module class -> attributes rebound moved (``self.grid = ....to(x.device)``)."""
        self.cached: dict[int, dict[str, set[cst.CSTNode]]] = {}
        """id of a module class -> attribute -> the statements of its methods (not
        ``__init__``) that bind it a tensor (_forward_cache.py)."""
        self.class_names: set[str] = set()
        self.constructions: dict[str, list[CallEvent]] = {}
        """Class name -> the calls that build an instance of it (``Norm(mean, std)``)."""
        self.qualify: Callable[[cst.BaseExpression], str | None] = lambda node: None
        self.host_cached: dict[int, set[str]] = {}
        """id of a module class -> cached attributes some method binds a host tensor."""
        self.module_moves: list[int] = []
        """Walk steps of the script's moves of modules (``model.cuda()``)."""
        self.module_runs: list[int] = []
        """Walk steps of the script's calls of modules with weights (``model(x)``)."""
        self.registered: dict[int, set[str]] = {}
        """Per module class, attributes a method assigns an ``nn.Parameter``: registered (a
        tensor ``__init__`` binds there is a placeholder, ``initialize()`` wraps it)."""

    def on_class(self, event: ClassEvent, semantic: Semantic) -> None:
        self.qualify = semantic.qualify  # the file's imports, read again in finish
        if event.module_class is not None:
            self.attrs.add_class(event.module_class)
            self.class_names.add(event.module_class.name)

    def on_binding(self, event: BindingEvent, semantic: Semantic) -> None:
        self.attrs.note(event, semantic)
        cls, name = semantic.module_class, event.name
        if cls is None or semantic.in_init or not name.startswith("self."):
            return
        attr = name[5:]
        value = assigned_value(event.statement, name)
        registered = isinstance(value, cst.Call) and (semantic.qualify(value.func) or "") in (
            "torch.nn.Parameter",
            "torch.nn.parameter.Parameter",
        )
        cached = event.value.is_tensorish and isinstance(event.target, cst.Attribute)
        if registered:  # `self.grid = nn.Parameter(g)`: Module.__setattr__ registers it
            self.registered.setdefault(id(cls), set()).add(attr)
        elif cached and "." not in attr:
            self.cached.setdefault(id(cls), {}).setdefault(attr, set()).add(event.statement)
            if event.value.place is Place.HOST:
                self.host_cached.setdefault(id(cls), set()).add(attr)
        if _moved_value(event.statement) or _moved_local(event.statement, semantic.function_node):
            # a lazy cache (`self.grid = make_grid(...).to(x.device)` in forward): the class
            # rebuilds it on its input's device before using it
            self.rebuilt.setdefault(id(cls), set()).add(name[5:].split(".")[0])

    def on_member(self, event: MemberEvent, semantic: Semantic) -> None:
        cls, node = semantic.module_class, event.node
        if cls is None or semantic.in_init:
            return
        if node.attr.value == "data" and isinstance(node.value, cst.Attribute):
            node = node.value  # `self.glob_mean.data`: a read of `glob_mean` (not `.shape`)
        if isinstance(node.value, cst.Name) and node.value.value == "self":
            self.used_elsewhere.setdefault(id(cls), set()).add(node.attr.value)

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        """``self.mean.to(x.device)`` in forward: the attribute follows its input by hand."""
        func, cls = event.node.func, semantic.module_class
        self.note_lifecycle(event, semantic)
        if isinstance(func, cst.Name) and func.value in self.class_names:
            self.constructions.setdefault(func.value, []).append(event)
        if cls is not None and (semantic.qualify(func) or "").startswith(COERCING_SOLVERS):
            # `odeint(self.field, x, self.times)`: torchdiffeq moves the times to x's device
            for arg in event.node.args:
                name = dotted(arg.value) or ""
                if name.startswith("self.") and name.count(".") == 1:
                    self.moved_on_use.setdefault(id(cls), set()).add(name[5:])
        if not isinstance(func, cst.Attribute):
            return
        if func.attr.value not in api.MOVE_METHODS and not _type_to_cuda(event.node):
            return
        if func.attr.value == "to" and converts_only(event.node):
            return  # `.to(x.dtype)`: converted where it is
        moved = func.value
        while isinstance(moved, cst.Call):
            inner = moved.func
            if moved.args and _wraps(moved):
                moved = moved.args[0].value  # `nn.Parameter(self.pe, requires_grad=False).to(d)`
            elif (
                moved.args
                and _of_one_tensor(moved)
                and (semantic.qualify(inner) or "").startswith("torch.")
            ):
                # `torch.clamp(self.log_alpha.exp(), max=1e6).to(self.device)`: made from it
                # alone (`torch.matmul(self.w, h).to(d)` met `h` before the move)
                moved = moved.args[0].value
            elif isinstance(inner, cst.Attribute) and inner.attr.value in api.PLACE_KEEPING_METHODS:
                moved = inner.value  # `self.log_alpha.exp().detach().to(self.device)`
            else:
                break
        name = dotted(moved) or ""
        function = semantic.function_node
        if cls is not None and isinstance(moved, cst.Name) and function is not None:
            # `span = self.span if span is None else span` then `span.to(x.device)`
            name = _aliased_attribute(function, moved.value) or name
        if cls is not None and name.startswith("self."):
            self.moved_on_use.setdefault(id(cls), set()).add(name[5:].split(".")[0])

    def note_lifecycle(self, event: CallEvent, semantic: Semantic) -> None:
        """Where the script's own code (not a module's methods) moves and runs modules."""
        if semantic.module_class is not None:
            return
        receiver = event.receiver
        if event.method in ("to", "cuda", "cpu") and receiver is not None:
            if receiver.kind is Kind.MODULE:
                self.module_moves.append(semantic.step)
        elif event.module is not None and event.module.weighted:
            self.module_runs.append(semantic.step)

    def moved_once_before_running(self, context: Context) -> bool:
        """A script that runs its model (``model(x, y)`` in its training loop) and moves modules
        only before the first run (``model = model.cuda()`` once): a forward cache is built on
        the device the model stays on (modded-nanogpt's rotary cache). A library's modules, or
        a script that never runs one, may be moved after a forward."""
        if context.library or not self.module_runs or not is_entry(context.module):
            return False
        first_run = min(self.module_runs)
        return all(step < first_run for step in self.module_moves)

    def finish(self, context: Context) -> Iterator[Report]:
        if cuda_by_default(context):
            return  # `torch.set_default_tensor_type(torch.cuda.HalfTensor)`: made on the GPU
        # the file's code and the texts that wrap a model in DataParallel: read once, when a
        # tensor made on a GPU is found
        replicated: tuple[str, list[str]] | None = None
        for cls in self.attrs.classes:
            overridden = _override_moves(cls.node) if cls.custom_apply else set()
            if overridden is None:
                continue  # its own `_apply` / `to` moves what the text does not name
            used = self.used_elsewhere.get(id(cls), set())
            if not context.flags.places:
                # a library module: only the unmistakable use, arithmetic with the inputs
                # (`(x - self.mean) / self.std`), not an attribute handed to a helper that may
                # move it, or read for numbers
                used = used & _arithmetic_operands(cls.node)
            # also through the project's helper (`to_device(self.t, tensor=x)`); one use moved
            # by hand does not move another (`lsm * self.w` beside `weight=self.w.to(dev)`)
            by_hand = self.moved_on_use.get(id(cls), set()) | cls.follows_inputs
            rebuilt = self.rebuilt.get(id(cls), set())
            moved = (by_hand - _unmoved_operands(cls.node)) | rebuilt | overridden
            methods = _methods(cls.node)
            optional_device = _optional_device(cls.node)
            registered = self.registered.get(id(cls), set())
            # a store into one of these is followed there: judged itself, or moved by hand
            judged = {a.attr for a in self.attrs.of(cls) if a.shape == "tensor"} | by_hand
            for attr in self.attrs.of(cls):
                if attr.shape != "tensor" or attr.attr not in used or attr.attr in moved:
                    continue
                if attr.attr in registered:
                    continue  # a placeholder a method replaces with an `nn.Parameter` (VOneNet)
                if read_only_as_index(f"self.{attr.attr}", methods):
                    continue  # `sim[self.mask]`: PyTorch copies a host mask to sim's device
                if zero_dim(attr.value, self.qualify) and read_only_as_scalar_operand(
                    f"self.{attr.attr}", methods, self.qualify
                ):
                    continue  # `x.mul(self.scale)` of a 0-dim scale: a number to the GPU
                if _host_data(f"self.{attr.attr}", methods):
                    continue  # `self.header.numpy().tofile(f)`: it must stay on the host
                if _placed_at_every_read(attr.attr, methods, judged):
                    continue  # a learnable host scalar the code moves, or keeps on the host, itself
                placed = (attr.placed and not optional_device) or _made_on_a_device(attr.value)
                if placed:
                    pinned = _on_the_first_gpu(attr.value, self.attrs.of(cls))
                    if pinned and replicated is None:
                        replicated = _replicated(context)
                    if (
                        not pinned
                        or replicated is None
                        or not _replicated_class(cls.node, *replicated)
                    ):
                        continue  # `torch.zeros(1, device=device)`: where the caller says
                    message = (
                        f"`self.{attr.attr}` is a plain tensor made on one GPU: nn.DataParallel "
                        f"copies only parameters and buffers to its replicas on the other GPUs, "
                        f"which read this one on the first; use `self.register_buffer("
                        f'"{attr.attr}", ..., persistent=False)`'
                    )
                    yield Report(attr.statement, message)
                    continue
                if _copies_a_placed_argument(cls, attr.value, self.constructions):
                    continue  # `torch.tensor(mean)`, and every `Norm(...)` passes a device tensor
                message = (
                    f"`self.{attr.attr}` is a plain tensor attribute: `.to(device)` will not move "
                    f'it; use `self.register_buffer("{attr.attr}", ..., persistent=False)`'
                )
                yield Report(attr.statement, message)
            # made on the input's device is what a cache does: only a move where it is read helps
            moved_where_read = self.moved_on_use.get(id(cls), set()) | rebuilt
            if self.moved_once_before_running(context):
                # made on the input's device, which the model never leaves: only a cache
                # built on the host meets the device
                used = used & self.host_cached.get(id(cls), set())
            yield from self.forward_caches(cls, used, moved_where_read)

    def forward_caches(self, cls: ModuleClass, used: set[str], moved: set[str]) -> Iterator[Report]:
        """``self.mask = None`` in ``__init__``, a tensor cached there by ``forward``."""
        cached = self.cached.get(id(cls), {})
        if not cached:
            return
        registered = self.registered.get(id(cls), set())
        for attr, statement in none_in_init(cls.node).items():
            bindings = cached.get(attr)
            if not bindings or attr not in used or attr in moved or attr in registered:
                continue
            if not cached_without_device_check(cls.node, bindings):
                continue
            message = (
                f"`self.{attr}` caches a tensor on the module as a plain attribute: "
                "`.to()` / `.cpu()` will not move it, and after a move the next forward mixes "
                f'devices; declare it `self.register_buffer("{attr}", None, persistent=False)`'
            )
            yield Report(statement, message)


def _moved_local(statement: cst.CSTNode, function: cst.FunctionDef | None) -> bool:
    """``self.mask = mask`` where the function bound ``mask = ....to(x.device)``."""
    if function is None or not isinstance(statement, cst.SimpleStatementLine):
        return False
    small = statement.body[0]
    value = small.value if isinstance(small, cst.Assign) else None
    if not isinstance(value, cst.Name):
        return False
    bound = [
        s.value
        for s in iter_statements(function.body.body)
        if isinstance(s, cst.Assign) and any(dotted(t.target) == value.value for t in s.targets)
    ]
    return bool(bound) and all(_chain_moves(b, api.MOVE_METHODS - {"cpu"}) for b in bound)


def _type_to_cuda(call: cst.Call) -> bool:
    """``w.type("torch{}.FloatTensor".format(cuda))``: a tensor type named by a string that may
    be CUDA's, at every call (not ``w.type(torch.float16)``, a cast)."""
    if not isinstance(call.func, cst.Attribute) or call.func.attr.value != "type":
        return False
    arg = call.args[0].value if len(call.args) == 1 else None
    if isinstance(arg, cst.Call) and isinstance(arg.func, cst.Attribute):
        arg = arg.func.value if arg.func.attr.value == "format" else arg  # `"...".format(s)`
    if not isinstance(arg, cst.SimpleString | cst.FormattedString | cst.ConcatenatedString):
        return False  # `w.type(torch.FloatTensor)`: a cast to the host
    text = cst.Module([]).code_for_node(arg)
    return "torch" in text and "Tensor" in text and ("{" in text or "cuda" in text)


def _on_the_first_gpu(value: cst.BaseExpression, attrs: list[ClassAttr]) -> bool:
    """``torch.tensor(c).float().cuda()``, ``device="cuda"``, or a copy of such an attribute
    (``self.P_hat.repeat(n, 1, 1)``): on the current GPU, whichever the module's replica is."""
    root = value
    while isinstance(root, cst.Call) and isinstance(root.func, cst.Attribute):
        method, args = root.func.attr.value, root.args
        if method == "cuda" and (not args or isinstance(args[0].value, cst.Integer)):
            return True  # `.cuda()`, `.cuda(0)`
        if method == "to" and args and CUDA_TEXT.match(string_value(args[0].value) or ""):
            return True
        root = root.func.value
    if isinstance(root, cst.Call):
        device = keyword(root, "device")
        return device is not None and bool(CUDA_TEXT.match(string_value(device.value) or ""))
    if isinstance(root, cst.Attribute) and dotted(root.value) == "self":
        earlier = [a for a in attrs if a.attr == root.attr.value and a.value is not value]
        return bool(earlier) and _on_the_first_gpu(earlier[-1].value, [])
    return False


CUDA_TEXT = re.compile(r"^cuda(:0)?$")


def _replicated(context: Context) -> tuple[str, list[str]]:
    """The file's code, and the texts of the file and of the project scripts that may import
    it which wrap a model in ``nn.DataParallel``, which replicates modules onto several GPUs at
    each forward."""
    code = context.module.code
    texts = [code, *importer_texts(context.path)] if context.path else [code]
    return code, [text for text in texts if DATA_PARALLEL.search(text)]


def _replicated_class(node: cst.ClassDef, code: str, wrapping: list[str]) -> bool:
    """The class is a part of a model that ``wrapping`` (texts that call ``DataParallel``)
    wraps: built in another class's ``__init__`` in ``code`` (a submodule), or itself the model
    handed to ``DataParallel`` (``DataParallel(Model(opt))``, or a name bound to
    ``Model(...)`` and then wrapped); a loss beside it is not."""
    if not wrapping:
        return False
    name = node.name.value
    if re.search(rf"\bself\.\w+\s*=\s*(\w+\.)*{name}\(", code):
        return True
    for text in wrapping:
        if re.search(rf"DataParallel\(\s*(\w+\.)*{name}\(", text):
            return True
        for bound in re.finditer(rf"(\w+)\s*=\s*(\w+\.)*{name}\(", text):
            if re.search(rf"DataParallel\(\s*{bound.group(1)}\b", text):
                return True
    return False


DATA_PARALLEL = re.compile(r"(?<![\w])DataParallel\(")
"""``nn.DataParallel(model)`` (``DistributedDataParallel`` keeps one module per process)."""


def _made_on_a_device(value: cst.BaseExpression) -> bool:
    """A factory given a device that is not the CPU (``torch.zeros(1, device=device)``)."""
    if not isinstance(value, cst.Call):
        return False
    for arg in value.args:
        if arg.keyword is not None and arg.keyword.value == "device":
            text = string_value(arg.value)
            return text is None or not text.startswith("cpu")
    return False


def _optional_device(node: cst.ClassDef) -> bool:
    """``def __init__(self, ..., device=None)``: built without one, what ``__init__`` makes
    "on the device" is on the CPU (flamo's filters)."""
    init = class_method(node, "__init__")
    params = (*init.params.params, *init.params.kwonly_params) if init is not None else ()
    return any(
        api.DEVICE_NAME.search(param.name.value) is not None
        and isinstance(param.default, cst.Name)
        and param.default.value == "None"
        for param in params
    )


TENSOR_COPIES = ("tensor", "as_tensor")


def _copies_a_placed_argument(
    cls: ModuleClass, value: cst.BaseExpression, constructions: dict[str, list[CallEvent]]
) -> bool:
    """``self.mean = torch.tensor(mean).view(-1, 1, 1)`` where ``mean`` is an ``__init__``
    parameter and every construction of the class in the file passes a device tensor for it
    (PyTorch's style-transfer tutorial): the copy keeps that device."""
    root = value
    while True:
        if isinstance(root, cst.Call) and (dotted(root.func) or "").endswith(TENSOR_COPIES):
            if not root.args or root.args[0].keyword is not None:
                return False
            root = root.args[0].value
        elif isinstance(root, cst.Call) and isinstance(root.func, cst.Attribute):
            root = root.func.value
        elif isinstance(root, cst.Subscript):
            root = root.value
        else:
            break
    init = class_method(cls.node, "__init__")
    if not isinstance(root, cst.Name) or init is None:
        return False
    names = [param.name.value for param in init.params.params][1:]
    if root.value not in names:
        return False
    calls = constructions.get(cls.name, [])
    return bool(calls) and all(
        _given_place(call, init, root.value) is Place.DEVICE for call in calls
    )


def _given_place(call: CallEvent, init: cst.FunctionDef, param: str) -> Place | None:
    """Where the value ``call`` passes for ``param`` of ``__init__`` lives; None when it passes
    none or cannot be told (``*args``)."""
    arg = argument_for(init, call.node, param, is_method=True)
    return call.args[call.node.args.index(arg)].place if arg is not None else None


def _aliased_attribute(function: cst.FunctionDef, name: str) -> str | None:
    """``self.span`` when the function binds ``name = self.span`` (also as one arm of a
    conditional expression: ``span = self.span if span is None else span``)."""
    for statement in iter_statements(function.body.body):
        if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
            continue
        if dotted(statement.targets[0].target) != name:
            continue
        value = statement.value
        arms = (value.body, value.orelse) if isinstance(value, cst.IfExp) else (value,)
        for arm in arms:
            text = dotted(arm) or ""
            if text.startswith("self.") and text.count(".") == 1:
                return text
    return None


def _wraps(call: cst.Call) -> bool:
    """``nn.Parameter(t)``, ``Variable(t)``: a wrapper whose move moves ``t``'s data."""
    name = (dotted(call.func) or "").rsplit(".", 1)[-1]
    return name in ("Parameter", "Variable")


HOST_READS = frozenset({"numpy", "tolist", "item"})


def _host_data(name: str, methods: list[cst.FunctionDef]) -> bool:
    """Every read of ``name`` in the methods converts it to host data (``.numpy()``,
    ``.tolist()``), besides writes into it (``self.header[3] = n``) and rebinding: file
    metadata, which a buffer would take to the GPU, where ``.numpy()`` fails."""
    uses = _HostUses(name)
    for method in methods:
        walk(method, uses)
        for alias in uses.take_aliases():  # `header = self.header`, then `header.numpy()`
            if _host_data(alias, [method]):
                uses.converted = True
            else:
                return False
    return uses.converted and uses.mentions <= uses.allowed


class _HostUses(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        self.name = name
        self.mentions: set[int] = set()
        self.allowed: set[int] = set()
        self.converted = False
        self.aliases: list[str] = []

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if dotted(node) == self.name:
            self.mentions.add(id(node))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        host_read = isinstance(func, cst.Attribute) and func.attr.value in HOST_READS
        if host_read and isinstance(func, cst.Attribute) and dotted(func.value) == self.name:
            self.allowed.add(id(func.value))
            self.converted = True

    def take_aliases(self) -> list[str]:
        aliases, self.aliases = self.aliases, []
        return aliases

    def visit_Subscript(self, node: cst.Subscript) -> None:
        index = node.slice[0].slice if len(node.slice) == 1 else None
        integer = isinstance(index, cst.Index) and isinstance(index.value, cst.Integer)
        if integer and dotted(node.value) == self.name:
            self.allowed.add(id(node.value))  # `self.seen = self.header[3]`: one number

    def visit_Assign(self, node: cst.Assign) -> None:
        alias = node.targets[0].target if len(node.targets) == 1 else None
        if isinstance(alias, cst.Name) and dotted(node.value) == self.name:
            self.allowed.add(id(node.value))
            self.aliases.append(alias.value)
        for target in node.targets:
            written: cst.BaseExpression = target.target
            if isinstance(written, cst.Subscript):
                written = written.value  # `self.header[3] = self.seen`
            if dotted(written) == self.name:
                self.allowed.add(id(written))


def _methods(node: cst.ClassDef) -> list[cst.FunctionDef]:
    """The class's methods besides ``__init__``."""
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    return [s for s in body if isinstance(s, cst.FunctionDef) and s.name.value != "__init__"]


def _moved_value(statement: cst.CSTNode) -> bool:
    """``self.grid = ....to(x.device)`` (or ``.cuda()``, ``.type_as(x)``), also followed by
    shape calls (``....to(z.device).unsqueeze(0).repeat(b, 1, 1)``): assigned moved."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    small = statement.body[0]
    value = small.value if isinstance(small, cst.Assign | cst.AnnAssign) else None
    return value is not None and _chain_moves(value, api.MOVE_METHODS - {"cpu"})


OVERRIDES = frozenset({"_apply", "to", "cuda"})
GENERIC = frozenset({"__dict__", "vars", "getattr", "setattr", "named_buffers", "_buffers"})


def _override_moves(node: cst.ClassDef) -> set[str] | None:
    """The attributes the class's own ``to`` / ``cuda`` / ``_apply`` handle (``self.scale =
    self.scale.to(device)``); None when it handles them by name at run time (``vars(self)``,
    ``getattr``), or is inherited."""
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    overrides = [s for s in body if isinstance(s, cst.FunctionDef) and s.name.value in OVERRIDES]
    if not overrides:
        return None
    finder = _SelfNames()
    for method in overrides:
        walk(method.body, finder)
    return None if finder.generic else finder.attributes


class _SelfNames(cst.CSTVisitor):
    def __init__(self) -> None:
        self.attributes: set[str] = set()
        self.generic = False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Name) and node.value.value == "self":
            self.attributes.add(node.attr.value)
        self.generic |= node.attr.value in GENERIC

    def visit_Name(self, node: cst.Name) -> None:
        self.generic |= node.value in GENERIC


def _arithmetic_operands(node: cst.ClassDef) -> set[str]:
    """Attributes ``self.<name>`` that meet the inputs in a method other than ``__init__``: an
    operand of arithmetic, an argument of a torch function or of one of the module's own layers,
    also through a subscript, a method chain or a local alias (``h = self.h``, ``self.m[:, 0]``,
    ``torch.max(y, self.m)``, ``self.gate(h)``)."""
    return _operands(node)[0]


def _unmoved_operands(node: cst.ClassDef) -> set[str]:
    """Of those, the attributes met at least once without a move in their chain."""
    return _operands(node)[1]


def _operands(node: cst.ClassDef) -> tuple[set[str], set[str]]:
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    methods = {s.name.value for s in body if isinstance(s, cst.FunctionDef)}
    found: set[str] = set()
    unmoved: set[str] = set()
    for statement in body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value != "__init__":
            finder = _Operands(methods)
            walk(statement.body, finder)
            found |= finder.found
            unmoved |= finder.unmoved
    return found, unmoved


class _Operands(cst.CSTVisitor):
    def __init__(self, methods: set[str]) -> None:
        self.methods = methods
        """The class's own methods: one may move what it is handed (a layer does not)."""
        self.found: set[str] = set()
        self.unmoved: set[str] = set()
        """Of ``found``, those met at least once with no move in their chain (``lsm *
        self.w.unsqueeze(0)``, not ``self.w.to(x.device)``), also through an alias."""
        self.aliases: dict[str, str] = {}
        """Local names bound to an attribute (``ht_1 = self.ht_1``)."""
        self.moved_results: set[cst.Call] = set()
        """Calls whose result a move takes right away (``torch.clamp(...)`` of
        ``torch.clamp(...).to(dev)``)."""

    def attribute_of(self, expr: cst.BaseExpression) -> str | None:
        """The attribute ``expr`` reads: ``self.m[:, 0].unsqueeze(1)`` -> ``m``."""
        name = (dotted(chain_root(expr)) or "").removesuffix(".data")  # the same tensor
        if name.startswith("self.") and name.count(".") == 1:
            return name[5:]
        return self.aliases.get(name)

    def note(self, expr: cst.BaseExpression) -> None:
        attr = self.attribute_of(expr)
        if attr is not None:
            self.found.add(attr)
            if not _chain_moves(expr):
                self.unmoved.add(attr)

    def visit_Assign(self, node: cst.Assign) -> None:
        attr = None if _chain_moves(node.value) else self.attribute_of(node.value)
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                if attr is not None:
                    self.aliases[target.target.value] = attr
                else:
                    self.aliases.pop(target.target.value, None)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        # `self.log_alpha.exp() * (log_pis.cpu() + h).cpu()`: arithmetic the author keeps on
        # the host on purpose, where the attribute is
        if not _moved_to_host(node.right):
            self.note(node.left)
        if not _moved_to_host(node.left):
            self.note(node.right)

    def visit_Call(self, node: cst.Call) -> None:
        func = dotted(node.func) or ""
        if node in self.moved_results:
            return  # `torch.clamp(self.w.exp(), max=m).to(dev)`: moved before it meets anything
        method = node.func.attr.value if isinstance(node.func, cst.Attribute) else None
        if method in api.MOVE_METHODS and method != "cpu" and not converts_only(node):
            inner = node.func.value if isinstance(node.func, cst.Attribute) else None
            if isinstance(inner, cst.Call) and _of_one_tensor(inner):
                self.moved_results.add(inner)
        layer = func.startswith("self.") and func.count(".") == 1 and func[5:] not in self.methods
        if layer or _torch_call(node):
            for arg in node.args:
                self.note(arg.value)


def _placed_at_every_read(attr: str, methods: list[cst.FunctionDef], judged: set[str]) -> bool:
    """Every read of ``self.<attr>`` in the methods (``__init__`` aside) is placed where it is:
    moved before it meets anything (``torch.clamp(self.log_alpha.exp(), max=m).to(dev)``), met
    only by operands the code takes to the host itself (``self.log_alpha.exp() * (log_pi.cpu()
    + h).cpu()``), or stored in another attribute that is judged on its own or moved where it
    is read (``judged``: ``self.alpha = self.log_alpha.exp()``, then
    ``self.alpha.to(self.device)``). CQL's SAC temperature: a learnable scalar with its own
    optimizer, kept on the CPU on purpose."""
    reads = _Reads(attr, judged)
    for method in methods:
        if method.name.value != "__init__":
            walk(method.body, reads)
    return reads.count > 0 and reads.placed == reads.count


class _Reads(cst.CSTVisitor):
    def __init__(self, attr: str, judged: set[str]) -> None:
        self.attr = attr
        self.judged = judged
        self.stack: list[cst.CSTNode] = []
        self.count = 0
        self.placed = 0

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Attribute) and dotted(node) == f"self.{self.attr}":
            self.count += 1
            self.placed += self.is_placed(node)
        self.stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()

    def is_placed(self, read: cst.Attribute) -> bool:
        node: cst.CSTNode = read
        for parent in reversed(self.stack):
            call = parent if isinstance(parent, cst.Call) else None
            func = call.func if call is not None else None
            if call is not None and isinstance(func, cst.Attribute) and func is node:
                # a method of the chain: `.exp()`, `.to(dev)` (not `.to(x.dtype)`)
                if func.attr.value in api.MOVE_METHODS and not converts_only(call):
                    return func.attr.value != "cpu"
                node = parent
                continue
            if isinstance(parent, cst.Attribute) and parent.value is node:
                node = parent  # `....func` of a call above
                continue
            if isinstance(parent, cst.Arg) and parent.keyword is None:
                node = parent  # `torch.clamp(<it>, ...)`: the call above decides
                continue
            if isinstance(parent, cst.Call) and isinstance(node, cst.Arg):
                if parent.args and parent.args[0] is node and _torch_call(parent):
                    if not _of_one_tensor(parent):
                        return False  # `torch.matmul(self.w, h)`: it meets `h` right there
                    node = parent  # what the torch function makes from it
                    continue
                return False
            if isinstance(parent, cst.BinaryOperation):
                other = parent.right if parent.left is node else parent.left
                return _moved_to_host(other)
            if isinstance(parent, cst.UnaryOperation):
                node = parent
                continue
            if isinstance(parent, cst.AssignTarget | cst.Assign):
                return isinstance(parent, cst.Assign) and all(
                    (dotted(t.target) or "").removeprefix("self.") in self.judged
                    for t in parent.targets
                )
            return False
        return False


def _of_one_tensor(call: cst.Call) -> bool:
    """A call whose only tensor may be its first argument: the rest are numbers or keywords
    (``torch.clamp(t, min=0)``, ``t.exp()``), not a second operand (``torch.matmul(w, h)``)."""
    rest = [arg.value for arg in call.args[1:] if arg.keyword is None]
    return all(is_number_expression(value) for value in rest)


def _torch_call(call: cst.Call) -> bool:
    return (dotted(call.func) or "").startswith(("torch.", "F."))


def _moved_to_host(expr: cst.BaseExpression) -> bool:
    """``(...).cpu()``, ``x.detach().cpu()``: an operand the code takes to the host itself."""
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == "cpu"
    )


def _chain_moves(expr: cst.BaseExpression, moves: frozenset[str] = api.MOVE_METHODS) -> bool:
    """A method chain that moves what it starts from (``self.w.to(x.device).unsqueeze(0)``)."""
    while True:
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            if expr.func.attr.value == "cpu" and "cpu" not in moves:
                return False  # `....to(dev).cpu()`: back on the host
            if expr.func.attr.value in moves or _type_to_cuda(expr):
                return True
            expr = expr.func.value
        elif isinstance(expr, cst.Subscript):
            expr = expr.value
        else:
            return False
