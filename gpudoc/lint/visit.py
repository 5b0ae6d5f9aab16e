"""Read-only visits of a libcst tree at a fraction of ``node.visit(visitor)``'s cost.

libcst's ``visit`` rebuilds every node it passes (``_visit_and_replace_children`` constructs a
new node from the visited children, validation included), even for a visitor that changes
nothing: a visit of a whole module costs about as much as parsing it. ``walk`` calls the same
``visit_<Node>`` / ``leave_<Node>`` methods (or an overridden ``on_visit`` / ``on_leave``) in the
same order, and skips what carries no code: whitespace, comments, brackets, commas and
operators. The order of a node's children is read from the code of libcst's own
``_visit_and_replace_children`` of its class, once per class; a class whose order cannot be read
is visited by libcst itself. tests/lint/test_visit.py holds ``walk`` to libcst's order on real
code.
"""

from __future__ import annotations

import dataclasses
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator
from itertools import chain
from types import CodeType

import libcst as cst

SKIPPED_FIELDS = frozenset(
    [
        *("lpar", "rpar", "lbracket", "rbracket", "lbrace", "rbrace", "comma", "semicolon"),
        *("colon", "leading_lines", "lines_after_decorators", "header", "footer", "newline"),
        *("trailing_whitespace", "equal", "dot", "operator", "relative", "asynchronous"),
        *("star_tok",),
    ]
)
"""Fields that hold no code a visitor of ours looks at (tokens, whitespace, comments)."""

_ORDERS: dict[type[cst.CSTNode], tuple[str, ...] | None] = {}
Visit = Callable[[cst.CSTNode], object]


def child_fields(cls: type[cst.CSTNode]) -> tuple[str, ...] | None:
    """The fields of ``cls`` that hold code, in libcst's visiting order; None when libcst's
    code does not say (another libcst): then libcst visits that node itself."""
    if cls in _ORDERS:
        return _ORDERS[cls]
    method = getattr(cls, "_visit_and_replace_children", None)
    code = getattr(method, "__code__", None)
    order: tuple[str, ...] | None = None
    if code is not None and any(name.startswith("visit_") for name in code.co_names):
        # `visit_required(self, "value", self.value, visitor)`: the field names are the code's
        # string constants, in the order they are written (read from the code object: reading
        # the source with inspect costs ~1 ms a class, in every process)
        fields = {field.name for field in dataclasses.fields(cls)}
        names = dict.fromkeys(text for text in _strings(code) if text in fields)
        order = tuple(name for name in names if not _skipped(name))
    _ORDERS[cls] = order
    return order


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The nodes that hold code directly under ``node``, read from its fields: libcst's
    ``node.children`` builds (and validates) a copy of the node to collect them, which costs
    more and fails on a node the parser built that libcst's validation refuses."""
    fields = child_fields(type(node))
    if fields is None:
        return list(node.children)
    found: list[cst.CSTNode] = []
    for name in fields:
        value = getattr(node, name)
        if type(value) is tuple or type(value) is list:
            found += [child for child in value if _is_node(child)]
        elif _is_node(value):
            found.append(value)
    return found


