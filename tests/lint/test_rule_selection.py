"""Only the selected rules are built and listen to the walk; their findings are the same as when
every rule runs, and the cache keeps the results of different selections apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudoc.lint.checker import check_source, rules_to_run
from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths
from gpudoc.lint.rule import Rule, all_rules

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "lint"
SAMPLES = ["ddp_launch.py", "known_misses.py", "weighted_loss_and_discards.py", "hardcoded_cuda.py"]


def test_only_the_selected_rules_are_built(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    original = Rule.__init__

    def counting(self: Rule) -> None:
        built.append(self.CODE)
        original(self)

    monkeypatch.setattr(Rule, "__init__", counting)
    source = (FIXTURES / "hardcoded_cuda.py").read_text(encoding="utf-8")
    check_source(source, "x.py", lambda code: code == "GPD201")
    assert built == ["GPD201"]
    built.clear()
    check_source(source, "x.py")
    assert sorted(built) == sorted(rule.CODE for rule in all_rules())


def test_unused_noqa_needs_every_rule() -> None:
    assert rules_to_run(lambda code: code == "GPD902") == list(all_rules())
    assert [rule.CODE for rule in rules_to_run(lambda code: code.startswith("GPD2"))] == [
        rule.CODE for rule in all_rules() if rule.CODE.startswith("GPD2")
    ]


@pytest.mark.parametrize("name", SAMPLES)
def test_one_rule_alone_finds_what_it_finds_among_all(name: str) -> None:
    source = (FIXTURES / name).read_text(encoding="utf-8")
    everything = check_source(source, name)
    assert everything
    for rule in all_rules():
        if rule.CODE == "GPD902":
            continue  # needs every rule: test_unused_noqa_needs_every_rule
        alone = check_source(source, name, lambda code, wanted=rule.CODE: code == wanted)
        assert alone == [f for f in everything if f.code == rule.CODE], rule.CODE


def test_the_cache_keeps_selections_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUDOC_CACHE_DIR", str(tmp_path / "cache"))
    script = tmp_path / "train.py"
    script.write_text((FIXTURES / "ddp_launch.py").read_text(encoding="utf-8"))
    fresh = lint_paths([str(script)], jobs=1, use_cache=False).findings
    assert len({finding.code for finding in fresh}) >= 2
    one = fresh[0].code
    narrow = lint_paths([str(script)], LintConfig(select=(one,)), jobs=1)
    assert narrow.findings == tuple(f for f in fresh if f.code == one)
    wide = lint_paths([str(script)], jobs=1)
    assert not wide.files[0].cached  # the narrow run's result is not every rule's
    assert wide.findings == fresh
    assert lint_paths([str(script)], jobs=1).files[0].cached
