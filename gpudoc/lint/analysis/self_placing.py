"""Module classes of other project files that place themselves, read from their text.

The walk learns that a class of the linted file places itself while it walks its
``__init__`` (placement.py). A class imported from another project file is not walked, so its
``__init__`` and the methods it calls are read here: ``self.cuda()``, ``self.net.to(device)``,
``self.net = self.net.cuda()``, or a device parameter handed on to another object that sets
itself up (``self.model.initialize(net, use_gpu=use_gpu)``, lpips' ``PerceptualLoss``).
"""

from __future__ import annotations

import builtins
import re

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.expressions import string_value
from gpudoc.lint.analysis.functions import argument_for, moves_anything
from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.analysis.parameterless import WEIGHTLESS, weightless_layer
from gpudoc.lint.visit import walk

DEVICE_PARAMETER = re.compile(r"device|gpu|cuda", re.I)
MOVES = frozenset({"to", "cuda"})
BUILTIN_NAMES = frozenset(dir(builtins))
MAX_DEPTH = 3
"""Helper methods followed from ``__init__`` (``__init__`` → ``setup`` → ``build``)."""


def places_itself(node: cst.ClassDef) -> bool:
    """``node``'s ``__init__``, or a method it calls on ``self``, moves the instance or its
    parts, or hands a device parameter of ``__init__`` to an attribute's method."""
    return _read_init(node)[0]


def placing_parameters(node: cst.ClassDef) -> frozenset[str]:
    """The device parameters of ``__init__`` that it (or a method it calls) moves what it
    builds to: ``Yolo_loss(device=device)`` whose ``__init__`` does
    ``self.grid = torch.arange(n).to(device)``. A call that passes one places the instance."""
    return _read_init(node)[1]


def moves_to_the_run_device(node: cst.ClassDef) -> bool:
    """``__init__`` ends with ``self.cuda()`` or ``self.to(args.cuda_device)``: every instance
    is on the device (skeleton-aware-networks' encoders)."""
    return _read_init(node)[3]


def passes_device(node: cst.ClassDef, parameters: frozenset[str], call: cst.Call) -> bool:
    """``call`` (of the class ``node``) passes one of ``parameters`` a value, not None."""
    init = _methods(node).get("__init__")
    if init is None or not parameters:
        return False
    for parameter in parameters:
        argument = argument_for(init, call, parameter, is_method=True)
        if argument is not None and dotted(argument.value) != "None":
            return True
    return False


def built_parts(node: cst.ClassDef) -> frozenset[str]:
    """The classes whose instances ``__init__`` keeps on ``self``: ``WordSequence`` of
    ``self.word_hidden = WordSequence(data)`` (a plain name called, the class being read
    where it is defined)."""
    init = _methods(node).get("__init__")
    if init is None:
        return frozenset()
    reader = _BuiltParts()
    walk(init.body, reader)
    return frozenset(reader.names)


def whole_instance_parameters(node: cst.ClassDef) -> frozenset[str]:
    """The device parameters of ``__init__`` that say where all of an instance's weights go:
    ``self.to(device)``, or every layer ``__init__`` keeps on ``self`` moved there
    (``self.network = nn.Sequential(...).to(device)``; weightless layers may stay). A call
    that passes the run's device for one builds an instance on the device."""
    init = _methods(node).get("__init__")
    if init is None:
        return frozenset()
    reader = _MovedParts({p.name.value for p in (*init.params.params, *init.params.kwonly_params)})
    walk(init.body, reader)
    return frozenset(_read_init(node)[2]) | reader.moved_to()


class _MovedParts(cst.CSTVisitor):
    """The layers ``__init__`` keeps on ``self``, and the parameter each is moved with."""

    def __init__(self, parameters: set[str]) -> None:
        self.aliases = {name: name for name in parameters if DEVICE_PARAMETER.search(name)}
        self.parts: dict[str, str | None] = {}
        """``self.<attr>`` built from a call -> the device parameter it was moved with."""

    def moved_to(self) -> frozenset[str]:
        movers = set(self.parts.values())
        if len(movers) != 1 or None in movers:
            return frozenset()
        return frozenset(p for p in movers if p is not None)

    def _mover(self, call: cst.Call) -> str | None:
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in MOVES or not call.args:
            return None
        return self.aliases.get(dotted(call.args[0].value) or "")

    def visit_Assign(self, node: cst.Assign) -> None:
        targets = [dotted(t.target) or "" for t in node.targets]
        value = node.value
        parameter = self.aliases.get(dotted(value) or "")
        if parameter is not None:  # `self.device = device`
            self.aliases.update((target, parameter) for target in targets if target)
            return
        if not isinstance(value, cst.Call) or weightless_layer(value) or _builds_no_layer(value):
            return
        for target in targets:
            if target.startswith("self.") and target.count(".") == 1:
                self.parts[target] = self._mover(value)

    def visit_Call(self, node: cst.Call) -> None:
        """``self.net.to(device)`` as a statement of its own."""
        func = node.func
        if isinstance(func, cst.Attribute) and (dotted(func.value) or "") in self.parts:
            mover = self._mover(node)
            if mover is not None:
                self.parts[dotted(func.value) or ""] = mover


