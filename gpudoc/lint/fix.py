"""Apply fixes to source text: edit only what a fix names, write only code that parses.

A fix is a set of position-based edits on the original text (model.Edit), so every byte no edit
touches -- comments, blank lines, quotes, line endings -- stays as it was. The rules here:

* only safe fixes, unless unsafe ones are asked for;
* a fix whose edits overlap an edit already chosen is skipped (whole, never half-applied); the
  next round of the fix loop gets another chance at it;
* an edit may add code around the user's code but never remove it: every non-whitespace character
  it replaces must reappear, in order, in its new text;
* the result must parse (Python's parser, and libcst's for the next lint); fixes that break it
  are dropped one by one;
* the loop re-lints the fixed text and applies again until nothing changes, so a second
  ``--fix`` run is a no-op.
"""

from __future__ import annotations

import ast
import difflib
import io
import os
import re
import tempfile
import tokenize
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import libcst

from gpudoc.lint.gc_pause import gc_paused
from gpudoc.lint.model import Edit, Finding, Fix
from gpudoc.lint.origin import Origin
from gpudoc.lint.parse import parse_module, remember, remembered
from gpudoc.lint.reparse import apply_by_statement

MAX_ROUNDS = 10
"""Fix rounds before giving up: a rule whose fix keeps re-firing must not loop for ever."""

_NEWLINE = re.compile(r"\r\n|\r|\n")

Lint = Callable[[str], Sequence[Finding]]
"""Lints one source text and returns its findings (with their fixes)."""


@dataclass(frozen=True)
class FixResult:
    """What fixing one source did: the new text and the findings that remain in it."""

    source: str
    fixed: str
    applied: tuple[Fix, ...]
    remaining: tuple[Finding, ...]
    converged: bool = True
    rejected: tuple[Fix, ...] = field(default=())
    """Fixes dropped because the result would not parse or would delete user code."""

    @property
    def changed(self) -> bool:
        return self.fixed != self.source


def line_starts(text: str) -> list[int]:
    """Offsets of the first character of each line; index 0 is line 1 (as libcst counts)."""
    return [0] + [match.end() for match in _NEWLINE.finditer(text)]


def offset(starts: Sequence[int], text: str, line: int, col: int) -> int:
    """The string offset of a (1-based line, 0-based column) position, clamped into ``text``."""
    if line < 1:
        return 0
    if line > len(starts):
        return len(text)
    return min(starts[line - 1] + col, len(text))


def _span(starts: Sequence[int], text: str, edit: Edit) -> tuple[int, int]:
    start = offset(starts, text, edit.line, edit.col)
    return start, max(start, offset(starts, text, edit.end_line, edit.end_col))


def keeps_user_code(old: str, new: str) -> bool:
    """True when every non-whitespace character of ``old`` appears, in order, in ``new``."""
    remaining = iter("".join(new.split()))
    return all(char in remaining for char in "".join(old.split()))


def _conflicts(span: tuple[int, int], text: str, taken: dict[tuple[int, int], str]) -> bool:
    """Overlap with a chosen edit; an insertion at the very same point counts unless identical."""
    start, end = span
    for (other_start, other_end), other_text in taken.items():
        if (start, end) == (other_start, other_end):
            if text != other_text:
                return True
        elif start < other_end and other_start < end:
            return True
    return False


def choose_fixes(
    source: str, findings: Iterable[Finding], *, unsafe: bool = False
) -> tuple[list[Fix], list[Fix]]:
    """Pick the fixes to apply, in finding order: (chosen, rejected as deleting user code)."""
    starts = line_starts(source)
    taken: dict[tuple[int, int], str] = {}
    chosen: list[Fix] = []
    rejected: list[Fix] = []
    for finding in sorted(findings):
        fix = finding.fix
        if fix is None or not fix.edits or (not fix.safe and not unsafe) or fix in chosen:
            continue
        spans = [_span(starts, source, edit) for edit in fix.edits]
        pairs = list(zip(spans, fix.edits, strict=True))
        if not all(keeps_user_code(source[a:b], e.text) for (a, b), e in pairs):
            rejected.append(fix)
            continue
        if any(_conflicts(span, e.text, taken) for span, e in pairs):
            continue
        taken.update((span, e.text) for span, e in pairs)
        chosen.append(fix)
    return chosen, rejected


