"""Where a move or a device argument sends things, and the CUDA the file names on the way."""

from __future__ import annotations

import re
from collections.abc import Callable

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import CudaEvent
from gpudoc.lint.analysis.expressions import string_value
from gpudoc.lint.analysis.model import SemanticModel
from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.analysis.sharing import move_parts
from gpudoc.lint.analysis.values import UNKNOWN, Kind, Place, Value, host_module


class Placement:
    """``x.to(dev)``, ``.cuda()``, ``device=...``: the place they give, noted in the file's
    flags (it places things, names CUDA, picks a device per rank)."""

    def __init__(self, model: SemanticModel) -> None:
        self.model = model

    def forget(self, node: cst.Call, args: list[Value], host_modules: bool = True) -> None:
        """A callee may move the modules it is given in place: the host ones to a device
        (`place(model, device)`), and placed ones back to the CPU when it is given the CPU
        (PyTorch-RL's `to_device(torch.device("cpu"), policy)` before a NumPy rollout)."""
        to_cpu = any(value.kind is Kind.DEVICE and value.cpu_device for value in args)
        for arg, value in zip(node.args, args, strict=True):
            name = dotted(arg.value)
            placed = value.kind is Kind.MODULE and value.place is Place.DEVICE
            host = host_modules and host_module(value)
            if name is not None and (host or (to_cpu and placed)):
                self.model.scope.env[name] = value.with_place(Place.UNKNOWN)

    def note_self_placing(self) -> None:
        """``self.to(device)`` / ``self.cuda()`` / ``self.net.to(device)`` in ``__init__`` (or a
        method it calls): the class places itself, or the parts that need it."""
        cls = self.model.scope.module_class
        if cls is not None and self.model.in_init:
            cls.places_itself = True

    def note_cuda(self, node: cst.CSTNode, text: str) -> None:
        self.model.flags.device_notion = True
        # `"cuda:0"`, `.cuda()`, `torch.cuda.FloatTensor(...)`: each allocates on the GPU
        if api.CUDA_LITERAL.match(text) or text == ".cuda()" or text.startswith("torch.cuda."):
            self.model.scope.cuda_initialised = True
            self.model.note_cuda_on_cpu_path()
            if self.model.bus.wants("cuda"):
                self.model.emit("cuda", CudaEvent(node, text))

    def moved(self, node: cst.Call, receiver: Value, method: str, args: list[Value]) -> Value:
        if receiver.kind is Kind.DEVICE:
            # torch.device has no .to()/.cuda(): whatever this receiver really is, the result is
            # not a device, and a fix must never move tensors "to" it.
            return UNKNOWN
        if _empty_container(node.func):
            # `nn.Sequential().cuda()`: nothing to move yet; the layers added later stay put
            return receiver
        if method == "cuda":
            if not _holds_no_tensor(receiver):
                # `nn.BCELoss().cuda()` moves no tensor: it needs no CUDA on a CPU-only host
                self.note_cuda(node, ".cuda()")
            self.model.flags.places = True
            # another file's helper (`z.cuda(current_device)` in a model's `sample`, given 0)
            # names its parameter, not this script's ranks
            if self.model.home_module is None:
                self.model.flags.per_rank_device |= _names_a_rank_device(node)
            place = Place.DEVICE
        elif method == "cpu":
            place = Place.HOST
        else:
            place = self.target_place(node, args)
        if place is Place.DEVICE:
            self.model.note_device_data()
        if place is Place.UNKNOWN:
            return receiver if receiver.kind is not Kind.UNKNOWN else UNKNOWN
        if receiver.kind is Kind.UNKNOWN:
            return Value(place=place)
        if receiver.kind is Kind.LOADER:
            return receiver
        if place is Place.DEVICE and receiver.kind is Kind.MODULE:
            move_parts(self.model, receiver.origin)
        return receiver.with_place(place)

    def target_place(self, node: cst.Call, values: list[Value]) -> Place:
        """Where ``x.to(...)`` sends x: HOST, DEVICE, or UNKNOWN for a dtype-only conversion."""
        for arg, value in zip(node.args, values, strict=True):
            name = arg.keyword.value if arg.keyword is not None else None
            if name in ("dtype", "non_blocking", "copy", "memory_format"):
                continue
            place = self.place_of_target(arg.value, value)
            if place is not None:
                return place
        return Place.UNKNOWN

    def place_of_target(self, expr: cst.BaseExpression, value: Value) -> Place | None:
        if value.kind is Kind.NONE:  # `device=None`: no place of its own
            return None
        text = string_value(expr)
        if text is not None:
            if api.CPU_LITERAL.match(text):
                return Place.HOST
            self.model.flags.places = True
            self.note_cuda(expr, text)
            return Place.DEVICE
        if formatted_cuda(expr):  # `.to(f"cuda:{rank}")`, `.to("cuda:{}".format(gpu))`
            self.model.flags.places = True
            self.model.flags.per_rank_device |= per_process_cuda(expr, formatted_cuda)
            return Place.DEVICE
        if value.kind is Kind.DEVICE:
            if value.cpu_device:
                return Place.HOST
            # `x.to(y.device)` follows a tensor; `x.to(self.device)` names the script's device
            tensor_device = isinstance(expr, cst.Attribute) and expr.attr.value == "device"
            if tensor_device and isinstance(expr, cst.Attribute) and _settings(expr.value):
                tensor_device = False  # `config.device`, `args.device`: the run's settings
            # an object's own device: a module's (Lightning's), or a helper class's setting
            # or property (`next(self.parameters()).device` of a mixin)
            own = dotted(expr) == "self.device"
            tensor_device = tensor_device and not own
            if tensor_device and value.place is Place.MIXED:
                # `torch.hann_window(n).to(audio.device)` where `audio` was moved on some paths
                # only: the window is wherever the signal is, on every path
                return Place.MIXED
            if not tensor_device or self.model.scope.lookup(dotted(expr) or "") is not None:
                self.model.flags.places = True
            if not tensor_device and isinstance(expr, cst.Attribute):
                # `x.to(config.device)`: the name a fix moves other tensors to, in this scope
                self.model.scope.env.setdefault(dotted(expr) or "", value)
            return Place.DEVICE
        if value.is_tensorish or value.kind is Kind.MODULE:
            return value.place
        if isinstance(expr, cst.Integer):
            self.model.flags.places = True
            return Place.DEVICE
        if isinstance(expr, cst.Subscript) and DEVICE_LIST.search(dotted(expr.value) or ""):
            self.model.flags.places = True  # `net.to(gpu_ids[0])`: the first of the GPUs given
            return Place.DEVICE
        if _tensor_device_index(expr):
            return Place.DEVICE  # `w.to(error.get_device())`: wherever `error` is, as `.device`
        if isinstance(expr, cst.Call) and not expr.args:
            # `x.to(dist.get_rank())`, `.to(torch.cuda.current_device())`: this process's GPU
            called = (dotted(expr.func) or "").rsplit(".", 1)[-1]
            if RANK_CALL.match(called):
                self.model.flags.places = True
                self.model.flags.per_rank_device |= "rank" in called.lower()
                return Place.DEVICE
        name = dotted(expr) or ""
        last = name.rsplit(".", 1)[-1]
        if "dtype" in last.lower() or (self.model.imports.qualify(expr) or "").startswith("torch."):
            return None
        if api.DEVICE_NAME.search(last):
            self.model.flags.places = True
            self.model.flags.per_rank_device |= "rank" in last or "gpu" in last
            return Place.DEVICE
        return None

    def note_cuda_assignment(self, value: cst.BaseExpression) -> None:
        """``device = "cuda"``: a hard-coded device (an IfExp around it is the fallback)."""
        text = string_value(value)
        if text is not None and api.CUDA_LITERAL.match(text):
            self.note_cuda(value, text)
        if per_process_cuda(value, formatted_cuda):
            self.model.flags.per_rank_device = True  # f"cuda:{local_rank}"
            self.model.flags.device_notion = True


