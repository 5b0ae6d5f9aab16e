"""Calls of Python's builtins: what ``enumerate(loader)``, ``next(it)``, ``len(x)`` return."""

from __future__ import annotations

from gpudoc.lint.analysis.values import (
    SCALAR,
    UNKNOWN,
    Kind,
    Place,
    Value,
    element_of,
    join_places,
)

BUILTINS = frozenset(
    [
        "print",
        "len",
        "isinstance",
        "issubclass",
        "str",
        "repr",
        "type",
        "id",
        "sum",
        "list",
        "tuple",
        "dict",
        "set",
        "sorted",
        "enumerate",
        "zip",
        "iter",
        "next",
        "range",
        "hasattr",
        "getattr",
        "setattr",
        "vars",
        "dir",
        "hash",
        "min",
        "max",
        "any",
        "all",
    ]
)
ITERATION_BUILTINS = frozenset({"iter", "tqdm", "list", "tuple", "sorted", "reversed", "trange"})


def builtin_value(name: str, args: list[Value]) -> Value:
    """What a call of a Python builtin (or tqdm) returns, from its arguments' values."""
    if not args:
        return UNKNOWN
    if name == "enumerate":
        if args[0].kind is not Kind.LOADER and args[0].kind is not Kind.TENSOR:
            return UNKNOWN
        # each element (a generator's, or a batch) with its index, a Python int
        pairs = Value(items=(SCALAR, element_of(args[0])))
        return Value(
            Kind.LOADER, args[0].place, source="enumerate", by_name=args[0].by_name, element=pairs
        )
    if name == "zip":
        if any(arg.kind is Kind.LOADER for arg in args):
            return Value(Kind.LOADER, join_places([a.place for a in args]), source="zip")
        if any(arg.kind is Kind.TENSOR for arg in args):
            # `for score, index in zip(values, indices)`: a row of each tensor, where it is
            rows = Value(items=tuple(element_of(arg) for arg in args))
            return Value(Kind.LOADER, join_places([a.place for a in args]), element=rows)
        return UNKNOWN
    if name == "next":
        return element_of(args[0])
    if name in ITERATION_BUILTINS:
        first = args[0]
        if first.kind is Kind.LOADER or first.is_tensorish:
            return first
        if first.kind is Kind.PARAMS and first.items is None and name in ("list", "tuple"):
            return Value(Kind.BATCH, first.place)  # `list(model.parameters())[0]`: where it is
    if name == "type" and len(args) == 1 and args[0].is_tensorish:
        # `type(img)` is `torch.Tensor` on any device: `x.type(type(img))` converts x to the
        # default tensor type, a CPU one (a multitask-CycleGAN's batches went back to the host)
        return Value(Kind.TYPENAME, Place.HOST)
    if name in ("len", "int", "float", "range", "round", "bool", "abs"):
        return SCALAR
    if name == "dict" and args[0].is_tensorish:
        return args[0]
    return UNKNOWN
