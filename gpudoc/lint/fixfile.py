"""Fix one file on disk, script or notebook: the ``--fix`` / ``--diff`` worker; it never prints."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from gpudoc.lint.cells import fix_notebook
from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import source_key
from gpudoc.lint.fix import (
    Lint,
    fix_source,
    read_python,
    read_source,
    unified_diff,
    write_source,
)
from gpudoc.lint.model import FileResult, Finding, LintResult
from gpudoc.lint.notebook import NotebookError, load

BOM = "\ufeff"


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


def fix_file(
    path: Path,
    display: str,
    lint: Lint,
    *,
    unsafe: bool,
    write: bool,
    linted: FileResult | None = None,
) -> FileFix:
    """Fix ``path`` (reported as ``display``); write it only when ``write`` and it changed.
    ``linted``: the lint run's result for this file, reused if the file still reads the same."""
    if path.suffix == ".ipynb":
        return _fix_notebook(path, display, lint, unsafe=unsafe, write=write)
    try:
        text, encoding = read_python(path)
    except (OSError, SyntaxError, ValueError) as error:
        return FileFix(display, 0, "", (), (f"{display}: cannot read: {_reason(error)}",))
    # the key the lint run computed: the text and the stamps of what its findings depend on
    same = linted is not None and linted.source_key == source_key(text, display)
    findings = linted.findings if same and linted is not None else None
    result = fix_source(text, lint, unsafe=unsafe, findings=findings)
    remaining = tuple(_tried(replace(f, path=display), unsafe) for f in result.remaining)
    diff = unified_diff(text, result.fixed, display)
    problem = _write(path, result.fixed, encoding) if result.changed and write else None
    if problem is not None:
        unfixed = tuple(replace(finding, path=display) for finding in lint(text))
        return FileFix(display, 0, "", unfixed, (f"{display}: cannot write the fixes: {problem}",))
    return FileFix(display, len(result.applied), diff, remaining, (), result.converged)


def _tried(finding: Finding, unsafe: bool) -> Finding:
    """A finding still there after its fix was allowed: the fix did not resolve it (it came
    back, or would break the file), so the summary must not call it fixable."""
    fix = finding.fix
    if fix is not None and (fix.safe or unsafe):
        return replace(finding, fix=None)
    return finding


def _reason(error: Exception) -> str:
    return error.strerror if isinstance(error, OSError) and error.strerror else str(error)


def _write(path: Path, text: str, encoding: str) -> str | None:
    """Write the fixed text; the reason when that fails (the file is then left as it was)."""
    try:
        write_source(path, text, encoding)
    except (OSError, UnicodeEncodeError) as error:
        return _reason(error)
    return None


def _fix_notebook(path: Path, display: str, lint: Lint, *, unsafe: bool, write: bool) -> FileFix:
    try:
        text = read_source(path)
    except (OSError, ValueError) as error:
        return FileFix(display, 0, "", (), (f"{display}: cannot read: {_reason(error)}",))
    bom = BOM if text.startswith(BOM) else ""  # lint reads past it (utf-8-sig): so does the fix
    text = text.removeprefix(bom)
    try:
        notebook = load(text)
        if notebook.language != "python":
            return FileFix(display, 0, "", ())
        fixed = fix_notebook(notebook, display, lint, unsafe=unsafe)
    except NotebookError as error:
        return FileFix(display, 0, "", (), (f"{display}: {error}",))
    problem = _write(path, bom + fixed.text, "utf-8") if fixed.text != text and write else None
    if problem is not None:
        return FileFix(display, 0, "", (), (f"{display}: cannot write the fixes: {problem}",))
    diff = "".join(
        unified_diff(
            fixed.before[index] + "\n", fixed.after[index] + "\n", f"{display}:cell {index}"
        )
        for index in sorted(fixed.after)
    )
    errors = tuple(f"{display}:cell {cell}: {message}" for cell, message in fixed.errors)
    applied = len(fixed.result.applied)
    remaining = tuple(_tried(finding, unsafe) for finding in fixed.remaining)
    return FileFix(display, applied, diff, remaining, errors, fixed.result.converged)


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
        # A file the run could not lint in full (a cell that does not parse) is not rewritten.
        if file.path == "<stdin>" or file.error or not _wants_fix(file.findings, unsafe):
            files.append(file)
            continue

        def lint(text: str, display: str = file.path) -> list[Finding]:
            return python_findings(text, display, config)

        outcome = fix_file(
            Path(file.path), file.path, lint, unsafe=unsafe, write=write, linted=file
        )
        fixes.append(outcome)
        error = file.error or ("; ".join(outcome.errors) or None)
        files.append(FileResult(file.path, outcome.remaining, error=error, partial=file.partial))
    return LintResult(tuple(files)), tuple(fixes)
