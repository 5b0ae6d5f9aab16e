"""libcst's parser, remembering the last text it parsed.

``--fix`` builds the tree of the text it is about to write (it must parse), then lints that very
text: the second parse is free. One tree is kept, no more: memory stays one tree above a plain
parse.
"""

from __future__ import annotations

import libcst as cst

_last: list[tuple[str, cst.Module]] = []


def parse_module(source: str) -> cst.Module:
    """``libcst.parse_module``; raises what it raises (failures are not remembered)."""
    if _last and _last[0][0] is source:
        return _last[0][1]
    if _last and _last[0][0] == source:
        return _last[0][1]
    module = cst.parse_module(source)
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
