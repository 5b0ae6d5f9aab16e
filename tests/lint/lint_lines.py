"""The helper of the precision and recall regression tests: where one rule reports in a source."""

from __future__ import annotations

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_source


def lines(source: str, code: str) -> list[int]:
    """The lines of ``source`` on which rule ``code`` (alone) reports; the source must lint."""
    result = lint_source(source, "x.py", LintConfig(select=(code,)))
    assert result.error is None
    return [finding.line for finding in result.findings]
