"""The only code of gpudoc lint that writes output: text and JSON (more formats plug in here)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TextIO

from gpudoc.lint.model import Finding, LintResult

Renderer = Callable[[LintResult, TextIO, TextIO], None]


def finding_line(finding: Finding) -> str:
    return f"{finding.path}:{finding.line}:{finding.col}: {finding.code} {finding.message}"


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


FORMATS: dict[str, Renderer] = {"text": render_text, "json": render_json}


def render_explain(code: str, name: str, doc: str, default_on: bool, out: TextIO) -> None:
    out.write(f"{code} ({name})\n")
    if not default_on:
        out.write(f"Off by default: enable it with --select {code}.\n")
    out.write("\n" + doc.strip() + "\n")
