"""Properties of the fix machinery on generated programs and arbitrary edits."""

from __future__ import annotations

import libcst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from programs import PROGRAMS
from toy_lint import toy_lint

from gpudoc.lint.fix import fix_source, keeps_user_code
from gpudoc.lint.model import Edit, Finding, Fix

SNIPPETS = st.sampled_from(["(", ")", ":", "\n", " = ", ".cpu()", "x", "  ", "# c", "\\", '"'])
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def programs_with_edits(draw: st.DrawFn) -> tuple[str, list[Finding]]:
    source = draw(PROGRAMS)
    lines = source.splitlines(keepends=True)
    findings = []
    for _ in range(draw(st.integers(1, 4))):
        line = draw(st.integers(1, len(lines)))
        col = draw(st.integers(0, len(lines[line - 1].rstrip("\n"))))
        edit = Edit(line, col, line, col, draw(SNIPPETS))
        findings.append(Finding("p.py", line, col, "GPD999", "n", "m", fix=Fix((edit,))))
    return source, findings


@SETTINGS
@given(programs_with_edits())
def test_arbitrary_fixes_never_leave_unparseable_source(case: tuple[str, list[Finding]]) -> None:
    source, findings = case
    result = fix_source(source, lambda text: findings if text == source else [])
    libcst.parse_module(result.fixed)
    assert keeps_user_code(source, result.fixed)


@pytest.mark.slow
@SETTINGS
@given(PROGRAMS)
def test_toy_rule_fixes_parse_and_converge(source: str) -> None:
    result = fix_source(source, toy_lint, unsafe=True)
    libcst.parse_module(result.fixed)
    assert keeps_user_code(source, result.fixed)
    assert result.converged
    assert not [f for f in result.remaining if f.fix is not None]
    assert not fix_source(result.fixed, toy_lint, unsafe=True).changed


@SETTINGS
@given(PROGRAMS)
def test_a_source_without_findings_is_never_changed(source: str) -> None:
    result = fix_source(source, lambda text: [])
    assert result.fixed is source
