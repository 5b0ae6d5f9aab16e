"""Frozen dataclasses back from JSON: one decoder for every model (stdlib only).

`from_json(cls, data)` is the inverse of `dataclasses.asdict` after a JSON round trip, typed
by the dataclass's own annotations: lists become the tuples the fields declare, nested objects
their dataclasses. One policy for every model:

- a key the class does not have is ignored: a newer writer (a child process, a cached result,
  a saved report) may add keys, and an older reader keeps working;
- a missing key takes the field's default, else None where the field allows None, else it is an
  error; so is a value of the wrong type. Errors are `DecodeError` (a ValueError) naming the
  path of the bad value, e.g. ``results[0].checks[2].verdict``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import cache
from typing import Any, Literal, TypeVar, Union

T = TypeVar("T")
_MISSING = dataclasses.MISSING


class DecodeError(ValueError):
    """JSON that does not fit the dataclass it should become."""


def from_json(cls: type[T], data: Any, path: str = "") -> T:
    if not isinstance(data, dict):
        raise DecodeError(f"{path or 'the document'}: expected an object, got {_kind(data)}")
    values: dict[str, Any] = {}
    model: Any = cls  # a dataclass: mypy cannot say so of a type[T]
    hints = _hints(model)
    for field in dataclasses.fields(model):
        where = f"{path}.{field.name}" if path else field.name
        if field.name in data:
            values[field.name] = _decode(hints[field.name], data[field.name], where)
        elif field.default is _MISSING and field.default_factory is _MISSING:
            if not _allows_none(hints[field.name]):
                raise DecodeError(f"{where}: missing")
            values[field.name] = None
    return cls(**values)


@cache
def _hints(cls: Any) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _decode(hint: Any, value: Any, path: str) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return value
    if dataclasses.is_dataclass(hint):
        return from_json(hint, value, path)  # type: ignore[arg-type]
    if origin in (Union, types.UnionType):
        return _decode_union(args, value, path)
    if origin is Literal:
        if value not in args:
            raise DecodeError(f"{path}: {value!r} is not one of {', '.join(map(repr, args))}")
        return value
    if origin in (tuple, list):
        if not isinstance(value, list | tuple):  # a tuple: asdict() not yet through JSON
            raise DecodeError(f"{path}: expected an array, got {_kind(value)}")
        if origin is tuple and args[-1] is not Ellipsis:  # tuple[A, B]: one hint per item
            if len(args) != len(value):
                raise DecodeError(f"{path}: expected {len(args)} items, got {len(value)}")
            item_hints = list(args)
        else:
            item_hints = [args[0]] * len(value)
        items = [
            _decode(h, v, f"{path}[{i}]")
            for i, (h, v) in enumerate(zip(item_hints, value, strict=True))
        ]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, dict):
            raise DecodeError(f"{path}: expected an object, got {_kind(value)}")
        return {k: _decode(args[1], v, f"{path}.{k}") for k, v in value.items()}
    return _scalar(hint, value, path)


def _decode_union(options: tuple[Any, ...], value: Any, path: str) -> Any:
    if value is None:
        if type(None) in options:
            return None
        raise DecodeError(f"{path}: null is not allowed")
    errors = []
    for option in (o for o in options if o is not type(None)):
        try:
            return _decode(option, value, path)
        except DecodeError as error:
            errors.append(error)
    raise errors[0]


def _scalar(hint: Any, value: Any, path: str) -> Any:
    # JSON has one number type: an int is a valid float; a bool is never a number.
    accepted = (int, float) if hint is float else (hint,)
    if (isinstance(value, bool) and hint is not bool) or not isinstance(value, accepted):
        raise DecodeError(f"{path}: expected {hint.__name__}, got {_kind(value)}")
    return value


def _allows_none(hint: Any) -> bool:
    return hint is Any or type(None) in typing.get_args(hint)


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), "a number" if isinstance(value, int | float) else "a value")
