"""Findings for CI dashboards: SARIF 2.1.0 (code scanning) and GitHub workflow annotations.

Pure functions from findings to text or JSON-ready dicts; render.py writes them. Rule metadata
comes from the rule classes (``CODE``, ``NAME``, ``MESSAGE``, docstring) when they are given, and
from the findings themselves otherwise. Output is sorted, so reports diff cleanly between runs.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from gpudoc import __version__
from gpudoc.lint.fix import read_source
from gpudoc.lint.model import Edit, Finding
from gpudoc.lint.notebook import Notebook, NotebookError, load

SCHEMA_URI = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
SARIF_VERSION = "2.1.0"
SRCROOT = "%SRCROOT%"

Locate = Callable[[Finding], "int | None"]
"""For a notebook finding: the line of the .ipynb file's own text that holds it (None: unknown)."""


def notebook_locator() -> Locate:
    """Where a notebook finding lies in the .ipynb file's text; reads each notebook once."""
    notebooks: dict[str, Notebook | None] = {}

    def locate(finding: Finding) -> int | None:
        if finding.cell is None:
            return None
        if finding.path not in notebooks:
            try:
                notebooks[finding.path] = load(read_source(Path(finding.path)))
            except (OSError, UnicodeDecodeError, NotebookError):
                notebooks[finding.path] = None
        notebook = notebooks[finding.path]
        return notebook.raw_line(finding.cell, finding.line) if notebook else None

    return locate


@dataclass(frozen=True)
class RuleInfo:
    code: str
    name: str
    summary: str
    doc: str
    default: bool = True
    """On unless selected otherwise (the GPD9xx band is off by default)."""


def rule_info(rule: object) -> RuleInfo:
    """The metadata of a rule class: ``CODE``, ``NAME``, ``SUMMARY``, ``DEFAULT``, docstring."""
    code = str(getattr(rule, "CODE", ""))
    name = str(getattr(rule, "NAME", code))
    summary = str(getattr(rule, "SUMMARY", "") or name)
    doc = inspect.cleandoc(getattr(rule, "__doc__", None) or "")
    return RuleInfo(code, name, summary, doc, bool(getattr(rule, "DEFAULT", True)))


def level(code: str) -> str:
    """SARIF / GitHub level: the opinion and performance band (GPD9xx) warns, the rest errors."""
    return "warning" if code.startswith("GPD9") else "error"


def _uri(path: str) -> tuple[str, str | None]:
    """(uri, uriBaseId): relative paths stay relative to the source root, as code scanning wants."""
    posix = Path(path)
    if posix.is_absolute():
        return posix.as_uri(), None
    return quote(posix.as_posix()), SRCROOT


def _artifact(path: str) -> dict[str, Any]:
    uri, base = _uri(path)
    return {"uri": uri, "uriBaseId": base} if base else {"uri": uri}


def _region(line: int, col: int, end_line: int, end_col: int) -> dict[str, int]:
    """A SARIF region from a finding's 1-based positions (``end_col`` one past the end)."""
    region = {"startLine": max(line, 1), "startColumn": max(col, 1)}
    if end_line >= line and (end_line, end_col) > (line, col):
        region |= {"endLine": end_line, "endColumn": end_col}
    return region


def _rules(findings: Sequence[Finding], rules: Iterable[object]) -> list[RuleInfo]:
    known = {info.code: info for info in map(rule_info, rules) if info.code}
    for finding in findings:
        known.setdefault(finding.code, RuleInfo(finding.code, finding.name, finding.message, ""))
    return sorted(known.values(), key=lambda info: info.code)


def _rule_json(info: RuleInfo) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "id": info.code,
        "name": info.name,
        "shortDescription": {"text": info.summary},
        "defaultConfiguration": {"level": level(info.code), "enabled": info.default},
        "properties": {"tags": ["pytorch", "device-placement"]},
    }
    if info.doc:
        first = info.doc.split("\n\n", 1)[0].replace("\n", " ")
        rule["fullDescription"] = {"text": first}
        rule["help"] = {"text": info.doc, "markdown": info.doc}
    return rule


def _fix_json(finding: Finding) -> list[dict[str, Any]]:
    if finding.fix is None or finding.cell is not None:  # cell fixes are in joined-module lines
        return []
    replacements = [_replacement(edit) for edit in finding.fix.edits]
    change = {"artifactLocation": _artifact(finding.path), "replacements": replacements}
    safety = "safe" if finding.fix.safe else "unsafe (--unsafe-fixes)"
    description = finding.fix.description or f"{finding.code} fix"
    return [{"description": {"text": f"{description} [{safety}]"}, "artifactChanges": [change]}]


