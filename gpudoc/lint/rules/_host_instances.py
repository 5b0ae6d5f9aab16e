"""GPD106's module classes whose every instance stays on the host: read from the file's text.

A tutorial notebook trains a model on the CPU, then a later cell redefines the class and moves
that new instance to the GPU. Only a definition some instance of which may reach a device
(moved, wrapped, handed to a function, stored, returned) can meet device inputs in ``forward``.
Each construction is bound to the definition in effect where it runs (a notebook redefines a
class under the same name), so only constructions in top-level statements are judged; any other
mention of the class (in a function, a base, a submodule, an import) counts as "may be placed".
"""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

from gpudoc.lint.visit import walk

KEEPING_METHODS = frozenset(
    {
        "parameters", "named_parameters", "buffers", "named_buffers", "children",
        "named_children", "modules", "named_modules", "state_dict", "load_state_dict",
        "zero_grad", "forward", "extra_repr",
    }
)  # fmt: skip
"""Module methods that leave the module where it is and do not return it."""
SELF_METHODS = frozenset({"train", "eval", "float", "double", "requires_grad_"})
"""Methods that return the module itself: harmless only when that result is discarded."""
READING_BUILTINS = frozenset({"print", "str", "repr", "type", "id", "isinstance", "len"})
SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


class _Mentions(cst.CSTVisitor):
    """Every ``Name`` among ``names``, with the nodes around it (outermost first)."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.stack: list[cst.CSTNode] = []
        self.found: list[tuple[cst.Name, tuple[cst.CSTNode, ...]]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Name) and node.value in self.names:
            self.found.append((node, tuple(self.stack)))
        self.stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()


def _mentions(
    module: cst.Module, names: set[str]
) -> list[tuple[cst.Name, tuple[cst.CSTNode, ...]]]:
    visitor = _Mentions(names)
    walk(module, visitor)
    return visitor.found


def host_only_classes(
    module: cst.Module, classes: Iterable[cst.ClassDef], fed: set[cst.CSTNode]
) -> set[cst.ClassDef]:
    """The module classes among ``classes`` (top-level definitions of ``module``) with at least
    one instance, every one made by ``name = Class(...)`` in a top-level statement and then
    only called, printed or asked for its parameters and state; ``fed`` holds the
    constructions whose instance is called on device tensors somewhere."""
    index: dict[cst.CSTNode, int] = {statement: i for i, statement in enumerate(module.body)}
    wanted = {c for c in classes if c in index}
    definitions: dict[str, list[cst.ClassDef]] = {}
    for statement in module.body:
        if isinstance(statement, cst.ClassDef):
            definitions.setdefault(statement.name.value, []).append(statement)
    names = {c.name.value for c in wanted}
    instances: dict[cst.ClassDef, list[tuple[int, str, cst.Call]]] = {}
    spoilt: set[str] = set()
    for name, around in _mentions(module, names):
        if len(around) == 2 and isinstance(around[1], cst.ClassDef) and around[1].name is name:
            continue  # a top-level definition itself
        if _in_super(name, around):
            continue  # `super(LSTMModel, self).__init__()`
        made = _construction(name, around)
        at = index.get(around[1]) if made is not None and len(around) > 1 else None
        earlier = [d for d in definitions.get(name.value, []) if at is not None and index[d] < at]
        if made is None or at is None or not earlier:
            spoilt.add(name.value)  # a base, a submodule, an import, a factory function...
            continue
        instances.setdefault(earlier[-1], []).append((at, made[0], made[1]))
    candidates = {c: instances[c] for c in wanted if c.name.value not in spoilt and c in instances}
    if not candidates:
        return set()
    variables = {variable for made in candidates.values() for _, variable, _ in made}
    uses = _mentions(module, variables)
    return {
        c
        for c, made in candidates.items()
        if all(
            call not in fed and _stays(module, index, at, variable, uses)
            for at, variable, call in made
        )
    }


def _in_super(name: cst.Name, around: tuple[cst.CSTNode, ...]) -> bool:
    if len(around) < 2 or not isinstance(around[-1], cst.Arg) or around[-1].value is not name:
        return False
    call = around[-2]
    return (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Name)
        and call.func.value == "super"
    )


def _construction(name: cst.Name, around: tuple[cst.CSTNode, ...]) -> tuple[str, cst.Call] | None:
    """``variable = Class(...)`` as a whole top-level statement: the variable and the call."""
    if len(around) != 4:
        return None
    _, line, assign, call = around
    if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1):
        return None
    if not (isinstance(assign, cst.Assign) and assign.value is call and len(assign.targets) == 1):
        return None
    target = assign.targets[0].target
    if not (isinstance(call, cst.Call) and call.func is name and isinstance(target, cst.Name)):
        return None
    return target.value, call


def _stays(
    module: cst.Module,
    index: dict[cst.CSTNode, int],
    at: int,
    variable: str,
    uses: list[tuple[cst.Name, tuple[cst.CSTNode, ...]]],
) -> bool:
    """Every read of ``variable`` that may see the instance bound at statement ``at`` keeps
    it on the host: those of the top-level statements up to the next plain rebinding, and
    those in any function or class of the file (they may run at any time)."""
    until = next(
        (i for i in range(at + 1, len(module.body)) if _rebinds(module.body[i], variable)),
        len(module.body),
    )
    for name, around in uses:
        if name.value != variable or len(around) < 2:
            continue
        nested = any(isinstance(node, SCOPES) for node in around)
        if nested and _parameter_of(around, variable):
            continue  # another object under the same name
        if not nested and not at < index[around[1]] <= until:
            continue
        if not _harmless(name, around):
            return False
    return True


def _rebinds(statement: cst.BaseStatement, variable: str) -> bool:
    """``variable = ...`` as a top-level statement: later reads see another object."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    return any(
        isinstance(small, cst.Assign)
        and any(
            isinstance(t.target, cst.Name) and t.target.value == variable for t in small.targets
        )
        for small in statement.body
    )