def apply_edits(source: str, edits: Iterable[Edit]) -> str:
    """Apply non-overlapping edits to ``source``; identical duplicates count once."""
    starts = line_starts(source)
    spans = sorted({(*_span(starts, source, edit), edit.text) for edit in edits})
    pieces: list[str] = []
    cursor = 0
    for start, end, text in spans:
        if start < cursor:
            raise ValueError(f"overlapping edits at offset {start}")
        pieces += [source[cursor:start], text]
        cursor = end
    pieces.append(source[cursor:])
    return "".join(pieces)


def parses(source: str) -> bool:
    try:
        parse_module(source)  # remembered: the next round lints this text without parsing again
    except (libcst.ParserSyntaxError, RecursionError, ValueError):
        return False
    return True


def compiles(source: str) -> bool:
    """Python's own parser accepts ``source`` (nothing runs): the authority on what parses, at
    a fraction of libcst's cost, for texts whose tree nobody needs."""
    try:
        with warnings.catch_warnings():  # "invalid escape sequence" and the like: not ours
            warnings.simplefilter("ignore")
            compile(source, "<fix>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _apply_parsing(source: str, fixes: Sequence[Fix]) -> tuple[str, list[Fix], list[Fix]]:
    """Apply ``fixes`` together; when that does not parse, keep the ones that do, one by one.
    Python's parser sorts them out; libcst must parse the text to be linted next too (its tree
    is needed then), and decides alone where Python cannot parse the source at all (syntax newer
    than this Python)."""
    if not fixes:
        return source, [], []
    starts = line_starts(source)
    spans = [[(*_span(starts, source, edit), edit.text) for edit in fix.edits] for fix in fixes]
    by_statement = apply_by_statement(source, spans)
    if by_statement is not None:  # only the statements the fixes touch were parsed again
        return by_statement, list(fixes), []
    python = compiles(source)

    def both(text: str) -> bool:
        return (not python or compiles(text)) and parses(text)

    fixed = apply_edits(source, (edit for fix in fixes for edit in fix.edits))
    if both(fixed):
        return fixed, list(fixes), []
    if python:  # libcst only for the text that remains, unless the two parsers disagree
        kept, dropped = _one_by_one(source, fixes, compiles)
        fixed = apply_edits(source, (edit for fix in kept for edit in fix.edits))
        if not kept or parses(fixed):
            return fixed, kept, dropped
    kept, dropped = _one_by_one(source, fixes, both)
    return apply_edits(source, (edit for fix in kept for edit in fix.edits)), kept, dropped


def _one_by_one(
    source: str, fixes: Sequence[Fix], check: Callable[[str], bool]
) -> tuple[list[Fix], list[Fix]]:
    """The fixes kept in order while the text with them still passes ``check``; the others."""
    kept: list[Fix] = []
    dropped: list[Fix] = []
    for fix in fixes:
        candidate = apply_edits(source, (edit for f in [*kept, fix] for edit in f.edits))
        (kept if check(candidate) else dropped).append(fix)
    return kept, dropped


def fix_source(
    source: str, lint: Lint, *, unsafe: bool = False, findings: Sequence[Finding] | None = None
) -> FixResult:
    """Lint, fix, re-lint until no chosen fix is left (at most MAX_ROUNDS rounds).

    ``findings``: what ``lint(source)`` gives, when the caller has it already (the lint run
    that found the fixes): the first round then costs no analysis.

    A fix that comes back unchanged after it was applied did not remove its finding: applying
    it again would add the same code again, here and in every later ``--fix`` run. The fixing
    then starts over from ``source`` without it, so a second run changes nothing."""
    banned: set[Signature] = set()
    linted = _Memo(lint)
    if findings is not None:
        linted.known[source] = tuple(findings)
    tree = remembered(source)  # the lint run that found the fixes has just parsed it
    with gc_paused():
        while True:
            result, refired = _fix_rounds(source, linted, unsafe, None, banned)
            if not refired or refired <= banned:
                return result
            banned |= refired
            tree = _start_over(source, tree)


def _start_over(source: str, tree: libcst.Module | None) -> libcst.Module | None:
    """Make ``source``'s tree the remembered one again, so that the first round after starting
    over re-parses only the statements it edits. The fixed trees share the statements they did
    not edit with this one: keeping it costs little memory."""
    if tree is not None:
        remember(source, tree)
        return tree
    try:
        return parse_module(source)
    except Exception:  # not libcst's to parse: the round parses the whole text and says why
        return None


class _Memo:
    """``lint``, once per text: starting over from the source costs no second analysis."""

    def __init__(self, lint: Lint) -> None:
        self.lint = lint
        self.known: dict[str, tuple[Finding, ...]] = {}

    def __call__(self, text: str) -> tuple[Finding, ...]:
        found = self.known.get(text)
        if found is None:
            found = self.known[text] = tuple(self.lint(text))
        return found


Signature = tuple[str, str, tuple[str, ...], int]
"""A fix by content and place: its finding's code, the stripped line it is on, the texts it
writes, and where its finding starts in the original source. Identical lines (a script pasted
twice) are different places: fixing one is not the other's fix coming back."""


def _signatures(source: str, findings: Sequence[Finding], origin: Origin) -> dict[int, Signature]:
    lines = source.splitlines()
    starts = line_starts(source)
    return {
        id(finding.fix): (
            finding.code,
            lines[finding.line - 1].strip() if 0 < finding.line <= len(lines) else "",
            tuple(edit.text for edit in finding.fix.edits),
            origin.source_offset(offset(starts, source, finding.line, max(finding.col - 1, 0))),
        )
        for finding in findings
        if finding.fix is not None
    }


def _fix_rounds(
    source: str,
    lint: Lint,
    unsafe: bool,
    findings: Sequence[Finding] | None,
    banned: set[Signature],
) -> tuple[FixResult, set[Signature]]:
    """The fix loop; also the signatures of fixes that came back after being applied."""
    current = source
    findings = tuple(lint(current) if findings is None else findings)
    applied: list[Fix] = []
    rejected: list[Fix] = []
    done: set[Signature] = set()
    origin = Origin()
    for _round in range(MAX_ROUNDS):
        chosen, deleting = choose_fixes(current, findings, unsafe=unsafe)
        rejected += deleting
        signatures = _signatures(current, findings, origin)
        refired = {signatures[id(fix)] for fix in chosen if signatures[id(fix)] in done}
        if refired - banned:
            return FixResult(source, current, tuple(applied), findings, False), refired
        rejected += [fix for fix in chosen if signatures[id(fix)] in banned]
        chosen = [fix for fix in chosen if signatures[id(fix)] not in banned]
        fixed, kept, broken = _apply_parsing(current, chosen)
        rejected += broken
        if fixed == current:
            result = FixResult(source, current, tuple(applied), findings, True, tuple(rejected))
            return result, set()
        applied += kept
        done.update(signatures[id(fix)] for fix in kept)
        starts = line_starts(current)
        origin.applied(
            (*_span(starts, current, edit), edit.text) for fix in kept for edit in fix.edits
        )
        current = fixed
        findings = tuple(lint(current))
    return FixResult(source, current, tuple(applied), findings, False, tuple(rejected)), set()


def unified_diff(before: str, after: str, path: str) -> str:
    """A ``git diff``-style unified diff of one file; empty when nothing changed."""
    if before == after:
        return ""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
    )
    out: list[str] = []
    for line in lines:
        if line.endswith(("\n", "\r")):
            out.append(line)
        else:
            out += [line, "\n\\ No newline at end of file\n"]
    return "".join(out)


def read_source(path: Path) -> str:
    """Read a UTF-8 file (a notebook's JSON) as text, keeping its line endings exactly."""
    with path.open(encoding="utf-8", newline="") as handle:
        return handle.read()


def read_python(path: Path) -> tuple[str, str]:
    """A script's text as Python decodes it (coding cookie, BOM), line endings kept; and the
    encoding to write it back in. Raises OSError, SyntaxError (bad cookie) or ValueError."""
    data = path.read_bytes()
    encoding, _lines = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding), encoding


def write_source(path: Path, text: str, encoding: str = "utf-8") -> None:
    """Replace the file behind ``path`` (through symlinks) atomically, keeping its mode."""
    target = path.resolve()
    mode = target.stat().st_mode & 0o7777
    handle, temporary = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"
    )
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(text.encode(encoding))
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
