"""Calls of the file's own functions: arguments bound to parameters, and what a walk is for.

The walk (bodies.py) walks a function's body where it is called, with the arguments' values,
so a batch handed to ``evaluate(model, loader)`` or a model built by ``build_model()`` keeps its
place across the call. These helpers are the syntax half of that: which parameter each argument
binds, which caller names they were, and which methods a class's own methods call.
"""

from __future__ import annotations

from typing import NamedTuple

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.flow import guard_polarity, name_polarity
from gpudoc.lint.analysis.names import dotted, return_values
from gpudoc.lint.analysis.values import INSTANCE, Kind, Value
from gpudoc.lint.visit import walk


class FunctionSyntax(NamedTuple):
    local_names: frozenset[str]
    """Every name local to the function: parameters and what its body binds."""
    moved: bool
    """Every ``return`` hands back a moved tensor (``returns_moved``)."""


def _positional_params(params: cst.Parameters, is_method: bool) -> list[cst.Param]:
    positional = [*params.posonly_params, *params.params]
    return positional[1:] if is_method and positional else positional


def bind_arguments(
    params: cst.Parameters, call: cst.Call, values: list[Value], is_method: bool
) -> dict[str, Value]:
    """Parameter name -> the value the call passes for it (``*args`` stops the positional
    binding: after it, which parameter gets what is unknown)."""
    positional = _positional_params(params, is_method)
    named = {p.name.value for p in [*positional, *params.kwonly_params]}
    bound: dict[str, Value] = {}
    index = 0
    for arg, value in zip(call.args, values, strict=True):
        if arg.star:
            if arg.star == "*":
                index = len(positional)
            continue
        name = None
        if arg.keyword is not None:
            name = arg.keyword.value if arg.keyword.value in named else None
        elif index < len(positional):
            name = positional[index].name.value
            index += 1
        if name is not None:
            bound[name] = (
                _none_device(name, arg.value)
                or _off_flag(name, arg.value)
                or _passed_flag(name, arg.value)
                or value
            )
    if any(arg.star == "**" for arg in call.args):
        return bound  # `generate(decoder, **vars(args))`: any parameter left may come from it
    for param in [*positional, *params.kwonly_params]:
        name = param.name.value
        if name not in bound and param.default is not None:
            default = (
                _device_default(name, param.default)
                or _off_flag(name, param.default)
                or _left_none(param.default)
            )
            if default is not None:
                bound[name] = default
    return bound


OFF_FLAG = "off-flag"
"""``Value.source`` of a flag that is ``False`` for this call (``cuda=False`` or
``zero_triu=False`` left out): the body's ``if cuda:`` arm does not run (compound.walk_if)."""


def _off_flag(name: str, expr: cst.BaseExpression) -> Value | None:
    off = isinstance(expr, cst.Name) and expr.value == "False"
    return Value(Kind.SCALAR, source=OFF_FLAG) if off else None


DEVICE_FLAG = "device-flag:"
"""The source of a parameter given a device switch (``use_prefetcher=not args.no_cuda``),
then ``gpu`` or ``cpu``: which path its truth stands for."""


def _passed_flag(name: str, expr: cst.BaseExpression) -> Value | None:
    """``create_loader(..., use_prefetcher=not args.no_cuda)``: a parameter whose name says
    nothing of the device takes a device switch; ``if use_prefetcher:`` in the body is a
    guard."""
    switch = expr.expression if isinstance(expr, cst.UnaryOperation) else expr
    if not isinstance(switch, cst.Name | cst.Attribute):
        return None  # `torch.rand(4, device="cuda")` names CUDA but is no switch
    if name_polarity(name) is not None:
        return None  # `cuda=args.cuda`: the name says it already
    polarity = guard_polarity(expr)
    if polarity not in ("gpu", "cpu"):
        return None
    return Value(Kind.SCALAR, source=DEVICE_FLAG + polarity)


def _left_none(default: cst.BaseExpression) -> Value | None:
    """``G_encoder=None`` left out by the call: None here, not a module its name suggests
    (``if G_encoder is None: G_encoder = self.encoder``)."""
    none = isinstance(default, cst.Name) and default.value == "None"
    return Value(Kind.NONE) if none else None


def _none_device(name: str, expr: cst.BaseExpression) -> Value | None:
    """``None`` for a device parameter: tensors made with it are on the host (the default
    device), and ``.to(device)`` moves nothing."""
    none = isinstance(expr, cst.Name) and expr.value == "None"
    return Value(Kind.NONE) if none and api.DEVICE_NAME.search(name) else None


def _device_default(name: str, default: cst.BaseExpression) -> Value | None:
    """``device="cpu"`` left out by the call: the body runs on the CPU, whatever the
    parameter's name suggests; ``device=None``: see ``_none_device``."""
    none = _none_device(name, default)
    if none is not None:
        return none
    if isinstance(default, cst.Call) and dotted(default.func) in ("torch.device", "device"):
        # `device=torch.device('cpu')` (d2l's evaluate_accuracy)
        first = default.args[0].value if default.args else None
        default = first if first is not None else default
    text = default.evaluated_value if isinstance(default, cst.SimpleString) else None
    if not isinstance(text, str):
        return None
    if api.CPU_LITERAL.match(text):
        return Value(Kind.DEVICE, cpu_device=True)
    if api.DEVICE_LITERAL.match(text):
        return Value(Kind.DEVICE)
    return None


def argument_for(
    function: cst.FunctionDef, call: cst.Call, param: str, is_method: bool
) -> cst.Arg | None:
    """The argument of ``call`` that binds ``param`` (None after a ``*args``)."""
    positional = _positional_params(function.params, is_method)
    index = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is not None:
            if arg.keyword.value == param:
                return arg
        elif index < len(positional):
            if positional[index].name.value == param:
                return arg
            index += 1
    return None


def argument_names(
    function: cst.FunctionDef | None, call: cst.Call, is_method: bool
) -> dict[str, str]:
    """Parameter name -> the caller's plain (dotted) name passed for it (a method's ``self``
    is not among the call's arguments)."""
    if function is None:
        return {}
    positional = _positional_params(function.params, is_method)
    names: dict[str, str] = {}
    index = 0
    for arg in call.args:
        if arg.star:
            break
        name = dotted(arg.value)
        if arg.keyword is not None:
            if name is not None:
                names[arg.keyword.value] = name
        elif index < len(positional):
            if name is not None:
                names[positional[index].name.value] = name
            index += 1
    return names


def argument_shapes(values: list[Value]) -> tuple[object, ...]:
    """What a walk of a body depends on in its arguments: calls with equal shapes share one."""
    return tuple(
        (v.kind, v.place, v.weighted, v.wrapper, v.managed, v.stale, v.cpu_device, _instance(v))
        for v in values
    )


def _instance(value: Value) -> str:
    """The class of an instance of the project's (``instance:Trainer``): its methods' walks
    depend on it."""
    return value.source if value.source.startswith(INSTANCE) else ""


MOVES = frozenset({"to", "cuda", "type_as"})


def returns_moved(function: cst.FunctionDef) -> bool:
    """Every ``return`` of ``function`` hands back a moved tensor (``return t.to(device)``):
    what it built on the host on the way is its own business (GPD901's, a performance one)."""
    values = return_values(function)
    return bool(values) and all(
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in MOVES
        for value in values
    )


class _Moves(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        self.found |= isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda")


def moves_anything(node: cst.CSTNode) -> bool:
    """``.to(...)`` or ``.cuda()`` anywhere in ``node`` (a class not walked here)."""
    visitor = _Moves()
    walk(node, visitor)
    return visitor.found