def _parameter_of(around: tuple[cst.CSTNode, ...], variable: str) -> bool:
    """The innermost function around a read has a parameter of that name."""
    for node in reversed(around):
        if isinstance(node, cst.FunctionDef | cst.Lambda):
            params = node.params
            every = [*params.posonly_params, *params.params, *params.kwonly_params]
            every += [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
            return any(p.name.value == variable for p in every)
    return False


def _harmless(name: cst.Name, around: tuple[cst.CSTNode, ...]) -> bool:
    """A use that cannot move the module or let something else move it: a store of the name,
    ``model(x)``, ``model.parameters()``, a discarded ``model.train()``, ``print(model)``."""
    parent = around[-1]
    if isinstance(parent, cst.AssignTarget | cst.AsName | cst.Del | cst.Param):
        return True
    if isinstance(parent, cst.Attribute) and parent.attr is name:
        return True  # `self.model`, `args.model`: another object
    if isinstance(parent, cst.Arg) and parent.keyword is name:
        return True
    if isinstance(parent, cst.For) and parent.target is name:
        return True
    if isinstance(parent, cst.Call) and parent.func is name:
        return True  # forward: the devices of its inputs are the walk's business (``fed``)
    grand = around[-2] if len(around) > 2 else None
    if isinstance(parent, cst.Attribute) and parent.value is name:
        if not (isinstance(grand, cst.Call) and grand.func is parent):
            return False
        method = parent.attr.value
        discarded = len(around) > 3 and isinstance(around[-3], cst.Expr)
        return method in KEEPING_METHODS or (method in SELF_METHODS and discarded)
    if isinstance(parent, cst.Arg) and parent.keyword is None and isinstance(grand, cst.Call):
        return isinstance(grand.func, cst.Name) and grand.func.value in READING_BUILTINS
    return False
