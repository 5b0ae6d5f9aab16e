"""The README is a front door and the docs pages follow the code (gpudoc/docgen.py)."""

from __future__ import annotations

import re

import pytest
from conftest import REPO

from gpudoc import docgen

# What each page must carry, generated from the code.
EXPECTED = {
    "README.md": ["lint-sample", "rules-table"],
    "docs/info.md": ["info-checks", "help-info"],
    "docs/smoke.md": ["help-smoke"],
    "docs/lint.md": ["lint-sample", "help-lint"],
    "docs/emulate.md": ["help-run"],
}


@pytest.mark.parametrize("page", docgen.PAGES)
def test_generated_parts_are_current(page: str) -> None:
    text = (REPO / page).read_text(encoding="utf-8")
    assert docgen.blocks(text) == EXPECTED[page]
    assert docgen.regenerate(text) == text, f"{page} is stale: run python -m gpudoc.docgen"


def test_a_stale_part_is_rewritten_and_the_rest_is_kept() -> None:
    page = (
        "hand-written\n<!-- generated: info-checks (python -m gpudoc.docgen) -->\n"
        "| `made-up-check` | fail | nothing |\n<!-- end generated -->\nalso hand-written\n"
    )
    new = docgen.regenerate(page)
    assert new.startswith("hand-written\n") and new.endswith("also hand-written\n")
    assert "made-up-check" not in new and "| `driver-missing` |" in new
    with pytest.raises(KeyError, match="no-such-part"):
        docgen.regenerate(page.replace("info-checks", "no-such-part"))


def test_the_readme_is_a_front_door() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    sections = re.findall(r"^## (.+)$", readme, re.MULTILINE)
    for needed in ("Set up and run", "Run the tests", "pre-commit", "Rules", "Exit codes"):
        assert needed in sections
    for command in ("info", "smoke", "lint", "run --emulate-cuda"):
        assert f"## gpudoc {command}" in readme
        assert f"$ gpudoc {command}" in readme, f"no sample output of gpudoc {command}"
    for code in ("0", "1", "2", "130", "143"):
        assert f"\n| {code} |" in readme


def test_the_readme_test_command_is_what_ci_runs() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Run the tests", 1)[1]
    command = section.split("```sh\n", 1)[1].split("\n```", 1)[0]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert command.replace("pip install ", "pip install -q ") in ci


@pytest.mark.parametrize("page", docgen.PAGES)
def test_relative_links_lead_somewhere(page: str) -> None:
    path = REPO / page
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
        if not target.startswith(("http://", "https://")):
            assert (path.parent / target).exists(), f"{page}: broken link {target}"
