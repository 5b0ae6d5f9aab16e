"""Parallel jobs give the results of one process; the cache returns them for unchanged files."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudoc.lint.engine import lint_paths

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
