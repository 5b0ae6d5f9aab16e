"""Fix one file on disk, script or notebook: the ``--fix`` / ``--diff`` worker; it never prints."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from gpudoc.lint.cells import fix_notebook
from gpudoc.lint.config import LintConfig
from gpudoc.lint.fix import Lint, fix_source, read_source, unified_diff, write_source
from gpudoc.lint.model import FileResult, Finding, LintResult
from gpudoc.lint.notebook import NotebookError, load


@dataclass(frozen=True)
class FileFix:
    """What fixing one file did, or would do with ``--diff``."""

    path: str
    fixes_applied: int
    diff: str
    """Unified diff of the change (per cell for a notebook); empty when nothing changed."""
    remaining: tuple[Finding, ...]
    errors: tuple[str, ...] = ()
    """One line each: why the file, or a cell of it, could not be checked or fixed."""
    converged: bool = True

    @property
    def changed(self) -> bool:
        return bool(self.diff)


def fix_file(path: Path, display: str, lint: Lint, *, unsafe: bool, write: bool) -> FileFix:
    """Fix ``path`` (reported as ``display``); write it only when ``write`` and it changed."""
    try:
        text = read_source(path)
    except (OSError, UnicodeDecodeError) as error:
        return FileFix(display, 0, "", (), (f"{display}: cannot read: {error}",))
    if path.suffix == ".ipynb":
        return _fix_notebook(path, display, text, lint, unsafe=unsafe, write=write)
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    text = text[len(bom) :]
    result = fix_source(text, lint, unsafe=unsafe)
    if result.changed and write:
        write_source(path, bom + result.fixed)
    remaining = tuple(replace(finding, path=display) for finding in result.remaining)
    diff = unified_diff(text, result.fixed, display)
    return FileFix(display, len(result.applied), diff, remaining, (), result.converged)


def _fix_notebook(
    path: Path, display: str, text: str, lint: Lint, *, unsafe: bool, write: bool
) -> FileFix:
    try:
        notebook = load(text)
        if notebook.language != "python":
            return FileFix(display, 0, "", ())
        fixed = fix_notebook(notebook, display, lint, unsafe=unsafe)
    except NotebookError as error:
        return FileFix(display, 0, "", (), (f"{display}: {error}",))
    if fixed.text != text and write:
        write_source(path, fixed.text)
    diff = "".join(
        unified_diff(
            fixed.before[index] + "\n", fixed.after[index] + "\n", f"{display}:cell {index}"
        )
        for index in sorted(fixed.after)
    )
    errors = tuple(f"{display}:cell {cell}: {message}" for cell, message in fixed.errors)
    applied = len(fixed.result.applied)
    return FileFix(display, applied, diff, fixed.remaining, errors, fixed.result.converged)


def _wants_fix(findings: tuple[Finding, ...], unsafe: bool) -> bool:
    return any(f.fix is not None and (f.fix.safe or unsafe) for f in findings)


def fix_result(
    result: LintResult, config: LintConfig, *, unsafe: bool, write: bool
) -> tuple[LintResult, tuple[FileFix, ...]]:
    """Fix every file of a lint run that has a fix to apply; the result is what remains."""
    from gpudoc.lint.engine import python_findings

    files: list[FileResult] = []
    fixes: list[FileFix] = []
    for file in result.files:
        if file.path == "<stdin>" or not _wants_fix(file.findings, unsafe):
            files.append(file)
            continue

        def lint(text: str, display: str = file.path) -> list[Finding]:
            return python_findings(text, display, config)

        outcome = fix_file(Path(file.path), file.path, lint, unsafe=unsafe, write=write)
        fixes.append(outcome)
        error = file.error or ("; ".join(outcome.errors) or None)
        files.append(FileResult(file.path, outcome.remaining, error=error))
    return LintResult(tuple(files)), tuple(fixes)