def _tensor_device_index(expr: cst.BaseExpression) -> bool:
    """``error.get_device()``: the GPU index of a tensor (-1 on the CPU, where ``.to(-1)``
    would fail: only code that runs on the GPU asks it)."""
    func = expr.func if isinstance(expr, cst.Call) else None
    return (
        isinstance(expr, cst.Call)
        and not expr.args
        and isinstance(func, cst.Attribute)
        and func.attr.value == "get_device"
        and (dotted(func.value) or "").partition(".")[0] != "torch"
    )


EMPTY_CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})


def _empty_container(func: cst.BaseExpression) -> bool:
    """``nn.Sequential()`` of ``nn.Sequential().cuda()``: a container built with no parts."""
    if not isinstance(func, cst.Attribute) or not isinstance(func.value, cst.Call):
        return False
    built = func.value
    name = (dotted(built.func) or "").rsplit(".", 1)[-1]
    return name in EMPTY_CONTAINERS and not built.args


DEVICE_LIST = re.compile(r"(^|[._])(gpu_ids|gpus|device_ids|devices|cuda_ids)$", re.I)
"""Names of the list of GPUs a run was given (``opt.gpu_ids``): an element is one of them."""

RANK_CALL = re.compile(r"^(get_)?(local_|global_)?rank$|^current_device$", re.I)
"""Calls that answer this process's GPU index: ``dist.get_rank()``, ``comm.get_local_rank()``."""

