"""Modules that share their weights: names bound to one object, and wrappers of the caller's
modules. ``.to()`` and ``.cuda()`` move a module in place, so moving one of them moves the
others: ``policy = model; policy.to(device)`` moves ``model``, and ``wrapped = Wrapper(model);
model.cuda()`` moves ``wrapped`` when ``model``'s are all the weights it holds.

A module is told apart by ``Value.instance``, the statement that first bound it to a name;
a plain name bound to it later (``policy = model``) keeps it. Two modules built by one
statement (``net = make()`` twice) are two instances: a call's result gets a new one."""

from __future__ import annotations

import libcst as cst

from gpudoc.lint.analysis.model import SemanticModel
from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.analysis.values import Kind, Place, Value, replace


def move_module(model: SemanticModel, name: str, moved: Value) -> None:
    """``name`` now holds ``moved``, a module moved in place: so do its other names, the
    modules it wraps, and the wrappers whose weights are all on the device now."""
    model.assign_name(name, moved)
    instance = moved.instance
    if moved.kind is not Kind.MODULE or moved.place is not Place.DEVICE:
        return
    move_parts(model, moved.origin)  # moved by a helper: `train_network(container, device)`
    env = model.scope.env
    for other, held in list(env.items()):
        if other == name or held.kind is not Kind.MODULE or held.place is Place.DEVICE:
            continue
        alias = instance is not None and held.instance is instance
        wrapped = held.instance is not None and held.instance in moved.parts
        wrapper = instance is not None and instance in held.parts and _all_placed(env, held)
        if alias:
            env[other] = replace(moved, binding=held.binding)
        elif wrapped or wrapper:
            env[other] = held.with_place(Place.DEVICE)


def _all_placed(env: dict[str, Value], wrapper: Value) -> bool:
    """Every module ``wrapper`` holds is on the device (under some name of this scope)."""
    placed = {
        held.instance
        for held in env.values()
        if held.kind is Kind.MODULE and held.place is Place.DEVICE and held.instance is not None
    }
    return all(part in placed for part in wrapper.parts)


def wrapper_place(parts: list[Value]) -> Place:
    """Where a module lives whose only weights are ``parts``, the caller's modules."""
    places = {part.place for part in parts}
    if places == {Place.DEVICE}:
        return Place.DEVICE
    return Place.HOST if Place.HOST in places else Place.UNKNOWN


def move_parts(model: SemanticModel, origin: cst.CSTNode | None) -> None:
    """``Model(Encoder=encoder, Decoder=decoder).to(device)``: the modules handed to the
    constructor are its submodules, moved in place with it (the same objects)."""
    if not isinstance(origin, cst.Call):
        return
    for arg in origin.args:
        name = dotted(arg.value)
        held = model.scope.lookup(name) if name is not None else None
        if held is not None and held.kind is Kind.MODULE and held.place is Place.HOST:
            model.assign_name(name or "", held.with_place(Place.DEVICE))
