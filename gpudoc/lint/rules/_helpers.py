"""Small helpers the rules share: names in targets, move fixes."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

import libcst as cst

from gpudoc.lint.analysis.events import BindingEvent, CompareEvent, Semantic, StatementEvent
from gpudoc.lint.analysis.expressions import string_value
from gpudoc.lint.analysis.names import assignments, dotted, keyword, module_chain_root
from gpudoc.lint.analysis.values import Kind, Place, Value
from gpudoc.lint.rule import FixSpec, NodeEdit, Rule

MOVES = frozenset({"to", "cuda", "cpu", "to_empty"})
"""The methods that move a module in place."""


def moved_by_statement(event: StatementEvent) -> str | None:
    """``model.to(device)`` (also ``model.eval().to(device)``) as a statement: the name of the
    module it places on the device, else None. A tensor's discarded move is GPD103's."""
    receiver, call = event.receiver, event.node.value
    if receiver is None or not isinstance(call, cst.Call):
        return None
    if receiver.is_tensorish and not receiver.inplace_to:
        return None
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in MOVES:
        return None
    if event.value.place is not Place.DEVICE:
        return None
    return dotted(module_chain_root(func.value))


def sibling_names(target: cst.BaseExpression, name: str) -> list[str] | None:
    """The names of the innermost tuple of ``target`` that binds ``name`` (all plain names)."""
    if isinstance(target, cst.Name):
        return [name] if target.value == name else None
    if not isinstance(target, cst.Tuple | cst.List):
        return None
    plain = [e.value for e in target.elements if isinstance(e.value, cst.Name)]
    for element in target.elements:
        inner = element.value
        if isinstance(inner, cst.Tuple | cst.List):
            found = sibling_names(inner, name)
            if found is not None:
                return found
    names = [n.value for n in plain if isinstance(n, cst.Name)]
    if name in names and len(plain) == len(target.elements):
        return names
    return None


def binding_target(binding: cst.CSTNode, name: str) -> cst.BaseExpression | None:
    if isinstance(binding, cst.For):
        return binding.target
    if isinstance(binding, cst.SimpleStatementLine):
        small = binding.body[0]
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            return small.targets[0].target
    return None


def move_line(names: list[str], device: str) -> str:
    moved = ", ".join(f"{name}.to({device})" for name in names)
    return f"{', '.join(names)} = {moved}"


def move_after_binding(
    binding: cst.CSTNode | None, name: str, device: str | None
) -> FixSpec | None:
    """Insert ``a, b = a.to(device), b.to(device)`` right after the line that bound ``name``."""
    if binding is None or device is None:
        return None
    target = binding_target(binding, name)
    names = sibling_names(target, name) if target is not None else None
    if not names or device in names:
        # `x = x.to(x)` is no move: a script that rebinds its device name to a batch has no
        # device we can name, so the finding stays without a fix.
        return None
    text = move_line(names, device)
    if isinstance(binding, cst.For):
        body = binding.body
        if not isinstance(body, cst.IndentedBlock) or not body.body:
            return None
        edit = NodeEdit(body.body[0], text, "line_before")
    else:
        edit = NodeEdit(binding, text, "line_after")
    return FixSpec((edit,), safe=False, description=f"move {', '.join(names)} to {device}")


def chain_root(
    expr: cst.BaseExpression, stop: cst.BaseExpression | None = None
) -> cst.BaseExpression:
    """What a chain of methods and subscripts starts from (``idx`` in ``idx.long()[:, None]``,
    ``self.m`` in ``self.m[:, 0].unsqueeze(1)``), stopping at ``stop``."""
    while expr is not stop:
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            expr = expr.func.value
        elif isinstance(expr, cst.Subscript):
            expr = expr.value
        else:
            break
    return expr


def chain_name(node: cst.BaseExpression) -> cst.Name | None:
    """``logits`` of ``logits.argmax(1)[0]``, ``batch`` of ``batch["x"].float()``: the name a
    chain of calls, attributes and subscripts starts from."""
    while True:
        if isinstance(node, cst.Name):
            return node
        if isinstance(node, cst.Call):
            node = node.func
        elif isinstance(node, cst.Attribute | cst.Subscript):
            node = node.value
        else:
            return None


def unpacked_from(statement: cst.CSTNode, name: str) -> cst.BaseExpression | None:
    """The call whose result ``statement`` unpacks into ``name`` among others: ``grid`` of
    ``yv, xv = torch.meshgrid(...)``."""
    for target, value in assignments(statement):
        parts = target.elements if isinstance(target, cst.Tuple | cst.List) else ()
        if isinstance(value, cst.Call) and any(dotted(part.value) == name for part in parts):
            return value
    return None


def unpacked_position(statement: cst.CSTNode, name: str) -> int | None:
    """Where ``name`` stands in the tuple ``statement`` unpacks (1 for ``tx`` of ``n, tx, ty =
    build_targets(...)``); None for a starred target or no unpacking."""
    for target, _ in assignments(statement):
        parts = target.elements if isinstance(target, cst.Tuple | cst.List) else ()
        if any(isinstance(part, cst.StarredElement) for part in parts):
            return None
        for index, part in enumerate(parts):
            if dotted(part.value) == name:
                return index
    return None


def chooses_cpu(node: cst.BaseExpression) -> bool:
    """``"cuda" if ok else "cpu"``, alone or in ``torch.device(...)``: a device choice that
    falls back to the CPU."""
    if isinstance(node, cst.Call) and len(node.args) == 1:
        node = node.args[0].value
    if not isinstance(node, cst.IfExp):
        return False
    return any(_names_cpu(arm) for arm in (node.body, node.orelse))


def _names_cpu(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Call) and len(node.args) == 1:  # torch.device("cpu")
        node = node.args[0].value
    return isinstance(node, cst.SimpleString) and node.evaluated_value == "cpu"


class OffersCpu(Rule):
    """A rule that needs to know whether the script offers a CPU path: a name bound to a CPU
    choice (``"cuda" if ok else "cpu"``) or a comparison with ``"cpu"``, anywhere in the file.
    Subclasses list ``binding`` and ``compare`` in their EVENTS and read ``offers_cpu``."""

    def __init__(self) -> None:
        super().__init__()
        self.offers_cpu = False

    def on_binding(self, event: BindingEvent, semantic: Semantic) -> None:
        if not self.offers_cpu:
            value = event.assigned
            self.offers_cpu = value is not None and chooses_cpu(value)

    def on_compare(self, event: CompareEvent, semantic: Semantic) -> None:
        if not self.offers_cpu:
            self.offers_cpu = any(
                string_value(target.comparator) == "cpu" for target in event.node.comparisons
            )


def all_on_host(values: Iterable[Value]) -> bool:
    """Every tensor among ``values`` is on the host (and there is one): a re-created model run
    on the CPU with such inputs, a notebook's next example, raises nothing (GPD101, GPD102)."""
    tensors = [value for value in values if value.is_tensorish]
    return bool(tensors) and all(value.place is Place.HOST for value in tensors)


