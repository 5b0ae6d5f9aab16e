"""libcst's parser, remembering the last text it parsed.

``--fix`` builds the tree of the text it is about to write (it must parse), then lints that very
text: the second parse is free. One tree is kept, no more: memory stays one tree above a plain
parse.

The parser's own output is not validated again: libcst checks every node it builds (whitespace
around keywords, balanced brackets), which is about a third of a parse, and wrongly refuses some
valid Python (``() if 0 else(lambda:())`` raises a TypeError there, LibCST#1061). Validation
does catch some text that the parser accepts and Python does not (``"a" b"b"``): text that
Python's own parser refuses is parsed again with validation, so it fails as it always did.
gpudoc reads a node's children from its fields (``visit.children``), never through libcst's
``node.children``, which validates a rebuilt copy.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import accumulate

import libcst as cst

from gpudoc.lint.positions import statement_lines

_last: list[tuple[str, cst.Module]] = []

MAX_LINE_CHARS = 20_000
MAX_BRACKET_DEPTH = 200
"""CPython's own tokenizer limit; libcst's native parser overflows its stack far beyond it."""
NOT_BRACKETS = re.compile(r"[^()\[\]{}]+")
UNARY_RUN = re.compile(r"(?:[-+~][ \t]*){500}[\w(]")
"""500 stacked unary operators: libcst needs seconds to give up on these; Python gives up too."""
BRACKET_STEP = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}


def too_big_to_parse(source: str) -> str | None:
    """Why libcst is not given ``source`` (a line too long, nesting that overflows its native
    parser's stack), or None."""
    longest = max((len(line) for line in source.split("\n")), default=0)
    if longest > MAX_LINE_CHARS:
        return f"a line of {longest} characters is too long to analyse"
    if UNARY_RUN.search(source):
        return "too deeply nested to parse (500 stacked unary operators)"
    brackets = NOT_BRACKETS.sub("", source)
    if max(accumulate(map(BRACKET_STEP.__getitem__, brackets)), default=0) > MAX_BRACKET_DEPTH:
        return f"brackets nested deeper than {MAX_BRACKET_DEPTH} levels (Python's limit)"
    return None


def parse_text(source: str, linted: bool = False) -> cst.Module:
    """``libcst.parse_module`` without validating its own nodes again, for text Python parses;
    raises what ``libcst.parse_module`` raises. ``linted``: the text the run lints, whose
    statement lines positions.py asks for again (remembered for it); a helper's or a fixed
    statement's text would push the linted file's out of that two-text memory."""
    with _unvalidated():
        module = cst.parse_module(source)
    lines = statement_lines(source) if linted else statement_lines.__wrapped__(source)
    if lines is None:  # Python refuses it: libcst's validation may too
        return cst.parse_module(source)
    return module


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
    module = parse_text(source, linted=True)
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
