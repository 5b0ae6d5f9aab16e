"""One source text in, findings out: parse once, walk once with the rules listening."""

from __future__ import annotations

import ast
import os
from collections.abc import Callable, Mapping
from pathlib import Path

import libcst as cst
from libcst.metadata import CodeRange

from gpudoc.lint import visit
from gpudoc.lint.analysis import analyze
from gpudoc.lint.analysis.events import EventBus
from gpudoc.lint.analysis.names import top_level_runs
from gpudoc.lint.dead_code import without_dead_blocks
from gpudoc.lint.gc_pause import gc_paused
from gpudoc.lint.model import Edit, Finding, Fix
from gpudoc.lint.noqa import Directive, noqa_directives
from gpudoc.lint.parse import parse_module, too_big_to_parse
from gpudoc.lint.positions import positions
from gpudoc.lint.project import ProjectModule, resolving_once
from gpudoc.lint.rule import Context, FixSpec, NodeEdit, Report, Rule, all_rules

PREFILTER = "torch"
"""Files without this text cannot hold PyTorch code: they are not parsed (as in TorchFix)."""
UNUSED_NOQA = "GPD902"


class SourceError(Exception):
    """The source cannot be analysed; the message is one line for the user."""


Enabled = Callable[[str], bool]
"""Whether the findings of a rule code are wanted (the configuration's --select / --ignore)."""


def check_source(
    source: str, path: str = "<stdin>", enabled: Enabled | None = None
) -> list[Finding]:
    """The findings of the ``enabled`` rules (all when None) for ``source``, ``# noqa``
    applied, sorted. Only those rules are built and listen to the walk. Raises SourceError."""
    if PREFILTER not in source:
        return []
    try:
        with gc_paused(), resolving_once():
            return _check(source, path, enabled)
    finally:
        visit.forget()


def _check(source: str, path: str, enabled: Enabled | None) -> list[Finding]:
    refused = too_big_to_parse(source)
    if refused is not None:
        raise SourceError(refused)
    try:
        module = parse_module(source)
    except cst.ParserSyntaxError as error:
        raise SourceError(syntax_error(source, error)) from None
    except RecursionError:
        raise SourceError("too deeply nested to parse") from None
    except cst.CSTValidationError as error:  # libcst accepted text it cannot represent
        raise SourceError(f"cannot parse: {error}") from None
    except Exception as error:  # the parser is not ours: any failure there is unparseable input
        raise SourceError(f"cannot parse ({type(error).__name__}: {error})") from None
    try:
        return _run_rules(module, source, path, enabled)
    except RecursionError:
        raise SourceError("too deeply nested to analyse") from None


