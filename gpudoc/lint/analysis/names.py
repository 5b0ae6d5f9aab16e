"""Names: import aliases (which local names stand for which qualified names, ``th`` -> ``torch``)
and the names a function binds."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.visit import children, walk

if TYPE_CHECKING:
    from gpudoc.lint.analysis.values import Value


def dotted(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` as text, or None for anything that is not a plain dotted name."""
    # `type(...) is`, not isinstance: libcst's nodes are abstract-base classes, whose
    # isinstance misses run Python code, and this runs for most expressions the walk meets
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute:
        base = dotted(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


NUMBER_MODULES = frozenset(["math", "torch", "np", "numpy"])
NUMBER_CONSTANTS = frozenset(["pi", "e", "tau", "inf", "nan"])
NUMBER_BUILTINS = frozenset(["float", "int", "abs", "round", "min", "max"])


def is_number_expression(
    node: cst.BaseExpression, numbers: Callable[[str], bool] | None = None
) -> bool:
    """``2.0``, ``-1``, ``2.0 / math.pi``, ``math.sqrt(2)``: an expression of numbers only, so
    ``torch.tensor(...)`` of it is a 0-dim tensor (combined with tensors on any device).
    ``numbers`` says which other names (``self.d_head``, ``dim``) hold Python numbers."""
    if isinstance(node, cst.Integer | cst.Float):
        return True
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return True  # `torch.tensor(True)`: a 0-dim flag
    if isinstance(node, cst.UnaryOperation):
        return is_number_expression(node.expression, numbers)
    if isinstance(node, cst.BinaryOperation):
        return is_number_expression(node.left, numbers) and is_number_expression(
            node.right, numbers
        )
    if _size_read(node):
        return True  # `y.shape[0]`, `x.size(-1)`, `len(batch)`, `t.numel()`: an int
    if isinstance(node, cst.Subscript) and numbers is not None and len(node.slice) == 1:
        # `self.out_channels[t]` of `self.out_channels = [8, 7]`: one of its numbers
        container = dotted(node.value)
        return (
            isinstance(node.slice[0].slice, cst.Index)
            and container is not None
            and numbers(f"{container}[]")
        )
    name = dotted(node)
    if name is not None:
        root, _, last = name.rpartition(".")
        known = root in NUMBER_MODULES and last in NUMBER_CONSTANTS
        return known or (numbers is not None and numbers(name))
    if isinstance(node, cst.Call) and node.args:
        function = dotted(node.func) or ""
        numeric = function in NUMBER_BUILTINS or function.startswith("math.")
        return numeric and all(is_number_expression(arg.value, numbers) for arg in node.args)
    return False


def _size_read(node: cst.BaseExpression) -> bool:
    """One number of a size: ``x.shape[0]``, ``x.size(0)``, ``x.numel()``, ``len(x)``."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        index = node.slice[0].slice
        shape = isinstance(node.value, cst.Attribute) and node.value.attr.value == "shape"
        return shape and isinstance(index, cst.Index) and _is_integer(index.value)
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    if isinstance(func, cst.Name):
        return func.value == "len" and len(node.args) == 1
    if not isinstance(func, cst.Attribute):
        return False
    if func.attr.value == "size":
        return len(node.args) == 1 and _is_integer(node.args[0].value)
    return func.attr.value in ("numel", "dim") and not node.args


def _is_integer(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation):
        node = node.expression
    return isinstance(node, cst.Integer)


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    """The keyword argument ``name=`` of ``call``."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def keyword_value(call: cst.Call, values: list[Value], name: str) -> tuple[cst.Arg, Value] | None:
    """The keyword argument ``name`` and its already evaluated value."""
    for arg, value in zip(call.args, values, strict=True):
        if arg.keyword is not None and arg.keyword.value == name:
            return arg, value
    return None


def names_in(node: cst.CSTNode) -> Iterator[str]:
    """Identifiers, attribute names and string literals in a (small) expression, for recognising
    guards; the parts of displays, subscripts' indices and comprehension clauses are not
    entered. The common nodes are taken apart by hand: libcst's ``children`` visits every field,
    whitespace included, which made this a tenth of the walk."""
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name | cst.SimpleString):
            yield current.value
        elif isinstance(current, cst.Attribute):
            stack += (current.value, current.attr)
        elif isinstance(current, cst.Call):
            stack.append(current.func)
            stack += current.args
        elif isinstance(current, cst.Arg):
            stack.append(current.value)
            if current.keyword is not None:
                stack.append(current.keyword)
        elif isinstance(current, cst.Comparison):
            stack.append(current.left)
            stack += (target.comparator for target in current.comparisons)
        elif isinstance(current, cst.BooleanOperation | cst.BinaryOperation):
            stack += (current.left, current.right)
        elif isinstance(current, cst.UnaryOperation):
            stack.append(current.expression)
        elif isinstance(current, cst.Subscript):
            stack.append(current.value)
        elif isinstance(current, cst.BaseExpression | cst.Arg | cst.ComparisonTarget):
            stack.extend(children(current))


