"""``# noqa`` comments: where they are and which codes they silence."""

from __future__ import annotations

import io
import re
import tokenize
from bisect import bisect_right
from dataclasses import dataclass, field

from gpudoc.lint.positions import statement_lines

NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.I)
_NEWLINE = re.compile(r"\r\n|\n")
_SAID = re.compile("noqa", re.I)


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
    inside a string (``"# noqa"``) is not a comment and suppresses nothing.

    Only the top-level statements whose lines say "noqa" are tokenized: a statement (with the
    comments after it) tokenizes alone as in its file, and the tokenizer, in Python, costs a
    tenth of a parse on a whole big file."""
    said = [match.start() for match in _SAID.finditer(source)]
    if not said:
        return {}
    found: dict[int, Directive] = {}
    for first_line, text in _chunks(source, said):
        _read(text, first_line - 1, found)
    return found


def _chunks(source: str, said: list[int]) -> list[tuple[int, str]]:
    """(first line, text) of the top-level statements whose text says "noqa" (at the offsets
    ``said``), each with the comment and blank lines after it (the first also with those
    before it); the whole source when ``ast`` cannot say where statements start, or when a lone
    CR ends a line (a line end for ``ast``, not for the tokenizer here)."""
    lines = statement_lines(source)
    if lines is None or source.count("\r") != source.count("\r\n"):
        return [(1, source)]
    starts = [0] + [match.end() for match in _NEWLINE.finditer(source)]
    firsts = [1] + [first for first, _own in lines[1:]]
    wanted = {bisect_right(firsts, bisect_right(starts, at)) - 1 for at in said}
    chunks = []
    for index in sorted(wanted):
        end = starts[firsts[index + 1] - 1] if index + 1 < len(firsts) else len(source)
        chunks.append((firsts[index], source[starts[firsts[index] - 1] : end]))
    return chunks


def _read(text: str, shift: int, found: dict[int, Directive]) -> None:
    """Add the directives of ``text``, whose first line is line ``shift + 1``."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            match = NOQA.search(token.string) if token.type == tokenize.COMMENT else None
            if match is None:
                continue
            raw = match.group("codes")
            codes = tuple(c.upper() for c in re.split(r"[\s,]+", raw) if c) if raw else None
            line, col = token.start
            found[line + shift] = Directive(line + shift, col + match.start(), codes)
    except (tokenize.TokenError, SyntaxError):
        pass  # libcst parsed it; a tokenizer disagreement only loses suppressions
