"""The tree of a fixed text without parsing it all again: re-parse the top-level statements that
the fixes touched, keep the others' nodes.

A module's code is its header, its top-level statements' code one after the other, then its
footer, and a top-level statement parses the same on its own as in its file, once three things
the parser takes from the whole file are the same: the first newline (``default_newline``), the
first indentation (``default_indent``) -- a one-line preamble of both fixes them -- and the lines
before the first statement (the module's ``header``; elsewhere they are the statement's
``leading_lines``). ``ast`` tells where each statement starts (its C parser costs a fraction of
libcst's); the text of every statement re-parsed is checked against the old tree's own code, and
the new text must parse with ``ast`` and line up with the new tree statement for statement.
Whenever one of these checks fails the caller parses the whole text, as before. A fix whose
statements do not parse is reported as such (``Broken``), to be dropped.
"""

from __future__ import annotations

import io
import re
import tokenize
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from gpudoc.lint.parse import parse_module, parse_text, remember
from gpudoc.lint.positions import statement_lines

_NEWLINE = re.compile(r"\r\n|\r|\n")
DEFAULT_INDENT = " " * 4
"""libcst's indentation for a file that indents nothing."""

Span = tuple[int, int, str]
"""A text edit by offsets: replace ``text[start:end]`` with the string."""


class Broken(Exception):
    """The edited statements do not parse on their own."""


@dataclass(frozen=True)
class Statements:
    """Where each top-level statement of ``module`` (its leading lines included) starts in
    ``source``, as offsets; chunk 0 starts at 0 (it holds the header) and the last ends at the
    end (it holds the footer)."""

    source: str
    module: cst.Module
    starts: tuple[int, ...]
    heads: tuple[int, ...]
    """Where each statement's own first line (its first decorator's, else its own) starts."""

    @classmethod
    def of(cls, source: str, module: cst.Module) -> Statements | None:
        lines = statement_lines(source)
        body = module.body
        if not body or lines is None or len(lines) != len(body):
            return None
        line_offsets = [0] + [match.end() for match in _NEWLINE.finditer(source)]
        if lines[-1][0] > len(line_offsets):
            return None
        starts = [0]
        for (first, _own), statement in zip(lines[1:], body[1:], strict=True):
            line = first - len(statement.leading_lines)
            if not 1 <= line <= len(line_offsets) or line_offsets[line - 1] <= starts[-1]:
                return None
            starts.append(line_offsets[line - 1])
        heads = tuple(line_offsets[first - 1] for first, _own in lines)
        return cls(source, module, tuple(starts), heads)

    def chunk(self, offset: int) -> int:
        """The index of the statement whose text holds ``offset`` (the end counts as the last)."""
        return max(bisect_right(self.starts, offset) - 1, 0)

    def chunks(self, start: int, end: int) -> tuple[int, int]:
        """First and last statement that an edit of ``[start, end)`` may concern. Lines edited
        before a statement's own first line may belong to the statement above (an indented
        comment there ends that statement's block, with the comments before it), and text put
        at the end of a statement's text may belong to the next: both are parsed together."""
        first = self.chunk(start)
        if first > 0 and start <= self.heads[first]:
            first -= 1
        return first, self.chunk(end)

    def span(self, first: int, last: int) -> tuple[int, int]:
        end = self.starts[last + 1] if last + 1 < len(self.starts) else len(self.source)
        return self.starts[first], end

    def code(self, first: int, last: int) -> str:
        """The old tree's own code for statements ``first..last``: it must be their text."""
        module = self.module
        piece = module.with_changes(
            header=module.header if first == 0 else (),
            body=module.body[first : last + 1],
            footer=module.footer if last == len(module.body) - 1 else (),
            has_trailing_newline=module.has_trailing_newline or last < len(module.body) - 1,
        )
        return piece.code


@dataclass(frozen=True)
class Parsed:
    """Statements ``first..last`` re-parsed from their edited text."""

    first: int
    last: int
    text: str
    body: tuple[cst.BaseStatement, ...]
    header: tuple[cst.EmptyLine, ...]
    footer: tuple[cst.EmptyLine, ...]
    trailing_newline: bool


def parse_group(statements: Statements, first: int, last: int, edits: Sequence[Span]) -> Parsed:
    """Apply ``edits`` (offsets into the whole source) to statements ``first..last`` and parse
    them on their own. Raises Broken when they do not parse, ValueError when the old tree's
    code for them is not their text (the caller then parses the whole file)."""
    start, end = statements.span(first, last)
    old = statements.source[start:end]
    if statements.code(first, last) != old:
        raise ValueError("statement positions do not match the tree")
    text = splice(old, [(a - start, b - start, new) for a, b, new in edits])
    module = statements.module
    newline, indent = module.default_newline, module.default_indent
    # sets the defaults, and ends in a plain statement: an indented comment at the top of
    # ``text`` stays a leading line of the first statement, as in the file
    preamble = f"if 1:{newline}{indent}pass{newline}pass{newline}"
    try:
        parsed = parse_text(preamble + text)
    except (cst.ParserSyntaxError, RecursionError, ValueError) as error:
        raise Broken(str(error)) from None
    except Exception as error:  # the parser is not ours: any failure is text that does not parse
        raise Broken(f"{type(error).__name__}: {error}") from None
    body = tuple(parsed.body[2:])
    if not body:
        raise ValueError("the edited statements hold no statement")
    header: tuple[cst.EmptyLine, ...] = ()
    if first == 0:  # the lines before a file's first statement are its header
        header = tuple(body[0].leading_lines)
        body = (body[0].with_changes(leading_lines=()), *body[1:])
    is_last = last == len(module.body) - 1
    if parsed.footer and not is_last:
        raise ValueError("the edited statements end in lines that belong to the next one")
    if not is_last and not text.endswith(("\n", "\r")):
        raise ValueError("the edited statements no longer end their line")
    return Parsed(
        first, last, text, body, header, tuple(parsed.footer), parsed.has_trailing_newline
    )


