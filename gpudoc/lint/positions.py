"""Line and column of the few nodes a lint run reports, without positions for the whole tree.

libcst's PositionProvider regenerates the code of the whole module and records a range for every
node: on a 10,000-line file that costs 1.6 times the parse itself, and a dictionary of every
node. A finding needs the positions of a handful of nodes. So: find the top-level statement that
holds each of them (a walk over node fields, a sixth of a parse), run PositionProvider on those
statements alone, and shift the lines by where each statement starts, which Python's own ``ast``
tells (its C parser takes a fifteenth of libcst's time). Whenever the two parsers do not line up
statement for statement, or ``ast`` cannot parse the text, the whole-module provider answers.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import warnings
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

from gpudoc.lint import visit
from gpudoc.lint.visit import code_ids

try:  # libcst's own code generation state: faster than its MetadataWrapper (see _ranges)
    from libcst.metadata.position_provider import PositionProvidingCodegenState
except ImportError:  # another libcst's internals: _ranges takes the public way
    PositionProvidingCodegenState = None  # type: ignore[assignment,misc]

_FIELDS: dict[type[cst.CSTNode], tuple[str, ...]] = {}


def positions(
    module: cst.Module, source: str, nodes: Iterable[cst.CSTNode]
) -> Mapping[cst.CSTNode, CodeRange]:
    """The position of each of ``nodes`` (as PositionProvider gives it)."""
    wanted = {id(node): node for node in nodes}
    starts = _statement_lines(source, len(module.body))
    owners = _owners(module, wanted) if starts is not None else None
    if starts is None or owners is None:
        return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    found: dict[cst.CSTNode, CodeRange] = {}
    for index, members in owners.items():
        statement = module.body[index]
        alone = module.with_changes(header=(), body=(statement,), footer=())
        ranges = _ranges(alone, [statement, *members])
        shift = starts[index] - ranges[statement].start.line
        found.update((node, _shifted(ranges[node], shift)) for node in members)
    return found


def _ranges(module: cst.Module, nodes: list[cst.CSTNode]) -> Mapping[cst.CSTNode, CodeRange]:
    """PositionProvider's ranges of ``nodes`` (at least): its own code generation, run
    directly, by a state that records them as plain tuples (_Recorder). The MetadataWrapper
    around it also visits the whole tree (rebuilding every node) for batched providers that
    are not there: that visit costs more than the code generation."""
    if PositionProvidingCodegenState is None:
        return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    try:
        state = _Recorder(
            default_indent=module.default_indent,
            default_newline=module.default_newline,
            provider=PositionProvider(),
        )
        state.spans, state.starts = {}, []
        module._codegen(state)
        computed = state.spans
    except (AttributeError, TypeError):  # another libcst's internals: the public way
        return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    found: dict[cst.CSTNode, CodeRange] = {}
    for node in nodes:
        start_line, start_column, end_line, end_column = computed[id(node)]
        found[node] = CodeRange(
            CodePosition(start_line, start_column), CodePosition(end_line, end_column)
        )
    return found


Span = tuple[int, int, int, int]
"""A range as (start line, start column, end line, end column)."""


if PositionProvidingCodegenState is not None:

    class _Recorder(PositionProvidingCodegenState):
        """libcst's PositionProvidingCodegenState, the same positions at a fraction of the cost:
        plain tuples where it builds a frozen CodePosition per node and a CodeRange per node,
        a class for its contextmanager-generator ``record_syntactic_position``, and no regular
        expression split for the tokens without a line break (nearly all of them).
        tests/lint/test_positions.py holds it to the whole-module provider on every node."""

        spans: dict[int, Span]
        """Each node's span by the node's id (the tree is alive throughout; a CSTNode's own
        ``__hash__`` is a Python call)."""
        starts: list[tuple[int, int]]

        def _update_position(self, value: str) -> None:
            if "\n" in value or "\r" in value:
                PositionProvidingCodegenState._update_position(self, value)
            else:
                self.column += len(value)

        def before_codegen(self, node: cst.CSTNode) -> None:
            self.starts.append((self.line, self.column))

        def after_codegen(self, node: cst.CSTNode) -> None:
            start_line, start_column = self.starts.pop()  # always popped, as libcst does
            spans = self.spans
            if id(node) not in spans:  # a syntactic position already recorded stays
                spans[id(node)] = (start_line, start_column, self.line, self.column)

        def record_syntactic_position(  # type: ignore[override]
            self,
            node: cst.CSTNode,
            *,
            start_node: cst.CSTNode | None = None,
            end_node: cst.CSTNode | None = None,
        ) -> _Syntactic:
            return _Syntactic(self, node, start_node, end_node)

    class _Syntactic:
        """libcst's ``record_syntactic_position``: the node's span from where its code starts
        to where it ends, or from ``start_node``'s start and to ``end_node``'s end."""

        __slots__ = ("end_node", "node", "start", "start_node", "state")

        def __init__(
            self,
            state: _Recorder,
            node: cst.CSTNode,
            start_node: cst.CSTNode | None,
            end_node: cst.CSTNode | None,
        ) -> None:
            self.state, self.node = state, node
            self.start_node, self.end_node = start_node, end_node
            self.start = (state.line, state.column)

        def __enter__(self) -> None:
            return None

        def __exit__(self, *_exception: object) -> None:
            state = self.state
            spans = state.spans
            start_line, start_column = self.start
            if self.start_node is not None:
                start_line, start_column = spans[id(self.start_node)][:2]
            end_line, end_column = state.line, state.column
            if self.end_node is not None:
                end_line, end_column = spans[id(self.end_node)][2:]
            spans[id(self.node)] = (start_line, start_column, end_line, end_column)


def _shifted(where: CodeRange, lines: int) -> CodeRange:
    start, end = where.start, where.end
    return CodeRange(
        CodePosition(start.line + lines, start.column), CodePosition(end.line + lines, end.column)
    )


def _statement_lines(source: str, count: int) -> list[int] | None:
    """The line where each top-level statement starts, or None when ``ast`` and libcst do not
    see the same ``count`` statements."""
    lines = statement_lines(source)
    if lines is None or len(lines) != count:
        return None
    return [own for _first, own in lines]


@functools.lru_cache(maxsize=2)
def statement_lines(source: str) -> tuple[tuple[int, int], ...] | None:
    """For each top-level statement as libcst counts them: (the line of its first decorator,
    else its own line; its own line, as libcst's position starts), by ``ast``; None when ``ast``
    cannot parse the text. Remembered for two texts: --fix asks about the text it has just linted
    and the one it is about to lint."""
    try:
        with warnings.catch_warnings():  # "invalid escape sequence" and the like: not ours to say
            warnings.simplefilter("ignore")
            body = ast.parse(source).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines: list[tuple[int, int]] = []
    last_end = 0
    for statement in body:
        first = statement.lineno  # a def's or class's own line, as libcst's start: no decorators
        if lines and first <= last_end:  # ``a = 1; b = 2``: one libcst statement line
            last_end = max(last_end, statement.end_lineno or first)
            continue
        decorators = getattr(statement, "decorator_list", None) or ()
        lines.append((min([first, *(d.lineno for d in decorators)]), first))
        last_end = statement.end_lineno or first
    return tuple(lines)


def _owners(
    module: cst.Module, wanted: dict[int, cst.CSTNode]
) -> dict[int, list[cst.CSTNode]] | None:
    """Top-level statement index -> the wanted nodes inside it; None if none is found. A node
    of another file (a project module walked for a call here) is in no statement: it is left
    out, and has no position. The nodes that hold code are searched first (whitespace and
    brackets are most of a tree); whatever is not found there is searched among all."""
    owners: dict[int, list[cst.CSTNode]] = {}
    left = set(wanted)
    searches: tuple[Callable[[cst.CSTNode], Iterable[int]], ...] = (code_ids, _ids)
    if left and _owners_indexed(module, wanted, owners, left):
        searches = (_ids,)  # the index holds the nodes that hold code
        if not left:
            return owners
    for ids in searches:
        for index, statement in enumerate(module.body):
            inside = left.intersection(ids(statement))
            if inside:
                owners.setdefault(index, []).extend(wanted[key] for key in inside)
                left -= inside
            if not left:
                return owners
    return owners or None


def _owners_indexed(
    module: cst.Module,
    wanted: dict[int, cst.CSTNode],
    owners: dict[int, list[cst.CSTNode]],
    left: set[int],
) -> bool:
    """``_owners``' search of the nodes that hold code, through the index of the module's
    nodes that its walks built (False when there is none): one pass over a list instead of a
    walk of every statement (with findings all over a big file, of the whole module)."""
    found = visit.indexed(module)
    if found is None:
        return False
    nodes, starts = found
    for position, node in enumerate(nodes):
        if id(node) in left and position > 0:  # the module itself is in no statement
            owners.setdefault(bisect_right(starts, position) - 1, []).append(node)
            left.discard(id(node))
    return True


def _ids(root: cst.CSTNode) -> Iterable[int]:
    """The id of every node under ``root`` (itself included), by their dataclass fields."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield id(node)
        names = _FIELDS.get(type(node))
        if names is None:
            names = _FIELDS[type(node)] = tuple(f.name for f in dataclasses.fields(node))
        for name in names:
            value = getattr(node, name)
            if isinstance(value, cst.CSTNode):
                stack.append(value)
            elif isinstance(value, (list, tuple)):
                stack.extend(item for item in value if isinstance(item, cst.CSTNode))
