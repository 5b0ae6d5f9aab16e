"""The realistic lint corpus (fixtures/lint/realistic) keeps its annotations exact.

Every file or project directory: what the linter reports is exactly `expect` ∪ `fp`, and no
`miss` is reported (a found miss becomes `expect`; a removed false positive loses its `fp`).
The corpus invariants of issue 11 are checked too, and the scorer (bench/lint_quality.py) is
run on a small corpus whose figures are known.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import REPO, gpudoc_env

from gpudoc.lint.config import LintConfig
from gpudoc.lint.rule import all_rules

SCORER = REPO / "bench" / "lint_quality.py"
# The codes reserved for the rules of issue 12 (not all written yet): the corpus has bugs for each.
NEW_CODES = {
    "GPD108", "GPD109", "GPD110", "GPD111", "GPD112", "GPD113",
    "GPD205", "GPD206", "GPD303", "GPD406",
}  # fmt: skip


@cache
def quality() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lint_quality", SCORER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["lint_quality"] = module
    spec.loader.exec_module(module)
    return module


@cache
def linted() -> dict[str, Any]:
    """Every unit of the corpus, linted once for all the tests here."""
    q = quality()
    return {q.relative(u.target): u for u in q.collect([q.CORPUS], False, LintConfig())}


UNITS = sorted(quality().relative(u.target) for u in quality().units_of(quality().CORPUS))


@pytest.mark.parametrize("unit_id", UNITS)
def test_findings_are_exactly_the_annotations(unit_id: str) -> None:
    unit = linted()[unit_id]
    marks: dict[str, set[tuple[str, int, str]]] = {"expect": set(), "miss": set(), "fp": set()}
    for mark in unit.marks:
        marks[mark.kind].add((mark.path, mark.line, mark.code))
    reported = unit.reported
    assert unit.errors == [], unit.errors
    assert reported - marks["expect"] - marks["fp"] == set(), "reported but not annotated"
    assert marks["expect"] - reported == set(), "`expect` no longer reported: make it `miss`"
    assert marks["fp"] - reported == set(), "false positive gone: remove its `fp` annotation"
    assert marks["miss"] & reported == set(), "a known miss is found now: make it `expect`"


def all_files() -> list[Path]:
    return sorted(quality().CORPUS.rglob("*.py"))


def bug_marks() -> list[Any]:
    return [m for u in linted().values() for m in u.marks if m.kind != "fp"]


def test_corpus_size_and_clean_share() -> None:
    files = all_files()
    buggy = {m.path for m in bug_marks()}
    assert len(files) >= 80
    assert len(files) - len(buggy) >= 30


def test_a_third_of_the_bugs_are_reached_through_calls_branches_or_files() -> None:
    bugs = bug_marks()
    via = [m for m in bugs if m.via is not None]
    assert 3 * len(via) >= len(bugs)
    assert {m.via for m in via} >= {"helper", "return", "forward-call", "branch", "cross-file"}


def test_every_rule_and_reserved_code_has_a_bug_in_the_corpus() -> None:
    covered = {m.code for m in bug_marks()}
    rules = {rule.CODE for rule in all_rules() if rule.DEFAULT}
    assert rules | NEW_CODES <= covered, sorted((rules | NEW_CODES) - covered)


@pytest.mark.parametrize("path", all_files(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_each_script_is_realistic_plain_python(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    docstring = ast.get_docstring(tree)
    assert docstring and "\n" not in docstring.strip(), "a one-line docstring says what it models"
    assert 15 <= len(source.splitlines()) <= 90
    assert any(isinstance(node, (ast.Import, ast.ImportFrom)) for node in tree.body)


SMALL_CORPUS = {
    "found.py": (
        "import torch\n"
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "x = torch.randn(3)\n"
        "x.to(device)  # expect: GPD103\n"
    ),
    # annotated as a miss on a line no rule can report: a stable false negative
    "missed.py": ("import torch\ndef noise(n):\n    return n  # miss: GPD113 via: helper\n"),
    # annotated as a false positive for the arithmetic (the finding itself is stable)
    "wrong.py": (
        "import numpy as np\n"
        "import torch\n"
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "y = torch.randn(4, 2)\n"
        "y.to(device)  # fp: GPD103\n"
    ),
}


def test_scorer_figures_on_a_corpus_with_known_answers(tmp_path: Path) -> None:
    for name, text in SMALL_CORPUS.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(SCORER), "--no-corpus", "--json", str(tmp_path)],
        capture_output=True,
        text=True,
        env=gpudoc_env(),
        check=True,
    )
    data = json.loads(done.stdout)
    assert data["files"] == 3 and data["clean_files"] == 1 and data["bugs"] == 2
    assert data["overall"] == {"tp": 1, "fp": 1, "fn": 1, "precision": 0.5, "recall": 0.5}
    assert data["rules"]["GPD103"]["recall"] == 1.0
    assert data["rules"]["GPD113"] == {"tp": 0, "fp": 0, "fn": 1, "precision": None, "recall": 0.0}
    assert data["via"]["helper"] == {"bugs": 1, "found": 0, "recall": 0.0}
    assert [line.split(":")[-2:] for line in data["false_positives"]] == [["5", " GPD103"]]
    assert data["drift"] == []
