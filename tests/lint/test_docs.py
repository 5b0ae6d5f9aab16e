"""docs/rules.md and the README's rule table follow the rule classes."""

from __future__ import annotations

from conftest import REPO

from gpudoc.lint.docs import TARGET, rules_markdown, rules_table


def test_rules_md_is_current() -> None:
    assert TARGET.read_text(encoding="utf-8") == rules_markdown(), (
        "docs/rules.md is stale: run python -m gpudoc.docgen"
    )


def test_readme_lists_every_rule() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Rules", 1)[1].split("\n## ", 1)[0]
    assert rules_table() in section, "README's rule table is stale: paste rules_table()"