def _builds_no_layer(call: cst.Call) -> bool:
    """``len(vocab)``, ``torch.zeros(n)``, ``np.ones(k)``, ``Dropout(p)``: not a layer with
    weights."""
    name = dotted(call.func) or ""
    if isinstance(call.func, cst.Name):  # `Dropout(0.1)` of `from torch.nn import Dropout`
        return name in BUILTIN_NAMES or bool(WEIGHTLESS.fullmatch(name))
    prefix, _, last = name.rpartition(".")
    return prefix in ("torch", "np", "numpy", "math") and last[:1].islower()


class _BuiltParts(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        on_self = any((dotted(t.target) or "").startswith("self.") for t in node.targets)
        if on_self and isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
            self.names.add(value.func.value)


def _methods(node: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    return {s.name.value: s for s in body if isinstance(s, cst.FunctionDef)}


_Reading = tuple[bool, frozenset[str], frozenset[str], bool]
"""What ``_read_init`` reads of a class."""
_read: dict[int, tuple[cst.ClassDef, _Reading]] = {}
MAX_READ = 512
"""Classes remembered: a bound, since each entry keeps its tree alive (``--fix`` re-parses a
big file once per round)."""


def on_gpu_by_default(node: cst.ClassDef, call: cst.Call) -> bool:
    """``Conv_Model(...)`` whose ``__init__(self, ..., device="cuda")`` does ``self.to(device)``,
    and the call leaves ``device`` out or gives it a CUDA literal: the instance is on the GPU."""
    init = _methods(node).get("__init__")
    moving = _read_init(node)[2]
    if init is None or not moving or any(arg.star for arg in call.args):
        return False  # `Net(**options)` may give any device
    for param in (*init.params.params, *init.params.kwonly_params):
        if param.name.value not in moving or param.default is None:
            continue
        if not api.CUDA_LITERAL.match(string_value(param.default) or ""):
            continue
        argument = argument_for(init, call, param.name.value, is_method=True)
        given = string_value(argument.value) if argument is not None else None
        if argument is None or api.CUDA_LITERAL.match(given or ""):
            return True
    return False


def _read_init(node: cst.ClassDef) -> _Reading:
    """(moves itself, placing parameters, the parameters it moves ``self`` to, moves ``self``
    to the run's device), read once per class definition."""
    cached = _read.get(id(node))
    if cached is not None and cached[0] is node:
        return cached[1]
    methods = _methods(node)
    init = methods.get("__init__")
    result: _Reading = (False, frozenset(), frozenset(), False)
    if init is not None:
        device_parameters = {
            param.name.value
            for param in (*init.params.params, *init.params.kwonly_params)
            if DEVICE_PARAMETER.search(param.name.value)
        }
        parameters = {p.name.value for p in (*init.params.params, *init.params.kwonly_params)}
        reader = _SelfMoves(device_parameters, parameters)
        seen: set[str] = set()
        pending = [("__init__", 0)]
        while pending:
            name, depth = pending.pop()
            if name in seen or name not in methods:
                continue
            seen.add(name)
            reader.self_calls = []
            walk(methods[name].body, reader)
            if depth < MAX_DEPTH:
                pending.extend((called, depth + 1) for called in reader.self_calls)
        # `self.CUDA = CUDA`, then `if self.CUDA: target = target.cuda()` in a method the
        # forward calls: the class moves its own tensors where the flag says (TextGAN's GANLoss)
        flags = {alias: p for alias, p in reader.aliases.items() if alias.startswith("self.")}
        if flags:
            guarded = _FlagMoves(flags)
            for name, method in methods.items():
                if name not in seen:
                    walk(method.body, guarded)
            reader.placing |= guarded.placing
        result = (
            reader.moves,
            frozenset(reader.placing),
            frozenset(reader.moves_self),
            reader.on_device,
        )
    if len(_read) >= MAX_READ:
        _read.clear()
    _read[id(node)] = (node, result)
    return result


class _SelfMoves(cst.CSTVisitor):
    def __init__(self, device_parameters: set[str], init_parameters: set[str]) -> None:
        self.device_parameters = device_parameters
        self.aliases = {name: name for name in device_parameters}
        """``self.device`` -> ``device`` once ``self.device = device``."""
        self.moves = False
        self.placing: set[str] = set()
        self.moves_self: set[str] = set()
        """Device parameters of ``self.to(device)``: the instance goes where they say."""
        self.self_calls: list[str] = []
        self.init_parameters = init_parameters
        """All of ``__init__``'s parameters (``args`` of ``self.to(args.cuda_device)``)."""
        self.on_device = False
        """``self.cuda()`` or ``self.to(args.device)``: the whole instance goes to the run's
        device (a GPU where there is one)."""

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        self.note_placing(node)
        if not isinstance(func, cst.Attribute):
            return
        receiver = dotted(func.value) or ""
        if receiver != "self" and not receiver.startswith("self."):
            return
        method = func.attr.value
        if method in MOVES and not _to_cpu(node):
            self.moves = True
            if receiver == "self":
                parameters = [self.aliases.get(dotted(arg.value) or "") for arg in node.args]
                self.moves_self.update(p for p in parameters if p is not None)
                # `self.cuda()`, `self.to(args.cuda_device)`: the run's device, not a parameter's
                first = node.args[0].value if node.args else None
                settings = first is not None and _settings_device(first, self.init_parameters)
                if not any(parameters) and (method == "cuda" or settings):
                    self.on_device = True
        elif receiver == "self":
            self.self_calls.append(method)
        elif any(dotted(arg.value) in self.device_parameters for arg in node.args):
            self.moves = True  # `self.model.initialize(net, use_gpu=use_gpu)`

    def note_placing(self, node: cst.Call) -> None:
        """``t.to(device)``, ``.cuda(device)``, ``torch.zeros(n, device=device)``."""
        func = node.func
        moving = isinstance(func, cst.Attribute) and func.attr.value in MOVES
        for arg in node.args:
            if moving or (arg.keyword is not None and arg.keyword.value == "device"):
                parameter = self.aliases.get(dotted(arg.value) or "")
                if parameter is not None:
                    self.placing.add(parameter)

    def visit_Assign(self, node: cst.Assign) -> None:
        """``self.net = Net().cuda()``: an attribute assigned moved; ``self.device = device``:
        an alias of the parameter."""
        value = node.value
        targets = [dotted(t.target) or "" for t in node.targets]
        on_self = any(target.startswith("self.") for target in targets)
        if on_self and isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            self.moves |= value.func.attr.value in MOVES and not _to_cpu(value)
        parameter = self.aliases.get(dotted(value) or "")
        if parameter is not None:
            self.aliases.update((target, parameter) for target in targets if target)


class _FlagMoves(cst.CSTVisitor):
    """The device flags kept on ``self`` that guard a move in a method (``if self.CUDA:
    t = t.cuda()``, ``t.cuda() if self.gpu else t``): the parameters they came from."""

    def __init__(self, flags: dict[str, str]) -> None:
        self.flags = flags
        self.placing: set[str] = set()

    def visit_If(self, node: cst.If) -> None:
        self._guarded(node.test, node.body)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._guarded(node.test, node.body)

    def _guarded(self, test: cst.BaseExpression, body: cst.CSTNode) -> None:
        parameter = self.flags.get(dotted(test) or "")
        if parameter is not None and parameter not in self.placing and moves_anything(body):
            self.placing.add(parameter)


def _settings_device(target: cst.BaseExpression, parameters: set[str]) -> bool:
    """``args.cuda_device``, ``opt.device``: a device the run's settings hold (an attribute of a
    parameter or global, not ``self``); or a CUDA literal."""
    text = string_value(target)
    if text is not None:
        return bool(api.CUDA_LITERAL.match(text))
    name = dotted(target) or ""
    root, _, attribute = name.partition(".")
    return (
        bool(attribute)
        and root != "self"
        and "." not in attribute
        and (root in parameters or root in ("args", "opt", "opts", "cfg", "config", "hparams"))
    )


def _to_cpu(node: cst.Call) -> bool:
    first = node.args[0].value if node.args else None
    return isinstance(first, cst.SimpleString) and first.value.strip("\"'") == "cpu"
