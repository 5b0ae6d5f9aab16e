"""libcst's parser, remembering the last text it parsed.

``--fix`` parses the text it is about to write (it must parse), then lints that very text: the
second parse is free. One tree is kept, no more: memory stays one tree above a plain parse.
"""

from __future__ import annotations

import functools

import libcst as cst


@functools.lru_cache(maxsize=1)
def parse_module(source: str) -> cst.Module:
    """``libcst.parse_module``; raises what it raises (failures are not remembered)."""
    return cst.parse_module(source)
