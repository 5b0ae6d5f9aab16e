"""Realistic scripts in fixtures/lint with the expected findings annotated on their lines.

`# expect: GPD101` marks a finding that must be reported on that line; `# miss: GPD101` marks a
real bug the linter is known not to find (it counts against recall, and the test fails when it is
found after all, so the annotation stays honest). Everything else must stay quiet.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REPO

from gpudoc.lint.engine import lint_source

FIXTURES = [
    *sorted((REPO / "fixtures" / "lint").glob("*.py")),
    REPO / "fixtures" / "cifar_tutorial.py",
]
MARK = re.compile(r"#\s*(expect|miss):\s*(GPD\d{3}(?:\s*,\s*GPD\d{3})*)")
TUTORIAL_EXPECTED = {(81, "GPD102"), (89, "GPD101"), (102, "GPD101")}


def annotations(path: Path) -> tuple[set[tuple[int, str]], set[tuple[int, str]]]:
    expected: set[tuple[int, str]] = set()
    missed: set[tuple[int, str]] = set()
    if path.name == "cifar_tutorial.py":  # verbatim: its expectations cannot live in comments
        return set(TUTORIAL_EXPECTED), missed
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        for match in MARK.finditer(line):
            target = expected if match.group(1) == "expect" else missed
            target.update((number, code.strip()) for code in match.group(2).split(","))
    return expected, missed


def found(path: Path) -> set[tuple[int, str]]:
    result = lint_source(path.read_text(encoding="utf-8"), str(path))
    assert result.error is None, result.error
    return {(f.line, f.code) for f in result.findings}


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_fixture_findings_match_annotations(path: Path) -> None:
    expected, missed = annotations(path)
    actual = found(path)
    assert actual - expected == set(), "unexpected findings (false positives)"
    assert expected - actual == set(), "expected findings not reported"
    assert missed & actual == set(), "a known miss is found now: change its `miss` to `expect`"


def test_precision_and_recall_on_the_fixtures() -> None:
    true_positives = false_positives = false_negatives = 0
    for path in FIXTURES:
        expected, missed = annotations(path)
        actual = found(path)
        true_positives += len(actual & expected)
        false_positives += len(actual - expected)
        false_negatives += len(expected - actual) + len(missed)
    precision = true_positives / (true_positives + false_positives)
    recall = true_positives / (true_positives + false_negatives)
    print(
        f"fixtures: P={precision:.2f} R={recall:.2f} TP={true_positives} "
        f"FP={false_positives} FN={false_negatives}"
    )
    assert precision >= 0.90 and recall >= 0.85
