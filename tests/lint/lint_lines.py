"""The helper of the precision and recall regression tests: where one rule reports in a source."""

from __future__ import annotations

from pathlib import Path

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths, lint_source


def lines(source: str, code: str) -> list[int]:
    """The lines of ``source`` on which rule ``code`` (alone) reports; the source must lint."""
    result = lint_source(source, "x.py", LintConfig(select=(code,)))
    assert result.error is None
    return [finding.line for finding in result.findings]


def project_lines(tmp_path: Path, files: dict[str, str], code: str) -> list[int]:
    """The lines of ``main.py`` of a small project (``files``, written under ``tmp_path``) on
    which rule ``code`` reports."""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    config = LintConfig(select=(code,))
    result = lint_paths([str(tmp_path / "main.py")], config, jobs=1, use_cache=False)
    assert not result.errors
    return [finding.line for finding in result.findings]
