"""Parallel jobs give the results of one process; the cache returns them for unchanged files."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from gpudoc.lint import cache
from gpudoc.lint.cache import ResultCache
from gpudoc.lint.engine import lint_paths
from gpudoc.lint.model import Finding

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_jobs_give_the_same_findings_as_one_process() -> None:
    paths = [str(FIXTURES)]
    serial = lint_paths(paths, jobs=1, use_cache=False)
    parallel = lint_paths(paths, jobs=2, use_cache=False)
    assert serial.files_checked >= 8
    assert serial.findings == parallel.findings
    assert serial.findings


def test_cache_hits_unchanged_files_and_misses_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUDOC_CACHE_DIR", str(tmp_path / "cache"))
    script = tmp_path / "train.py"
    script.write_text("import torch\nx = torch.randn(3).cuda()\nx.cpu()\n", encoding="utf-8")
    first = lint_paths([str(script)], jobs=1)
    second = lint_paths([str(script)], jobs=1)
    assert not first.files[0].cached and second.files[0].cached
    assert first.findings == second.findings and first.findings
    script.write_text("import torch\nx = torch.randn(3)\n", encoding="utf-8")
    third = lint_paths([str(script)], jobs=1)
    assert not third.files[0].cached and third.findings == ()
    assert not lint_paths([str(script)], use_cache=False).files[0].cached


def test_an_empty_notebook_and_an_empty_module_do_not_share_a_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same bytes, two kinds: the notebook is not valid JSON, the `__init__.py` is clean (set
    37: d2l's 0-byte notebooks made every empty `__init__.py` after them an error)."""
    monkeypatch.setenv("GPUDOC_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "a.ipynb").write_bytes(b"")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_bytes(b"")
    for _ in range(2):  # the second run reads the cache
        result = lint_paths([str(tmp_path)], jobs=1)
        errors = {Path(f.path).name: f.error for f in result.files}
        assert errors["__init__.py"] is None
        assert errors["a.ipynb"] is not None


def _finding(code: str = "GPD103") -> Finding:
    return Finding("x.py", 2, 1, code, "discarded-tensor-move", "message", end_line=2, end_col=9)


def test_results_persist_across_runs_and_the_newest_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache, "MAX_ENTRIES", 3)
    for n in range(5):
        run = ResultCache(tmp_path)
        assert run.get(f"k{n}", "x.py") is None
        run.put(f"k{n}", [_finding()], None if n else "syntax error")
        run.save()
    later = ResultCache(tmp_path)
    assert [later.get(f"k{n}", "a.py") is None for n in range(5)] == [
        True,
        True,
        False,
        False,
        False,
    ]
    assert later.get("k4", "a.py") == ([replace(_finding(), path="a.py")], None)
    later.save()


def test_a_corrupt_cache_is_replaced_and_an_unwritable_one_ignored(tmp_path: Path) -> None:
    (tmp_path / cache.DATABASE).write_bytes(b"not a database\x00" * 100)
    (tmp_path / "lint-0123456789abcdef.json").write_text("{}")  # the cache's former format
    run = ResultCache(tmp_path)
    assert run.get("k", "x.py") is None
    run.put("k", [], None)
    run.save()
    assert ResultCache(tmp_path).get("k", "x.py") == ([], None)
    assert not (tmp_path / "lint-0123456789abcdef.json").exists()
    blocked = tmp_path / "file"
    blocked.write_text("")
    unwritable = ResultCache(blocked / "sub")  # its directory cannot be made
    assert unwritable.get("k", "x.py") is None
    unwritable.put("k", [], None)
    unwritable.save()


def test_fingerprint_follows_the_lint_code(tmp_path: Path) -> None:
    package = tmp_path / "lint"
    shutil.copytree(Path(cache.__file__).parent, package)
    before = cache.fingerprint(package)
    assert cache.fingerprint(package) == before
    rule = package / "rules" / "gpd103_discarded_tensor_move.py"
    rule.write_text(rule.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    cache.fingerprint.cache_clear()
    assert cache.fingerprint(package) != before


MODEL_PLACED = """\
import torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.to('cuda')
"""
TRAIN = "import torch\n{imports}\nnet = Net().cuda()\nx = torch.randn(3, 4)\nnet(x)\n"


@pytest.mark.parametrize(
    ("imports", "init"),
    [
        ("from pkg import Net", "from .model import *\n"),  # re-exported by a package
        ("from pkg import (\n    model,\n)\nNet = model.Net", ""),  # a multi-line import
    ],
    ids=["star-reexport", "parenthesised"],
)
def test_the_cache_misses_when_a_module_reached_through_imports_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, imports: str, init: str
) -> None:
    monkeypatch.setenv("GPUDOC_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text(init)
    model = tmp_path / "pkg" / "model.py"
    model.write_text(MODEL_PLACED.replace("        self.to('cuda')\n", ""))
    script = tmp_path / "train.py"
    script.write_text(TRAIN.format(imports=imports))
    before = lint_paths([str(script)], jobs=1)
    model.write_text(MODEL_PLACED)  # now the model places itself: a different analysis
    after = lint_paths([str(script)], jobs=1)
    fresh = lint_paths([str(script)], jobs=1, use_cache=False)
    assert not after.files[0].cached
    assert after.findings == fresh.findings
    assert before.files[0].cached is False