def descendants(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node`` and every node under it, read through ``children``."""
    found = [node]
    for child in children(node):
        found += descendants(child)
    return found


def _strings(code: CodeType) -> Iterator[str]:
    for constant in code.co_consts:
        if isinstance(constant, str):
            yield constant
        elif isinstance(constant, CodeType):  # a comprehension or lambda inside
            yield from _strings(constant)


def _skipped(name: str) -> bool:
    return name in SKIPPED_FIELDS or name.startswith("whitespace")


def walk(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """``node.visit(visitor)`` for a visitor that reads the tree and changes nothing."""
    kind = type(visitor)
    if kind.on_visit is cst.CSTVisitor.on_visit and kind.on_leave is cst.CSTVisitor.on_leave:
        flat = _flat_of(node)
        if flat is not None:
            flat.walk(_Dispatch(visitor))
        else:
            _Dispatch(visitor).walk(node)
    else:
        _walk(node, visitor, visitor.on_visit, visitor.on_leave)


def _walk(node: cst.CSTNode, visitor: cst.CSTVisitor, enter: Visit, leave: Visit) -> None:
    if enter(node) is False:
        leave(node)
        return
    fields = _ORDERS[type(node)] if type(node) in _ORDERS else child_fields(type(node))
    if fields is None:
        node._visit_and_replace_children(visitor)
        leave(node)
        return
    for name in fields:
        value = getattr(node, name)
        if type(value) is tuple or type(value) is list:
            for child in value:
                if _is_node(child):
                    _walk(child, visitor, enter, leave)
        elif _is_node(value):
            _walk(value, visitor, enter, leave)
    leave(node)


_NODE_TYPES: dict[type, bool] = {}


def _is_node(value: object) -> bool:
    """``isinstance(value, cst.CSTNode)``, once per type: CSTNode is an abstract class, whose
    isinstance test costs more than the rest of a visit."""
    known = _NODE_TYPES.get(type(value))
    if known is None:
        known = _NODE_TYPES[type(value)] = isinstance(value, cst.CSTNode)
    return known


class _Dispatch:
    """CSTVisitor's own ``on_visit`` / ``on_leave``, with each class's methods and fields looked
    up once per visitor class: a walk's own cost is per node, and most nodes have no method of
    the visitor (libcst's CSTVisitor defines a do-nothing ``visit_``/``leave_`` method for every
    node class: those are not called)."""

    def __init__(self, visitor: cst.CSTVisitor) -> None:
        self.visitor = visitor
        self.table = _TABLES.setdefault(type(visitor), {})

    def walk(self, node: cst.CSTNode) -> None:
        entry = self.table.get(type(node))
        if entry is None:
            entry = self._entry(type(node))
        fields, visit, leave = entry
        if visit is None or visit(self.visitor, node) is not False:
            if fields is None:
                node._visit_and_replace_children(self.visitor)
            else:
                known = _NODE_TYPES  # _is_node, inlined: it runs for every field of every node
                for name in fields:
                    value = getattr(node, name)
                    if type(value) is tuple or type(value) is list:
                        for child in value:
                            if known.get(type(child)) or _is_node(child):
                                self.walk(child)
                    elif known.get(type(value)) or _is_node(value):
                        self.walk(value)
        if leave is not None:
            leave(self.visitor, node)

    def _entry(self, cls: type[cst.CSTNode]) -> _Entry:
        kind = type(self.visitor)
        visit, leave = (_own(kind, f"{which}_{cls.__name__}") for which in ("visit", "leave"))
        entry = self.table[cls] = (child_fields(cls), visit, leave)
        return entry


class _Unknown(Exception):
    """A node class whose children ``walk`` leaves to libcst."""


class _Flat:
    """A module's nodes in ``walk``'s order, each with the index just past its subtree, and
    where each node class occurs. The rules walk the whole module several times (the checkpoint
    scan, the call census, the worker callables...), each visitor with methods for a few
    classes: with this a walk goes only through the nodes of those classes, and the order of
    the calls (a node's ``leave_`` after its subtree, a ``visit_`` that returns False skipping
    the subtree) comes from the indexes."""

    def __init__(self, root: cst.CSTNode) -> None:
        self.root = root
        self.nodes: list[cst.CSTNode] = []
        self.ends = array("q")
        self.where: dict[type[cst.CSTNode], array[int]] = {}
        self.complete = True
        """False when some class's fields are unknown (libcst visits those itself) or the tree
        is too deep: the walks then go as before."""
        try:
            self._add(root)
        except (_Unknown, RecursionError):
            self.complete = False

    def _add(self, node: cst.CSTNode) -> None:
        # recursive, as ``walk`` is (an explicit stack costs more here)
        cls = type(node)
        fields = _ORDERS[cls] if cls in _ORDERS else child_fields(cls)
        if fields is None and not _leaf(cls):
            raise _Unknown
        nodes = self.nodes
        index = len(nodes)
        nodes.append(node)
        self.ends.append(0)
        where = self.where.get(cls)
        if where is None:
            where = self.where[cls] = array("q")
        where.append(index)
        known = _NODE_TYPES
        for name in fields or ():
            value = getattr(node, name)
            if type(value) is tuple or type(value) is list:
                for child in value:
                    if known.get(type(child)) or _is_node(child):
                        self._add(child)
            elif known.get(type(value)) or _is_node(value):
                self._add(value)
        self.ends[index] = len(nodes)

    def walk(self, dispatch: _Dispatch) -> None:
        """``dispatch.walk(self.root)``: the same calls in the same order."""
        table, visitor = dispatch.table, dispatch.visitor
        runs = []
        for cls, indexes in self.where.items():
            entry = table.get(cls) or dispatch._entry(cls)
            if entry[1] is not None or entry[2] is not None:
                runs.append(indexes)
        if not runs:
            return
        order = runs[0] if len(runs) == 1 else sorted(chain.from_iterable(runs))
        nodes, ends = self.nodes, self.ends
        pending: list[tuple[int, Method, cst.CSTNode]] = []  # leave_ calls after the subtree
        at, count = 0, len(order)
        while at < count:
            index = order[at]
            while pending and pending[-1][0] <= index:
                _, then, done = pending.pop()
                then(visitor, done)
            node = nodes[index]
            _, visit, leave = table[type(node)]
            if visit is not None and visit(visitor, node) is False:
                if leave is not None:
                    leave(visitor, node)
                at = bisect_left(order, ends[index], at + 1)
                continue
            if leave is not None:
                pending.append((ends[index], leave, node))
            at += 1
        while pending:
            _, then, done = pending.pop()
            then(visitor, done)


def _leaf(cls: type[cst.CSTNode]) -> bool:
    """libcst's visit of this class's children visits none (``ImportStar``, the text of an
    f-string): ``walk`` calls the visitor for the node alone."""
    code = getattr(getattr(cls, "_visit_and_replace_children", None), "__code__", None)
    return code is not None and not any(name.startswith("visit") for name in code.co_names)


MAX_FLATS = 16
_FLATS: dict[int, _Flat] = {}
"""The index of each module walked whole in this file's lint, by the module's id (the index
holds the module). Built at its first whole walk: the lint reads each module whole several
times (the call census, the parameter lists, the checkpoint scan...), and an index costs
about one and a half walks."""


def _flat_of(node: cst.CSTNode) -> _Flat | None:
    if type(node) is not cst.Module:
        return None
    flat = _FLATS.get(id(node))
    if flat is None or flat.root is not node:
        if len(_FLATS) >= MAX_FLATS:  # walks outside a lint (tests, tools): hold a few only
            _FLATS.clear()
        flat = _FLATS[id(node)] = _Flat(node)
    return flat if flat.complete else None


def indexed(module: cst.Module) -> tuple[list[cst.CSTNode], list[int]] | None:
    """The nodes of ``module`` in walk order and where each of its statements starts among
    them, when its walks have indexed it (else None)."""
    flat = _FLATS.get(id(module))
    if flat is None or flat.root is not module or not flat.complete:
        return None
    starts, at = [], 1  # the module's children, one subtree after the other: its statements
    while at < len(flat.nodes):
        starts.append(at)
        at = flat.ends[at]
    return (flat.nodes, starts) if len(starts) == len(module.body) else None


def forget() -> None:
    """Drop the modules' indexes, and with them the modules: the file's lint is done."""
    _FLATS.clear()


Method = Callable[[cst.CSTVisitor, cst.CSTNode], object]
_Entry = tuple[tuple[str, ...] | None, Method | None, Method | None]
_TABLES: dict[type[cst.CSTVisitor], dict[type[cst.CSTNode], _Entry]] = {}
"""Per visitor class: per node class, its fields and the visitor's own methods for it."""


def _own(kind: type[cst.CSTVisitor], name: str) -> Method | None:
    """The visitor class's method ``name``; None when it is CSTVisitor's own (does nothing)."""
    method = getattr(kind, name, None)
    return None if method is None or method is getattr(cst.CSTVisitor, name, None) else method


def code_ids(root: cst.CSTNode) -> list[int]:
    """The id of every node under ``root`` (itself included) that ``walk`` visits. A list, not
    a generator: positions.py asks it of every statement that holds a finding."""
    ids: list[int] = []
    stack = [root]
    known = _NODE_TYPES
    while stack:
        node = stack.pop()
        ids.append(id(node))
        fields = _ORDERS[type(node)] if type(node) in _ORDERS else child_fields(type(node))
        if fields is None:
            fields = tuple(field.name for field in dataclasses.fields(node))
        for name in fields:
            value = getattr(node, name)
            if type(value) is tuple or type(value) is list:
                stack.extend(item for item in value if known.get(type(item)) or _is_node(item))
            elif known.get(type(value)) or _is_node(value):
                stack.append(value)
    return ids