def any_on_device(values: Iterable[Value]) -> bool:
    """A tensor among ``values`` is on the device: what a host module or tensor meets there."""
    return any(value.is_tensorish and value.place is Place.DEVICE for value in values)


def input_on_device(value: Value) -> bool:
    """What a module is called on is on the device: a tensor there, or a value of unknown kind
    moved there (``x.to(device)`` after ``x = preprocess_fn(x)``): a module's input."""
    return (value.is_tensorish or value.kind is Kind.UNKNOWN) and value.place is Place.DEVICE


def is_process_group_init(qualified: str | None) -> bool:
    """``torch.distributed.init_process_group`` (under any alias)."""
    if qualified is None or not qualified.startswith("torch.") or qualified[6:].startswith("cuda."):
        return False
    return qualified.rsplit(".", 1)[-1] == "init_process_group"


def bound_expression(node: cst.BaseExpression, semantic: Semantic) -> cst.BaseExpression:
    """``backend`` -> the expression of ``backend = "nccl" if ... else "gloo"`` bound earlier."""
    name = dotted(node)
    held = semantic.lookup(name) if name is not None else None
    statement = held.binding if held is not None else None
    if isinstance(statement, cst.SimpleStatementLine):
        small = statement.body[0]
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            return small.value
    return node


def may_be_nccl(backend: cst.BaseExpression) -> bool:
    """``"nccl"``, ``dist.Backend.NCCL``, or either in the arms of a conditional."""
    if isinstance(backend, cst.IfExp):
        return may_be_nccl(backend.body) or may_be_nccl(backend.orelse)
    if isinstance(backend, cst.Attribute):
        return backend.attr.value == "NCCL"
    return string_value(backend) == "nccl"