SETTINGS = re.compile(
    r"^(?:args|arguments|config|configs|cfg|conf|opt|opts|options|hparams|hp|params|settings)$"
)
"""Names of the object a run's settings live in (argparse's namespace, a config)."""


def _settings(base: cst.BaseExpression) -> bool:
    """``config`` of ``config.device``, also ``self.args``: settings, not a tensor."""
    name = (dotted(base) or "").rsplit(".", 1)[-1]
    return SETTINGS.match(name) is not None


def formatted_cuda(node: cst.BaseExpression) -> bool:
    """``f"cuda:{rank}"``, ``"cuda:{}".format(rank)``, ``"cuda:%d" % rank``: a CUDA device
    string built per process."""
    if isinstance(node, cst.FormattedString):
        return any(
            isinstance(part, cst.FormattedStringText) and "cuda" in part.value
            for part in node.parts
        )
    func = node.func if isinstance(node, cst.Call) else None
    if isinstance(func, cst.Attribute) and func.attr.value == "format":
        return "cuda" in (string_value(func.value) or "")
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
        return "cuda" in (string_value(node.left) or "")
    return False


def per_process_cuda(node: cst.BaseExpression, built: Callable[[cst.BaseExpression], bool]) -> bool:
    """A device string ``built`` per process (``f"cuda:{rank}"``) that is not the first of the
    GPUs given, also as an arm of a fallback (``f"cuda:{rank}" if cuda else "cpu"``)."""
    if isinstance(node, cst.IfExp):
        return per_process_cuda(node.body, built) or per_process_cuda(node.orelse, built)
    return built(node) and not first_listed_gpu(node)


def first_listed_gpu(node: cst.BaseExpression) -> bool:
    """``f"cuda:{gpu_ids[0]}"``, ``"cuda:{}".format(self.gpu_ids[0])``: the first of the GPUs
    the run was given, one device for the whole run, not one per process."""
    if isinstance(node, cst.FormattedString):
        values = [p.expression for p in node.parts if isinstance(p, cst.FormattedStringExpression)]
    elif isinstance(node, cst.Call):
        values = [arg.value for arg in node.args]
    elif isinstance(node, cst.BinaryOperation):
        values = [node.right]
    else:
        return False
    return len(values) == 1 and _first_of_list(values[0])


def _first_of_list(value: cst.BaseExpression) -> bool:
    if not isinstance(value, cst.Subscript) or len(value.slice) != 1:
        return False
    index = value.slice[0].slice
    if not isinstance(index, cst.Index) or not isinstance(index.value, cst.Integer):
        return False
    return index.value.value == "0" and bool(DEVICE_LIST.search(dotted(value.value) or ""))


def _names_a_rank_device(call: cst.Call) -> bool:
    """``.cuda(args.gpu)``, ``.cuda(local_rank)``: each process its own GPU. ``.cuda(0)`` or
    ``.cuda(self.cuda_index)`` is one GPU chosen for every run, hard-coded like ``.cuda()``."""
    if not call.args:
        return False
    name = (dotted(call.args[0].value) or "").rsplit(".", 1)[-1].lower()
    return any(word in name for word in ("rank", "gpu", "dev", "local"))


def _holds_no_tensor(receiver: Value) -> bool:
    """A module without weights built with no tensor argument (``nn.CrossEntropyLoss()``,
    ``nn.L1Loss(reduction="sum")``; not ``nn.CrossEntropyLoss(weight=w)``): moving it touches
    no tensor."""
    origin = receiver.origin
    if receiver.kind is not Kind.MODULE or receiver.weighted or not isinstance(origin, cst.Call):
        return False
    for arg in origin.args:
        literal = isinstance(arg.value, cst.Integer | cst.Float | cst.SimpleString) or (
            dotted(arg.value) in ("None", "True", "False")
        )
        if arg.star or (arg.keyword is None and not literal):
            return False
        if arg.keyword is not None and arg.keyword.value in ("weight", "pos_weight"):
            return False
    return True
