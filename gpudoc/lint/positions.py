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
from collections.abc import Iterable, Mapping
from typing import cast

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

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
        ranges = _ranges(alone)
        shift = starts[index] - ranges[statement].start.line
        found.update((node, _shifted(ranges[node], shift)) for node in members)
    return found


def _ranges(module: cst.Module) -> Mapping[cst.CSTNode, CodeRange]:
    """PositionProvider's ranges: its own code generation, run directly. The MetadataWrapper
    around it also visits the whole tree (rebuilding every node) for batched providers that
    are not there: that visit costs more than the code generation."""
    provider = PositionProvider()
    if PositionProvidingCodegenState is None:
        return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    try:
        state = PositionProvidingCodegenState(
            default_indent=module.default_indent,
            default_newline=module.default_newline,
            provider=provider,
        )
        module._codegen(state)
        computed = provider._computed
    except (AttributeError, TypeError):  # another libcst's internals: the public way
        return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return cast("Mapping[cst.CSTNode, CodeRange]", computed)


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
    for ids in (code_ids, _ids):
        for index, statement in enumerate(module.body):
            inside = [wanted[key] for key in ids(statement) if key in left]
            if inside:
                owners.setdefault(index, []).extend(inside)
                left.difference_update(id(node) for node in inside)
            if not left:
                return owners
    return owners or None


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
