"""``# noqa`` comments: where they are and which codes they silence."""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.I)


@dataclass
class Directive:
    """A ``# noqa`` comment: its place, its codes (None: all), and the codes it suppressed."""

    line: int
    col: int
    """0-based column of the ``#`` that starts ``# noqa``."""
    codes: tuple[str, ...] | None
    used: set[str] = field(default_factory=set)


def noqa_directives(source: str) -> dict[int, Directive]:
    """The ``# noqa`` comments by line, found by Python's tokenizer: text that looks like one
    inside a string (``"# noqa"``) is not a comment and suppresses nothing."""
    if "noqa" not in source.lower():
        return {}
    found: dict[int, Directive] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            match = NOQA.search(token.string) if token.type == tokenize.COMMENT else None
            if match is None:
                continue
            raw = match.group("codes")
            codes = tuple(c.upper() for c in re.split(r"[\s,]+", raw) if c) if raw else None
            line, col = token.start
            found[line] = Directive(line, col + match.start(), codes)
    except (tokenize.TokenError, SyntaxError):
        pass  # libcst parsed it; a tokenizer disagreement only loses suppressions
    return found
