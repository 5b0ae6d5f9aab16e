"""One source text in, findings out: parse once, analyse once, run every rule on the facts."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from itertools import accumulate

import libcst as cst
from libcst.metadata import CodeRange

from gpudoc.lint.analysis import analyze
from gpudoc.lint.model import Edit, Finding, Fix
from gpudoc.lint.parse import parse_module
from gpudoc.lint.positions import positions
from gpudoc.lint.rule import Context, FixSpec, NodeEdit, Report, Rule, all_rules

PREFILTER = "torch"
"""Files without this text cannot hold PyTorch code: they are not parsed (as in TorchFix)."""
MAX_LINE_CHARS = 20_000
MAX_BRACKET_DEPTH = 200
"""CPython's own tokenizer limit; libcst's native parser overflows its stack far beyond it."""
NOT_BRACKETS = re.compile(r"[^()\[\]{}]+")
UNARY_RUN = re.compile(r"(?:[-+~][ \t]*){500}[\w(]")
"""500 stacked unary operators: libcst needs seconds to give up on these; Python gives up too."""
BRACKET_STEP = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}
NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]*(?:\s*,\s*[A-Z]+[0-9]*)*))?", re.I)


class SourceError(Exception):
    """The source cannot be analysed; the message is one line for the user."""


def check_source(source: str, path: str = "<stdin>") -> list[Finding]:
    """All rules' findings for ``source``, ``# noqa`` applied, sorted. Raises SourceError."""
    if PREFILTER not in source:
        return []
    longest = max((len(line) for line in source.split("\n")), default=0)
    if longest > MAX_LINE_CHARS:
        raise SourceError(f"a line of {longest} characters is too long to analyse")
    if UNARY_RUN.search(source):
        raise SourceError("too deeply nested to parse (500 stacked unary operators)")
    if _bracket_depth(source) > MAX_BRACKET_DEPTH:
        raise SourceError(
            f"brackets nested deeper than {MAX_BRACKET_DEPTH} levels (Python's limit)"
        )
    try:
        module = parse_module(source)
    except cst.ParserSyntaxError as error:
        raise SourceError(f"syntax error at {error.raw_line}:{error.raw_column + 1}") from None
    except RecursionError:
        raise SourceError("too deeply nested to parse") from None
    except cst.CSTValidationError as error:  # libcst accepted text it cannot represent
        raise SourceError(f"cannot parse: {error}") from None
    except Exception as error:  # the parser is not ours: any failure there is unparseable input
        raise SourceError(f"cannot parse ({type(error).__name__}: {error})") from None
    try:
        return _run_rules(module, source, path)
    except RecursionError:
        raise SourceError("too deeply nested to analyse") from None


def _bracket_depth(source: str) -> int:
    brackets = NOT_BRACKETS.sub("", source)
    return max(accumulate(map(BRACKET_STEP.__getitem__, brackets)), default=0)


def _run_rules(module: cst.Module, source: str, path: str) -> list[Finding]:
    facts = analyze(module).facts
    context = Context(module)
    reports: list[tuple[type[Rule], Report]] = []
    for rule in all_rules():
        if rule.PLACEMENT and not facts.flags.places:
            continue
        reports.extend((rule, report) for report in rule().check(facts, context))
    if not reports:
        return []
    nodes = [report.node for _, report in reports]
    nodes += [edit.node for _, report in reports if report.fix for edit in report.fix.edits]
    where = positions(module, source, nodes)
    lines = source.split("\n")
    findings = [_finding(path, rule, report, where, lines) for rule, report in reports]
    return sorted(f for f in findings if not _suppressed(f, lines))


def _finding(
    path: str,
    rule: type[Rule],
    report: Report,
    positions: Mapping[cst.CSTNode, CodeRange],
    lines: list[str],
) -> Finding:
    where = positions[report.node]
    fix = _fix(report.fix, positions, lines) if report.fix is not None else None
    return Finding(
        path=path,
        line=where.start.line,
        col=where.start.column + 1,
        code=rule.CODE,
        name=rule.NAME,
        message=report.message,
        end_line=where.end.line,
        end_col=where.end.column + 1,
        fix=fix,
    )


def _fix(spec: FixSpec, positions: Mapping[cst.CSTNode, CodeRange], lines: list[str]) -> Fix:
    edits = tuple(sorted(_edit(edit, positions[edit.node], lines) for edit in spec.edits))
    return Fix(edits=edits, safe=spec.safe, description=spec.description)


def _edit(edit: NodeEdit, where: CodeRange, lines: list[str]) -> Edit:
    start, end = where.start, where.end
    if edit.where == "replace":
        return Edit(start.line, start.column, end.line, end.column, edit.text)
    if edit.where == "before":
        return Edit(start.line, start.column, start.line, start.column, edit.text)
    if edit.where == "after":
        return Edit(end.line, end.column, end.line, end.column, edit.text)
    line = lines[start.line - 1]
    indent = line[: len(line) - len(line.lstrip())]
    if edit.where == "line_before":
        return Edit(start.line, 0, start.line, 0, f"{indent}{edit.text}\n")
    last = lines[end.line - 1].rstrip("\r")
    return Edit(end.line, len(last), end.line, len(last), f"\n{indent}{edit.text}")


def _suppressed(finding: Finding, lines: list[str]) -> bool:
    for number in {finding.line, finding.end_line}:
        if not 0 < number <= len(lines) or "noqa" not in lines[number - 1].lower():
            continue
        match = NOQA.search(lines[number - 1])
        if match is None:
            continue
        codes = match.group("codes")
        if codes is None or _matches(finding.code, codes.split(",")):
            return True
    return False


def _matches(code: str, prefixes: Iterable[str]) -> bool:
    return any(code.startswith(prefix.strip().upper()) for prefix in prefixes if prefix.strip())
