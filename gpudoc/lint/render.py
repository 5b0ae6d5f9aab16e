"""The only code of gpudoc lint that writes output: text and JSON (more formats plug in here)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from gpudoc.lint.model import Finding, LintResult

if TYPE_CHECKING:
    from gpudoc.lint.fixfile import FileFix

Renderer = Callable[[LintResult, TextIO, TextIO], None]


def finding_line(finding: Finding) -> str:
    cell = f"cell {finding.cell}:" if finding.cell is not None else ""
    where = f"{finding.path}:{cell}{finding.line}:{finding.col}"
    return f"{where}: {finding.code} {finding.message}"


def summary(result: LintResult) -> str:
    findings = result.findings
    files = result.files_checked
    checked = f"{files} file{'s' * (files != 1)} checked"
    if not findings:
        text = f"No findings ({checked})."
    else:
        fixable = sum(1 for f in findings if f.fixable)
        safe = sum(1 for f in findings if f.fix is not None and f.fix.safe)
        text = f"Found {len(findings)} finding{'s' * (len(findings) != 1)} ({checked})."
        if safe:
            text += f" {safe} fixable with --fix."
        if fixable > safe:
            text += f" {fixable - safe} fixable with --fix --unsafe-fixes."
    errors = len(result.errors)
    if errors:
        text += f" {errors} file{'s' * (errors != 1)} could not be linted."
    return text


def render_text(result: LintResult, out: TextIO, err: TextIO) -> None:
    for finding in result.findings:
        out.write(finding_line(finding) + "\n")
    for error in result.errors:
        err.write(f"gpudoc lint: error: {error}\n")
    err.write(summary(result) + "\n")


def finding_json(finding: Finding) -> dict[str, Any]:
    return {
        "path": finding.path,
        "line": finding.line,
        "col": finding.col,
        "end_line": finding.end_line,
        "end_col": finding.end_col,
        "code": finding.code,
        "name": finding.name,
        "message": finding.message,
        "fixable": finding.fixable,
        "cell": finding.cell,
    }


def render_json(result: LintResult, out: TextIO, err: TextIO) -> None:
    document = {
        "findings": [finding_json(f) for f in result.findings],
        "files_checked": result.files_checked,
        "errors": list(result.errors),
    }
    out.write(json.dumps(document, indent=2) + "\n")
    for error in result.errors:
        err.write(f"gpudoc lint: error: {error}\n")


def _errors(result: LintResult, err: TextIO) -> None:
    for error in result.errors:
        err.write(f"gpudoc lint: error: {error}\n")


def render_sarif(result: LintResult, out: TextIO, err: TextIO) -> None:
    from gpudoc.lint.rule import all_rules
    from gpudoc.lint.sarif import notebook_locator, to_sarif

    locate = notebook_locator()
    document = to_sarif(result.findings, all_rules(), locate=locate, errors=result.errors)
    out.write(json.dumps(document, indent=2) + "\n")
    _errors(result, err)


def render_github(result: LintResult, out: TextIO, err: TextIO) -> None:
    from gpudoc.lint.sarif import github_annotations, github_error, notebook_locator

    out.write(github_annotations(result.findings, notebook_locator()))
    for error in result.errors:
        out.write(github_error(error) + "\n")
    err.write(summary(result) + "\n")


FORMATS: dict[str, Renderer] = {
    "text": render_text,
    "json": render_json,
    "sarif": render_sarif,
    "github": render_github,
}


def statistics(result: LintResult) -> list[dict[str, Any]]:
    """Findings per code, most frequent first (ruff's --statistics)."""
    rows: dict[str, dict[str, Any]] = {}
    for finding in result.findings:
        row = rows.setdefault(
            finding.code,
            {"code": finding.code, "name": finding.name, "count": 0, "fixable": 0},
        )
        row["count"] += 1
        row["fixable"] += finding.fixable
    return sorted(rows.values(), key=lambda row: (-row["count"], row["code"]))


def render_statistics(result: LintResult, fmt: str, out: TextIO, err: TextIO) -> None:
    """``--statistics``: one line per code (``count  code  [*] name``; [*]: fixable), or a
    JSON list of ``{code, name, count, fixable}`` for ``--output-format json``."""
    rows = statistics(result)
    if fmt == "json":
        out.write(json.dumps(rows, indent=2) + "\n")
        _errors(result, err)
        return
    width = max((len(str(row["count"])) for row in rows), default=1)
    for row in rows:
        mark = "[*] " if row["fixable"] else "    "
        out.write(f"{row['count']:>{width}}\t{row['code']}\t{mark}{row['name']}\n")
    _errors(result, err)
    err.write(summary(result) + "\n")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' * (count != 1)}"


def render_fixes(outcomes: Sequence[FileFix], err: TextIO) -> None:
    """After --fix: what was fixed (the remaining findings are rendered as usual)."""
    applied = sum(outcome.fixes_applied for outcome in outcomes)
    files = sum(1 for outcome in outcomes if outcome.changed)
    if applied:
        err.write(f"Fixed {_plural(applied, 'finding')} in {_plural(files, 'file')}.\n")
    for outcome in outcomes:
        if not outcome.converged:
            err.write(f"gpudoc lint: warning: {outcome.path}: fixes did not settle; check it\n")


def render_diff(result: LintResult, outcomes: Sequence[FileFix], out: TextIO, err: TextIO) -> None:
    """--diff: the unified diffs on stdout, what they would do on stderr."""
    for outcome in outcomes:
        out.write(outcome.diff)
    applied = sum(outcome.fixes_applied for outcome in outcomes)
    files = sum(1 for outcome in outcomes if outcome.changed)
    remaining = len(result.findings)
    unsafe = sum(1 for f in result.findings if f.fix is not None and not f.fix.safe)
    hint = f" {unsafe} more with --unsafe-fixes." if unsafe else ""
    err.write(
        f"Would fix {_plural(applied, 'finding')} in {_plural(files, 'file')}; "
        f"{_plural(remaining, 'finding')} would remain.{hint}\n"
    )
    _errors(result, err)


def render_explain(code: str, name: str, doc: str, default_on: bool, out: TextIO) -> None:
    out.write(f"{code} ({name})\n")
    if not default_on:
        out.write(f"Off by default: enable it with --select {code}.\n")
    out.write("\n" + doc.strip() + "\n")
