"""Notebooks at the edges: nested too deep to read, a byte order mark, a cell that won't parse."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import RunGpudoc

FIXABLE = "import torch\nx = torch.randn(3)\nx.to('cuda')\nprint(x)\n"


def notebook(*sources: str) -> str:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    cells = [dict(cell, source=source) for source in sources]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("gpudoc lint: error:")]


def test_a_notebook_nested_too_deep_is_one_line_and_the_rest_is_linted(
    run_gpudoc: RunGpudoc, tmp_path: Path
) -> None:
    (tmp_path / "deep.ipynb").write_text("[" * 100_000 + "]" * 100_000)
    nested = '{"cells": [], "metadata": ' + "[" * 100_000 + "]" * 100_000 + "}"
    (tmp_path / "deep_metadata.ipynb").write_text(nested)
    (tmp_path / "good.ipynb").write_text(notebook(FIXABLE))
    result = run_gpudoc("lint", "--no-cache", str(tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert errors(result.stderr) == [
        f"gpudoc lint: error: {tmp_path / name}: JSON nested too deeply to read"
        for name in ("deep.ipynb", "deep_metadata.ipynb")
    ]
    assert f"{tmp_path / 'good.ipynb'}:cell 1:3:1: GPD103" in result.stdout


def test_a_notebook_with_a_byte_order_mark_is_linted_diffed_and_fixed(
    run_gpudoc: RunGpudoc, tmp_path: Path
) -> None:
    path = tmp_path / "bom.ipynb"
    path.write_text(notebook(FIXABLE), encoding="utf-8-sig")
    linted = run_gpudoc("lint", "--no-cache", str(path))
    assert f"{path}:cell 1:3:1: GPD103" in linted.stdout and errors(linted.stderr) == []
    # GPD103's fix is unsafe unless the moved value provably meets the device (lint docs)
    diff = run_gpudoc("lint", "--no-cache", "--diff", "--unsafe-fixes", str(path))
    assert "+x = x.to('cuda')" in diff.stdout and errors(diff.stderr) == []
    fixed = run_gpudoc("lint", "--no-cache", "--fix", "--unsafe-fixes", str(path))
    assert errors(fixed.stderr) == [] and "GPD103" not in fixed.stdout
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")  # kept, as the editor wrote it
    (cell,) = json.loads(data.decode("utf-8-sig"))["cells"]
    assert cell["source"] == FIXABLE.replace("x.to(", "x = x.to(")


def test_fix_never_writes_a_notebook_it_reports_as_not_linted(
    run_gpudoc: RunGpudoc, tmp_path: Path
) -> None:
    path = tmp_path / "partial.ipynb"
    path.write_text(notebook(FIXABLE, "def broken(:\n"))
    before = path.read_bytes()
    result = run_gpudoc("lint", "--no-cache", "--fix", "--unsafe-fixes", str(path))
    assert result.returncode == 2
    assert errors(result.stderr) == [
        f"gpudoc lint: error: {path}: cell 2: syntax error at line 1: invalid syntax"
    ]
    assert path.read_bytes() == before
    assert f"{path}:cell 1:3:1: GPD103" in result.stdout  # still reported, not fixed


def test_a_cell_ipython_dedents_is_linted_in_its_own_columns_and_fixed_in_place(
    run_gpudoc: RunGpudoc, tmp_path: Path
) -> None:
    """IPython runs a cell whose first line is indented with that indent taken off (its
    ``leading_indent``): rasbt's machine-learning-book has such cells (held-out set 28)."""
    first = "  import torch\n  model = torch.nn.Linear(2, 2).cuda()\n\n  x = torch.randn(2, 2)\n"
    second = "  t = torch.zeros(2)\n  t.cuda()\n  y = model(t)"
    path = tmp_path / "pasted.ipynb"
    path.write_text(notebook(first, second))
    linted = run_gpudoc("lint", "--no-cache", str(path))
    assert errors(linted.stderr) == [] and linted.returncode == 1
    assert f"{path}:cell 2:2:3: GPD103" in linted.stdout  # the cell's own column, indent kept
    fixed = run_gpudoc("lint", "--no-cache", "--fix", "--unsafe-fixes", str(path))
    assert errors(fixed.stderr) == []
    cells = [cell["source"] for cell in json.loads(path.read_text())["cells"]]
    assert cells == [first, second.replace("  t.cuda()", "  t = t.cuda()")]
    again = run_gpudoc("lint", "--no-cache", "--fix", "--unsafe-fixes", str(path))
    assert [cell["source"] for cell in json.loads(path.read_text())["cells"]] == cells
    assert "GPD103" not in again.stdout


def test_a_cell_indented_unevenly_is_still_a_syntax_error(
    run_gpudoc: RunGpudoc, tmp_path: Path
) -> None:
    path = tmp_path / "uneven.ipynb"
    path.write_text(notebook("  import torch\nx = 1\n"))
    result = run_gpudoc("lint", "--no-cache", str(path))
    assert result.returncode == 2 and "unexpected indent" in result.stderr