def calls_in(node: cst.CSTNode) -> list[cst.Call]:
    """Every call inside ``node``, in the walk's order."""
    visitor = _Calls()
    walk(node, visitor)
    return visitor.calls


class _Calls(cst.CSTVisitor):
    def __init__(self) -> None:
        self.calls: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)


def top_level_runs(module: cst.Module, calls: bool = True) -> bool:
    """A program rather than a module for others to import: its top level has a ``__main__``
    block, a loop, a ``with`` or (with ``calls``) a call statement (``main()``, but also a
    library's ``sys.path.append(...)`` or ``logging.basicConfig()``)."""
    for statement in module.body:
        if isinstance(statement, cst.If) and "__main__" in module.code_for_node(statement.test):
            return True
        if isinstance(statement, cst.For | cst.While | cst.With):
            return True
        if (
            calls
            and isinstance(statement, cst.SimpleStatementLine)
            and any(
                isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
                for small in statement.body
            )
        ):
            return True
    return False


DISPATCHERS = frozenset({"Fire", "globals", "locals", "vars"})
"""Names through which a script calls its functions without naming them."""


def name_counts(node: cst.CSTNode, names: set[str]) -> dict[str, int]:
    """How often each of ``names`` stands as a ``Name`` under ``node``; a ``def``'s own name
    counts once, so more than one is a use (a call, ``mp.spawn(f)``)."""
    counter = _NameCounter(names)
    walk(node, counter)
    return counter.counts


class _NameCounter(cst.CSTVisitor):
    def __init__(self, names: set[str]) -> None:
        self.counts = dict.fromkeys(names, 0)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.counts:
            self.counts[node.value] += 1


def _import_target(node: cst.BaseExpression) -> str:
    return dotted(node) or ""