def _replacement(edit: Edit) -> dict[str, Any]:
    deleted = {"startLine": edit.line, "startColumn": edit.col + 1}
    deleted |= {"endLine": edit.end_line, "endColumn": edit.end_col + 1}
    return {"deletedRegion": deleted, "insertedContent": {"text": edit.text}}


def _result(finding: Finding, index: int, locate: Locate | None) -> dict[str, Any]:
    region = _region(finding.line, finding.col, finding.end_line, finding.end_col)
    text = finding.message
    properties: dict[str, Any] = {}
    if finding.cell is not None:
        raw_line = locate(finding) if locate else None
        region = {"startLine": raw_line or 1}
        text = f"cell {finding.cell}, line {finding.line}: {text}"
        properties = {"cell": finding.cell, "cellLine": finding.line, "cellColumn": finding.col}
    location = {"physicalLocation": {"artifactLocation": _artifact(finding.path), "region": region}}
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "ruleIndex": index,
        "level": level(finding.code),
        "message": {"text": text},
        "locations": [location],
    }
    if fixes := _fix_json(finding):
        result["fixes"] = fixes
    if properties:
        result["properties"] = properties
    return result


def to_sarif(
    findings: Iterable[Finding],
    rules: Iterable[object] = (),
    *,
    locate: Locate | None = None,
    root: str | None = None,
    errors: Sequence[str] = (),
) -> dict[str, Any]:
    """One SARIF 2.1.0 log with one run of gpudoc over ``findings``; ``errors`` as notifications."""
    ordered = sorted(findings, key=report_order)
    infos = _rules(ordered, rules)
    index = {info.code: number for number, info in enumerate(infos)}
    root_uri = Path(root or os.getcwd()).resolve().as_uri().rstrip("/") + "/"
    run = {
        "tool": {
            "driver": {
                "name": "gpudoc",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": [_rule_json(info) for info in infos],
            }
        },
        "invocations": [_invocation(errors)],
        "originalUriBaseIds": {SRCROOT: {"uri": root_uri}},
        "columnKind": "unicodeCodePoints",
        "results": [_result(f, index[f.code], locate) for f in ordered],
    }
    return {"$schema": SCHEMA_URI, "version": SARIF_VERSION, "runs": [run]}


def _invocation(errors: Sequence[str]) -> dict[str, Any]:
    notes = [{"level": "error", "message": {"text": error}} for error in errors]
    invocation: dict[str, Any] = {"executionSuccessful": not errors}
    if notes:
        invocation["toolExecutionNotifications"] = notes
    return invocation


def report_order(finding: Finding) -> tuple[str, int, int, int, str]:
    """Path, then cell (notebooks), then position: the order reports list findings in."""
    return (finding.path, finding.cell or 0, finding.line, finding.col, finding.code)


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotation(finding: Finding, locate: Locate | None = None) -> str:
    """One ``::error ...::`` workflow command; GitHub shows it on the line in the pull request."""
    where = f"{finding.line}:{finding.col}"
    properties = {"title": f"gpudoc ({finding.code})", "file": finding.path}
    if finding.cell is None:
        properties |= {"line": str(finding.line), "col": str(finding.col)}
        if finding.end_line >= finding.line and finding.end_line:
            properties |= {"endLine": str(finding.end_line), "endColumn": str(finding.end_col)}
    else:
        where = f"cell {finding.cell}:{where}"
        raw_line = locate(finding) if locate else None
        if raw_line is not None:
            properties["line"] = str(raw_line)
    fields = ",".join(f"{key}={_escape_property(value)}" for key, value in properties.items())
    message = f"{finding.path}:{where}: {finding.code} {finding.message}"
    return f"::{level(finding.code)} {fields}::{_escape_data(message)}"


def github_error(error: str) -> str:
    """A file that could not be linted, as a workflow error (no line: it is about the file)."""
    path = error.split(":", 1)[0]
    return f"::error title=gpudoc lint,file={_escape_property(path)}::{_escape_data(error)}"


def github_annotations(findings: Iterable[Finding], locate: Locate | None = None) -> str:
    """Every finding as a workflow command, one per line, in a stable order."""
    ordered = sorted(findings, key=report_order)
    return "".join(github_annotation(f, locate) + "\n" for f in ordered)
