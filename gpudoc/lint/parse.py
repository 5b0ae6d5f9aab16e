"""libcst's parser, remembering the last text it parsed.

``--fix`` builds the tree of the text it is about to write (it must parse), then lints that very
text: the second parse is free. One tree is kept, no more: memory stays one tree above a plain
parse.

The parser's own output is not validated again: libcst checks every node it builds (whitespace
around keywords, balanced brackets), which is about a third of a parse and answers nothing about
text its parser has just accepted, and wrongly refuses some valid Python
(``() if 0 else(lambda:())`` raises a TypeError there, LibCST#1061). Nodes that gpudoc builds
itself (the fixes) are still validated, and fixed text must also pass Python's own parser.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import libcst as cst

_last: list[tuple[str, cst.Module]] = []


def parse_text(source: str) -> cst.Module:
    """``libcst.parse_module`` without validating its own nodes again; raises what it raises."""
    with _unvalidated():
        return cst.parse_module(source)


@contextmanager
def _unvalidated() -> Iterator[None]:
    # each node's dataclass __init__ calls self.__post_init__, which only validates
    saved = cst.CSTNode.__dict__["__post_init__"]
    cst.CSTNode.__post_init__ = _accept  # type: ignore[method-assign, assignment]
    try:
        yield
    finally:
        cst.CSTNode.__post_init__ = saved  # type: ignore[method-assign]


def _accept(_node: cst.CSTNode) -> None:
    pass


def parse_module(source: str) -> cst.Module:
    """``libcst.parse_module``; raises what it raises (failures are not remembered)."""
    if _last and _last[0][0] is source:
        return _last[0][1]
    if _last and _last[0][0] == source:
        return _last[0][1]
    module = parse_text(source)
    remember(source, module)
    return module


def remembered(source: str) -> cst.Module | None:
    """The tree of ``source`` if it is the one remembered; never parses."""
    if _last and (_last[0][0] is source or _last[0][0] == source):
        return _last[0][1]
    return None


def remember(source: str, module: cst.Module) -> None:
    """Let the next ``parse_module(source)`` answer ``module``: a tree that --fix assembled for
    ``source`` (reparse.py), equal to what the parser would give."""
    _last[:] = [(source, module)]