class ImportTable:
    """Local name -> qualified name, filled in as import statements are met."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.roots: set[str] = set()
        """Top-level packages imported anywhere (``torch``, ``lightning``, ``accelerate``)."""

    def add(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = _import_target(alias.name)
                self.roots.add(full.split(".")[0])
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self.aliases[alias.asname.name.value] = full
                else:
                    head = full.split(".")[0]
                    self.aliases[head] = head
            return
        if node.relative or node.module is None:
            return
        module = _import_target(node.module)
        self.roots.add(module.split(".")[0])
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = _import_target(alias.name)
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.aliases[local] = f"{module}.{name}"

    def qualify(self, node: cst.BaseExpression) -> str | None:
        """The qualified name of ``node`` when its root is an imported name."""
        text = dotted(node)
        if text is None:
            return None
        head, _, rest = text.partition(".")
        full = self.aliases.get(head)
        if full is None:
            return None
        return f"{full}.{rest}" if rest else full


def iter_statements(
    block: Sequence[cst.BaseStatement | cst.BaseSmallStatement],
) -> Iterator[cst.CSTNode]:
    """Every statement of a block and of the blocks inside it, small statements one by one;
    a nested function or class is yielded but not entered (its body is its own scope).
    Statements only: far cheaper than a visitor over every expression."""
    stack: list[cst.CSTNode] = list(reversed(block))
    while stack:
        node = stack.pop()
        if isinstance(node, cst.SimpleStatementLine | cst.SimpleStatementSuite):
            yield from node.body
            continue
        yield node
        if isinstance(node, cst.FunctionDef | cst.ClassDef):
            continue
        inner: list[cst.CSTNode] = []
        for part in blocks_of(node):
            inner.extend(part.body)
        if isinstance(node, cst.If) and isinstance(node.orelse, cst.If):
            inner.append(node.orelse)  # an `elif`: walked as the `if` it is
        stack.extend(reversed(inner))


def blocks_of(node: cst.CSTNode) -> list[cst.BaseSuite]:
    blocks: list[cst.BaseSuite] = []
    body = getattr(node, "body", None)
    if isinstance(body, cst.BaseSuite):
        blocks.append(body)
    orelse = getattr(node, "orelse", None)
    suite = getattr(orelse, "body", None)
    if not isinstance(orelse, cst.If) and isinstance(suite, cst.BaseSuite):
        blocks.append(suite)
    for handler in getattr(node, "handlers", ()):
        blocks.append(handler.body)
    final = getattr(node, "finalbody", None)
    if final is not None:
        blocks.append(final.body)
    for case in getattr(node, "cases", ()):
        blocks.append(case.body)
    return blocks


def _target_names(node: cst.CSTNode, into: set[str]) -> None:
    if isinstance(node, cst.Name):
        into.add(node.value)
    elif isinstance(node, cst.Tuple | cst.List):
        for element in node.elements:
            _target_names(element.value, into)
    elif isinstance(node, cst.StarredElement):
        _target_names(node.value, into)


def _bound_by(statement: cst.CSTNode, bound: set[str], declared: set[str]) -> None:
    if isinstance(statement, cst.Assign):
        for target in statement.targets:
            _target_names(target.target, bound)
    elif isinstance(statement, cst.AnnAssign | cst.AugAssign | cst.For):
        _target_names(statement.target, bound)
    elif isinstance(statement, cst.With):
        for item in statement.items:
            if item.asname is not None:
                _target_names(item.asname.name, bound)
    elif isinstance(statement, cst.Import | cst.ImportFrom):
        names = statement.names
        for alias in names if not isinstance(names, cst.ImportStar) else ():
            if alias.asname is not None:
                _target_names(alias.asname.name, bound)
    elif isinstance(statement, cst.Try | cst.TryStar):
        for handler in statement.handlers:
            if handler.name is not None:
                _target_names(handler.name.name, bound)
    elif isinstance(statement, cst.FunctionDef | cst.ClassDef):
        bound.add(statement.name.value)
    elif isinstance(statement, cst.Global | cst.Nonlocal):
        declared.update(item.name.value for item in statement.names)


def bound_names_of(target: cst.BaseExpression) -> frozenset[str]:
    """The plain names an assignment or ``for`` target binds."""
    bound: set[str] = set()
    _target_names(target, bound)
    return frozenset(bound)


def bound_names(function: cst.FunctionDef) -> frozenset[str]:
    """Every name local to ``function``: its parameters and what its body binds (a walrus
    inside an expression is not seen)."""
    bound: set[str] = set()
    declared: set[str] = set()
    for statement in iter_statements(function.body.body):
        _bound_by(statement, bound, declared)
    params = function.params
    every = [*params.posonly_params, *params.params, *params.kwonly_params]
    every += [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
    return frozenset((bound | {p.name.value for p in every}) - declared)


def declared_globals(function: cst.FunctionDef) -> frozenset[str]:
    """The names ``function`` declares ``global``."""
    return frozenset(
        item.name.value
        for statement in iter_statements(function.body.body)
        if isinstance(statement, cst.Global)
        for item in statement.names
    )


MODULE_ONLY_METHODS = frozenset(["parameters", "named_parameters"])
"""Methods only a module has: a name they are called on holds one."""
IN_PLACE_MOVES = frozenset(["to", "cuda"])


class CallCensus(NamedTuple):
    counts: dict[str, int]
    """Calls by the name called (``name(...)`` or ``x.name(...)``)."""
    used_as_modules: frozenset[str]
    """Names the file uses as modules (``model.parameters()``, ``model.to(device)`` as a
    statement, which only a module does in place): what an unknown call bound them to."""


class _CallCounter(cst.CSTVisitor):
    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.modules: set[str] = set()

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = func.value if isinstance(func, cst.Name) else None
        if isinstance(func, cst.Attribute):
            name = func.attr.value
            if name in MODULE_ONLY_METHODS:
                self._note_module(func.value)
        if name is not None:
            self.counts[name] = self.counts.get(name, 0) + 1

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        func = call.func if isinstance(call, cst.Call) else None
        if isinstance(func, cst.Attribute) and func.attr.value in IN_PLACE_MOVES:
            receiver = dotted(func.value)
            # `x.to(device)` discarded on a tensor is a bug, not a hint (GPD103)
            if receiver is not None and not api.TENSOR_NAME.match(receiver.rsplit(".", 1)[-1]):
                self.modules.add(receiver)

    def _note_module(self, node: cst.BaseExpression) -> None:
        name = dotted(node)
        if name is not None:
            self.modules.add(name)


class _EachMoved(cst.CSTVisitor):
    def __init__(self, sequence: str) -> None:
        self.sequence = sequence
        self.targets: set[str] = set()
        self.receivers: set[str] = set()
        """Names moved by a call; a comprehension's element comes before its ``for``."""

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.note_loop(node.target, node.iter)

    def visit_For(self, node: cst.For) -> None:
        self.note_loop(node.target, node.iter)

    def note_loop(self, target: cst.BaseExpression, iterated: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name) and dotted(iterated) == self.sequence:
            self.targets.add(target.value)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in IN_PLACE_MOVES:
            self.receivers.add(dotted(func.value) or "")