def syntax_error(source: str, error: cst.ParserSyntaxError) -> str:
    """Where and what, as Python itself says it: libcst's own position is often a line late.

    ``compile`` only parses (nothing runs); libcst's text is the fallback for the rare source
    that one parser accepts and the other does not.
    """
    try:
        compile(source, "<lint>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as python:
        if python.lineno is not None:
            column = f":{python.offset}" if python.offset else ""
            return f"syntax error at {python.lineno}{column}: {python.msg}"
    except (ValueError, RecursionError, MemoryError):
        pass
    else:
        tabbed = _tab_indented_line(source)
        if tabbed is not None and "dent" in error.message:
            return (
                f"libcst, the parser gpudoc reads with, refuses the tab in the indentation of "
                f"line {tabbed} (Python accepts it): indent that block with spaces only"
            )
    return f"syntax error at {error.raw_line}:{error.raw_column + 1}: {error.message}"


def _tab_indented_line(source: str) -> int | None:
    """The first line whose indentation mixes a tab with spaces (or follows one that does)."""
    for number, line in enumerate(source.splitlines(), 1):
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        if "\t" in indent and " " in indent:
            return number
    return None


def rules_to_run(enabled: Enabled | None) -> list[type[Rule]]:
    """The rules whose findings are wanted. GPD902 (a ``# noqa`` that silenced nothing) needs
    every rule's findings: wanting it runs them all."""
    if enabled is None or enabled(UNUSED_NOQA):
        return list(all_rules())
    return [rule for rule in all_rules() if enabled(rule.CODE)]


def _run_rules(
    module: cst.Module, source: str, path: str, enabled: Enabled | None
) -> list[Finding]:
    rules = [rule() for rule in rules_to_run(enabled)]
    bus = EventBus()
    for rule in rules:
        rule.subscribe(bus)
    live = without_dead_blocks(module, source)  # what runs; positions are the file's own
    analyzer = analyze(live, bus, path)
    flags = analyzer.flags
    library = not flags.places and _is_library(live, path)
    context = Context(live, flags, library=library, path=path)
    reports: list[tuple[type[Rule], Report]] = []
    seen: set[tuple[str, cst.CSTNode]] = set()
    for rule in rules:
        if rule.PLACEMENT and not flags.places and not (rule.IN_LIBRARIES and context.library):
            continue
        for report in rule.check(context):
            # a body walked at several call sites, or a loop body walked twice, reports its
            # node again: once is enough
            if (rule.CODE, report.node) not in seen:
                seen.add((rule.CODE, report.node))
                reports.append((type(rule), report))
    directives = noqa_directives(source)
    if not reports and not directives:
        return []
    nodes = [report.node for _, report in reports]
    nodes += [edit.node for _, report in reports if report.fix for edit in report.fix.edits]
    where = positions(module, source, nodes)
    # a project module's body walked for a call here reports on its own file's nodes: the
    # finding is that file's, found with this file's values (a device index handed to a host
    # table of a scheduler class); its own run cannot see them
    elsewhere = [(rule, report) for rule, report in reports if not _in_file(report, where)]
    reports = [(rule, report) for rule, report in reports if _in_file(report, where)]
    lines = source.split("\n")
    findings = [_finding(path, rule, report, where, lines) for rule, report in reports]
    kept = [f for f in findings if not _suppressed(f, directives)]
    if elsewhere and not path.endswith(".ipynb"):
        kept += _project_findings(elsewhere, analyzer.project_files(), path)
    unused = _unused(directives, path) if enabled is None or enabled(UNUSED_NOQA) else []
    return sorted(kept + unused)


def _project_findings(
    reports: list[tuple[type[Rule], Report]], modules: list[ProjectModule], path: str
) -> list[Finding]:
    """Findings on the nodes of the project modules this file's walk went through, shown at
    their own file and line (without a fix: this run does not edit that file)."""
    found: list[Finding] = []
    here = Path(path).resolve().parent
    for project_module in modules:
        where = positions(
            project_module.module, project_module.source, [r.node for _, r in reports]
        )
        through = f" (through a call in `{Path(path).name}`)"
        mine = [
            (rule, Report(r.node, r.message + through)) for rule, r in reports if r.node in where
        ]
        if not mine:
            continue
        shown = os.path.normpath(
            os.path.join(os.path.dirname(path), os.path.relpath(project_module.path, here))
        )
        lines = project_module.source.split("\n")
        directives = noqa_directives(project_module.source)
        findings = [_finding(shown, rule, report, where, lines) for rule, report in mine]
        found += [f for f in findings if not _suppressed(f, directives)]
    return found


def _in_file(report: Report, positions: Mapping[cst.CSTNode, CodeRange]) -> bool:
    edits = report.fix.edits if report.fix is not None else ()
    return report.node in positions and all(edit.node in positions for edit in edits)


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
        column = _past_parens(lines[start.line - 1], start.column, edit.node, "lpar")
        return Edit(start.line, column, start.line, column, edit.text)
    if edit.where == "after":
        column = _past_parens(lines[end.line - 1], end.column, edit.node, "rpar")
        return Edit(end.line, column, end.line, column, edit.text)
    line = lines[start.line - 1]
    indent = line[: len(line) - len(line.lstrip())]
    if edit.where == "line_before":
        return Edit(start.line, 0, start.line, 0, f"{indent}{edit.text}\n")
    last = lines[end.line - 1].rstrip("\r")
    return Edit(end.line, len(last), end.line, len(last), f"\n{indent}{edit.text}")


def _past_parens(line: str, column: int, node: cst.CSTNode, side: str) -> int:
    """A position excludes a node's own parentheses (``(n, 1)`` of ``torch.ones((n, 1))``
    ends before its ``)``): text inserted after the node goes after them, text before it before
    them. Parentheses over several lines keep the position (the insertion stays inside)."""
    count = len(getattr(node, side, ()))
    step, paren = (1, ")") if side == "rpar" else (-1, "(")
    at = column if step == 1 else column - 1
    while count and 0 <= at < len(line):
        if line[at] == paren:
            count -= 1
        elif not line[at].isspace():
            return column
        at += step
    if count:
        return column
    return at if step == 1 else at + 1


def _suppressed(finding: Finding, directives: dict[int, Directive]) -> bool:
    """Exact codes, as ruff reads them: ``# noqa: GPD201`` does not silence GPD202."""
    for number in (finding.line, finding.end_line):
        directive = directives.get(number)
        if directive is None:
            continue
        if directive.codes is None or finding.code in directive.codes:
            directive.used.add(finding.code)
            return True
    return False


def _unused(directives: dict[int, Directive], path: str) -> list[Finding]:
    """GPD902 findings for the GPD codes of ``# noqa`` comments that silenced nothing."""
    from gpudoc.lint.rule import rule_by_code

    rule = rule_by_code(UNUSED_NOQA)
    if rule is None:
        return []
    found: list[Finding] = []
    for directive in directives.values():
        unused = [
            code
            for code in directive.codes or ()
            if code.startswith("GPD") and code not in directive.used and code != UNUSED_NOQA
        ]
        if unused:
            shown = ", ".join(unused)
            message = f"unused `noqa` directive: nothing here is reported as {shown}"
            col = directive.col + 1
            found.append(
                Finding(path, directive.line, col, rule.CODE, rule.NAME, message,
                        end_line=directive.line, end_col=col)
            )  # fmt: skip
    return found


def _is_library(module: cst.Module, path: str) -> bool:
    """A module for others to import: a ``.py`` file whose top level only defines things (no
    ``if __name__ == "__main__":``, no loop or call statement of a script). A script or
    notebook that never places anything runs on the CPU, and says so."""
    return path.endswith(".py") and not top_level_runs(module)
