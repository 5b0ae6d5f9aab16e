"""Each rule's VALID examples draw no finding from it; each INVALID one exactly one, as stated."""

from __future__ import annotations

import libcst as cst
import pytest

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_source
from gpudoc.lint.fix import apply_edits
from gpudoc.lint.rule import Invalid, Rule, all_rules

VALID = [(rule, code) for rule in all_rules() for code in rule.VALID]
INVALID = [(rule, example) for rule in all_rules() for example in rule.INVALID]


def _own(rule: type[Rule], code: str) -> list[tuple[int, int]]:
    findings = lint_source(code, "example.py", LintConfig(select=(rule.CODE,))).findings
    return [(f.line, f.col) for f in findings if f.code == rule.CODE]


@pytest.mark.parametrize(
    ("rule", "code"), VALID, ids=[f"{r.CODE}-{i}" for i, (r, _) in enumerate(VALID)]
)
def test_valid_example_is_quiet(rule: type[Rule], code: str) -> None:
    cst.parse_module(code)
    assert _own(rule, code) == []


@pytest.mark.parametrize(
    ("rule", "example"), INVALID, ids=[f"{r.CODE}-{i}" for i, (r, _) in enumerate(INVALID)]
)
def test_invalid_example_is_reported_where_stated(rule: type[Rule], example: Invalid) -> None:
    assert _own(rule, example.code) == [(example.line, example.col)]


def test_every_rule_is_documented_and_has_examples() -> None:
    sections = (
        "## What it does",
        "## Why is this bad?",
        "## Example",
        "## Use instead",
        "## Known problems",
    )
    for rule in all_rules():
        assert rule.CODE.startswith("GPD") and len(rule.CODE) == 6
        assert all(section in rule.doc() for section in sections), rule.CODE
        assert rule.VALID and rule.INVALID, rule.CODE
        assert rule.SUMMARY and rule.NAME


def test_codes_and_names_are_unique() -> None:
    rules = all_rules()
    assert len({r.CODE for r in rules}) == len(rules)
    assert len({r.NAME for r in rules}) == len(rules)


def test_off_by_default_rules_need_a_specific_select() -> None:
    code = "import torch\nmask = torch.ones(4, 8).to('cuda')\n"
    default = {f.code for f in lint_source(code, "x.py").findings}
    band = {f.code for f in lint_source(code, "x.py", LintConfig(select=("GPD9",))).findings}
    everything = {f.code for f in lint_source(code, "x.py", LintConfig(select=("GPD",))).findings}
    assert "GPD901" not in default and "GPD901" not in everything and "GPD901" in band


@pytest.mark.parametrize(
    ("rule", "example"), INVALID, ids=[f"{r.CODE}-{i}" for i, (r, _) in enumerate(INVALID)]
)
def test_invalid_example_fix_gives_the_pinned_text(rule: type[Rule], example: Invalid) -> None:
    """The finding's own fix, applied alone, gives exactly ``expected_replacement``."""
    findings = lint_source(example.code, "example.py", LintConfig(select=(rule.CODE,))).findings
    (finding,) = [f for f in findings if f.code == rule.CODE]
    if finding.fix is None:
        assert example.expected_replacement is None, f"{rule.CODE} pins a fix it does not offer"
        return
    assert example.expected_replacement is not None, f"{rule.CODE}: pin the fixed text"
    fixed = apply_edits(example.code, finding.fix.edits)
    assert fixed == example.expected_replacement
    cst.parse_module(fixed)
    again = lint_source(fixed, "example.py", LintConfig(select=(rule.CODE,))).findings
    assert [f for f in again if f.code == rule.CODE] == []


def test_every_rule_with_a_fix_documents_its_safety() -> None:
    """ruff's convention: a rule that offers a fix says when it is safe ("## Fix safety")."""
    for rule in all_rules():
        fixes = []
        for example in rule.INVALID:
            findings = lint_source(example.code, "x.py", LintConfig(select=(rule.CODE,))).findings
            fixes += [f.fix for f in findings if f.code == rule.CODE and f.fix is not None]
        if fixes:
            assert "## Fix safety" in rule.doc(), rule.CODE
        elif "## Fix safety" in rule.doc():  # a rule without a fix may say why it has none
            assert "No fix" in rule.doc().split("## Fix safety", 1)[1], rule.CODE