def moves_each(function: cst.FunctionDef, sequence: str) -> bool:
    """``function`` moves each element of its parameter ``sequence`` (``[x.cuda() for x in
    xs]``, ``for m in models: m.to(device)``): modules among them move in place."""
    finder = _EachMoved(sequence)
    walk(function.body, finder)
    return bool(finder.targets & finder.receivers)


class _ParameterLists(cst.CSTVisitor):
    def __init__(self) -> None:
        self.modules: list[str] = []
        """The modules whose parameters the loops being visited iterate."""
        self.lists: dict[str, set[str]] = {}

    def visit_For(self, node: cst.For) -> None:
        self.modules.append(_parameters_of(node.iter) or "")

    def leave_For(self, original_node: cst.For) -> None:
        self.modules.pop()

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        name = dotted(node.target)
        if name is not None and isinstance(node.operator, cst.AddAssign):
            self.note(name)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("append", "extend"):
            self.note(dotted(func.value) or "")

    def note(self, name: str) -> None:
        module = next((m for m in reversed(self.modules) if m), None)
        if name and module is not None:
            self.lists.setdefault(name, set()).add(module)


def _parameters_of(node: cst.BaseExpression) -> str | None:
    """``model`` of ``model.named_parameters()`` anywhere in a loop's iterable
    (``dict(model.named_parameters()).items()``)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Call):
            func = current.func
            if isinstance(func, cst.Attribute) and func.attr.value in MODULE_ONLY_METHODS:
                return dotted(func.value)
            stack.append(func)
            stack += [arg.value for arg in current.args]
        elif isinstance(current, cst.Attribute):
            stack.append(current.value)
    return None


def parameter_lists(body: Sequence[cst.CSTNode]) -> dict[str, str]:
    """Lists that loops over one module's parameters fill (``params += [...]``,
    ``params.append(...)``), with that module: an optimizer built on the list is its."""
    finder = _ParameterLists()
    for statement in body:
        walk(statement, finder)
    return {
        name: next(iter(modules)) for name, modules in finder.lists.items() if len(modules) == 1
    }


def call_census(module: cst.Module) -> CallCensus:
    """One read of ``module`` for what the walk asks of the whole file."""
    counter = _CallCounter()
    walk(module, counter)
    return CallCensus(counter.counts, frozenset(counter.modules))


def module_chain_root(node: cst.BaseExpression) -> cst.BaseExpression:
    """``model.eval().to(device)``: ``eval()`` returns the module itself, so ``model`` moves."""
    while (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value in api.IN_PLACE_MODULE_METHODS
    ):
        node = node.func.value
    return node


def built_class(origin: cst.CSTNode | None) -> str | None:
    """``Bank`` for a module built by ``Bank(n, d)``, also moved (``Bank(n, d).to(device)``)."""
    while isinstance(origin, cst.Call) and isinstance(origin.func, cst.Attribute):
        origin = origin.func.value
    if isinstance(origin, cst.Call) and isinstance(origin.func, cst.Name):
        return origin.func.value
    return None


def assignments(
    statement: cst.CSTNode,
) -> Iterator[tuple[cst.BaseAssignTargetExpression, cst.BaseExpression]]:
    """Each (target, value) of the plain assignments in a simple statement (a one-line suite
    too: ``if cuda: model = model.cuda()``)."""
    if not isinstance(statement, cst.SimpleStatementLine | cst.SimpleStatementSuite):
        return
    for small in statement.body:
        if isinstance(small, cst.Assign):
            for target in small.targets:
                yield target.target, small.value


def assigned_value(statement: cst.CSTNode, name: str) -> cst.BaseExpression | None:
    """The expression ``statement`` assigns to ``name``: ``value`` of ``name = value``, or the
    matching element of ``a, name = x, value``; None for unpacking, loops and the rest."""
    for target, value in assignments(statement):
        found = matched_value(target, value, name)
        if found is not None:
            return found
    return None


def matched_value(
    target: cst.BaseExpression, value: cst.BaseExpression, name: str
) -> cst.BaseExpression | None:
    """What ``target = value`` binds to ``name``, element by element of a tuple or list
    (``total, accs = 0.0, []``); None when it cannot be read (unpacking a call, a star)."""
    if isinstance(target, cst.Name | cst.Attribute):
        return value if dotted(target) == name else None
    sequences = (cst.Tuple, cst.List)
    if not isinstance(target, sequences) or not isinstance(value, sequences):
        return None
    pairs = list(zip(target.elements, value.elements, strict=False))
    if len(target.elements) != len(value.elements) or any(
        isinstance(part, cst.StarredElement) for pair in pairs for part in pair
    ):
        return None
    for target_element, value_element in pairs:
        found = matched_value(target_element.value, value_element.value, name)
        if found is not None:
            return found
    return None


def return_values(function: cst.FunctionDef) -> list[cst.BaseExpression | None]:
    """What each ``return`` of ``function`` (not of a function nested in it) hands back."""
    body = function.body.body if isinstance(function.body, cst.IndentedBlock) else []
    return [s.value for s in iter_statements(body) if isinstance(s, cst.Return)]


def class_method(node: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    """The class body's first method named ``name`` (``__init__``, ``__call__``)."""
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    for statement in body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
            return statement
    return None


def method_named(node: cst.ClassDef | None, name: str) -> cst.FunctionDef | None:
    """The method ``name`` a class defines in its own body (``__init__``, ``forward``)."""
    body = node.body.body if node is not None and isinstance(node.body, cst.IndentedBlock) else ()
    return next((s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == name), None)