def splice(text: str, edits: Sequence[Span]) -> str:
    """Apply non-overlapping offset edits (identical duplicates count once)."""
    pieces: list[str] = []
    cursor = 0
    for start, end, new in sorted(set(edits)):
        if start < cursor:
            raise ValueError(f"overlapping edits at offset {start}")
        pieces += [text[cursor:start], new]
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def assemble(statements: Statements, groups: Sequence[Parsed], fixed: str) -> cst.Module | None:
    """The module of ``fixed``: the old statements, with ``groups`` (in order, disjoint) in place
    of theirs. None when ``fixed`` does not parse with ``ast`` or does not line up with it, or
    when its first newline or indentation differs from the old text's."""
    module = statements.module
    body: list[cst.BaseStatement] = []
    changes = {"header": module.header, "footer": module.footer}
    trailing = module.has_trailing_newline
    cursor = 0
    for group in groups:
        body += module.body[cursor : group.first]
        body += group.body
        cursor = group.last + 1
        if group.first == 0:
            changes["header"] = group.header
        if group.last == len(module.body) - 1:
            changes["footer"] = group.footer
            trailing = group.trailing_newline
    body += module.body[cursor:]
    if not groups:
        return module
    changed_from = statements.span(groups[0].first, groups[0].last)[0]
    if not _same_defaults(statements.source, fixed, module, changed_from):
        return None
    lines = statement_lines(fixed)
    if lines is None or len(lines) != len(body):
        return None
    return module.with_changes(body=body, has_trailing_newline=trailing, **changes)


def _same_defaults(old: str, new: str, module: cst.Module, changed_from: int) -> bool:
    """The new text's first newline and first indentation are the old module's defaults.
    ``changed_from``: the offset in ``old`` of the first edited statement."""
    first_newline = _NEWLINE.search(new)
    if (first_newline.group() if first_newline else "\n") != module.default_newline:
        return False
    if new.count("\r") != new.count("\r\n"):
        return False  # a lone CR ends a line for libcst, not for tokenize's lines
    try:
        before = first_indent(old)
        if (before[1] if before else DEFAULT_INDENT) != module.default_indent:
            return False  # tokenize and libcst disagree: let libcst decide, on the whole text
        if before is not None and old.count("\n", 0, changed_from) + 1 > before[0]:
            return True  # the text up to the first indented line is unchanged
        after = first_indent(new)
    except (tokenize.TokenError, SyntaxError, ValueError):
        return False
    return (after[1] if after else DEFAULT_INDENT) == module.default_indent


def first_indent(text: str) -> tuple[int, str] | None:
    """The line and text of the first indentation in ``text`` (libcst's ``default_indent``), read
    by the tokenizer up to there only; None when nothing is indented."""
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.INDENT:
            return token.start[0], token.string
    return None


def apply_by_statement(source: str, fixes: Sequence[Sequence[Span]]) -> str | None:
    """Apply all the fixes (each a list of offset edits, none overlapping another's) and
    remember the new text's tree for the next lint; re-parse only the statements they touch.
    None when the whole text must be parsed instead: no tree of ``source`` to reuse, the edited
    statements do not parse (the caller finds which fix is to blame), or a check failed."""
    try:
        module = parse_module(source)  # the lint that found these fixes has just parsed it
    except Exception:  # not parsed: the whole-file path says why
        return None
    statements = Statements.of(source, module)
    if statements is None:
        return None
    groups = _groups([_range(statements, spans) for spans in fixes])
    try:
        parsed = [
            parse_group(statements, first, last, [edit for i in members for edit in fixes[i]])
            for (first, last), members in groups
        ]
    except (Broken, ValueError):
        return None
    fixed = splice(source, [edit for spans in fixes for edit in spans])
    new = assemble(statements, parsed, fixed)
    if new is None:
        return None
    remember(fixed, new)
    return fixed


def _range(statements: Statements, spans: Sequence[Span]) -> tuple[int, int]:
    touched = [statements.chunks(start, end) for start, end, _text in spans]
    return min(first for first, _ in touched), max(last for _, last in touched)


def _groups(ranges: Sequence[tuple[int, int]]) -> list[tuple[tuple[int, int], list[int]]]:
    """Statement ranges merged where they overlap, each with the fixes (by index) inside it."""
    merged: list[tuple[tuple[int, int], list[int]]] = []
    for index in sorted(range(len(ranges)), key=lambda i: ranges[i]):
        first, last = ranges[index]
        if merged and first <= merged[-1][0][1]:
            (low, high), members = merged[-1]
            merged[-1] = ((low, max(high, last)), [*members, index])
        else:
            merged.append(((first, last), [index]))
    return [(bounds, sorted(members)) for bounds, members in merged]