def backend(node: cst.Call) -> str | None:
    """The ``backend`` an ``init_process_group`` call names, when it is a literal."""
    found = keyword(node, "backend")
    if found is None and node.args and node.args[0].keyword is None:
        found = node.args[0]
    return string_value(found.value) if found is not None else None


class Optimizers:
    """Which module each optimizer was built for (``Adam(model.parameters())``) and when (the
    walk's step), per scope: a rule feeds it its binding events."""

    def __init__(self) -> None:
        self.built: dict[tuple[int, str], tuple[str, int]] = {}

    def note(self, event: BindingEvent, semantic: Semantic) -> None:
        if event.value.kind is not Kind.OPTIMIZER:
            return
        if event.value.source:
            self.built[(semantic.scope_id, event.name)] = (event.value.source, semantic.step)
        else:  # `SGD([{"params": decay}, ...])`: rebuilt for parameters not known here
            self.built.pop((semantic.scope_id, event.name), None)

    def get(self, semantic: Semantic, name: str) -> tuple[str, int] | None:
        """(the module's name, the step it was built at) for the optimizer ``name`` here."""
        return self.built.get((semantic.scope_id, name))

    def forget(self, semantic: Semantic, name: str) -> None:
        self.built.pop((semantic.scope_id, name), None)


def every_parameter(function: cst.FunctionDef) -> set[str]:
    """The names of all of ``function``'s parameters but ``*args`` and ``**kwargs``, ``self``
    included."""
    params = function.params
    return {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}


def parameter_names(function: cst.FunctionDef) -> list[str]:
    """The parameters besides ``self`` / ``cls``, positional first."""
    params = function.params
    names = [p.name.value for p in [*params.posonly_params, *params.params, *params.kwonly_params]]
    return [name for name in names if name not in ("self", "cls")]


LENGTHS = re.compile(r"(^|_)(lens?|lengths?|seq_lens?|seq_lengths?|sizes?)(_tensors?|_t)?$")
"""Sequence lengths stay on the host on purpose: ``pack_padded_sequence`` and CTC losses want
them there (``preds_size = torch.IntTensor([T] * n)``)."""


class Conditions(cst.CSTVisitor):
    """Expressions read as truth values: tests of ``if``/``while``/``assert``/``x if t else y``,
    operands of ``and``/``or``/``not``; with ``comparisons``, every comparison too
    (``use_gpu = n_gpu > 0`` tests ``n_gpu``)."""

    def __init__(self, comparisons: bool = False) -> None:
        self.found: set[cst.BaseExpression] = set()
        self.comparisons = comparisons

    def _test(self, node: cst.BaseExpression) -> None:
        self.found.add(node)

    def visit_If(self, node: cst.If) -> None:
        self._test(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._test(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._test(node.test)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._test(node.test)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        self._test(node.left)
        self._test(node.right)

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.Not):
            self._test(node.expression)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if self.comparisons:
            self._test(node)


class Option(NamedTuple):
    """An ``add_argument`` call's option: its long flag (else its first), where argparse stores
    it, and the call's keyword arguments."""

    flag: str
    dest: str
    keywords: dict[str, cst.BaseExpression]


def argparse_option(call: cst.Call) -> Option | None:
    """``parser.add_argument("-b", "--backend", dest=..., ...)`` read; None without a flag."""
    flags = [string_value(arg.value) or "" for arg in call.args if arg.keyword is None]
    keywords = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
    long = [flag for flag in flags if flag.startswith("--")] or flags
    if not long:
        return None
    dest = string_value(keywords["dest"]) if "dest" in keywords else None
    return Option(long[0], dest or long[0].lstrip("-").replace("-", "_"), keywords)
