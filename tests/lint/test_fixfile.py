"""fixfile.py: fixing scripts and notebooks on disk, and the --diff view of it."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from test_notebook import tutorial_notebook
from toy_lint import toy_lint

from gpudoc.lint.fixfile import fix_file

SCRIPT = "import torch\nx = torch.ones(2)\nx.to('cuda')\nstate = torch.load('c.pt')\n"


def test_diff_shows_the_fix_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    outcome = fix_file(path, "train.py", toy_lint, unsafe=False, write=False)
    assert path.read_text() == SCRIPT
    assert outcome.diff.splitlines()[:2] == ["--- a/train.py", "+++ b/train.py"]
    assert "-x.to('cuda')" in outcome.diff and "+x = x.to('cuda')" in outcome.diff
    assert [(f.path, f.line, f.code) for f in outcome.remaining] == [("train.py", 4, "GPD201")]
    assert outcome.fixes_applied == 1


def test_fix_writes_and_reports_what_remains(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    outcome = fix_file(path, "train.py", toy_lint, unsafe=True, write=True)
    assert path.read_text() == SCRIPT.replace("x.to", "x = x.to").replace(
        "'c.pt'", "'c.pt', map_location=device"
    )
    assert outcome.remaining == () and outcome.fixes_applied == 2
    assert not fix_file(path, "train.py", toy_lint, unsafe=True, write=True).changed


def test_notebook_fix_locates_what_remains_by_cell(tmp_path: Path) -> None:
    path = tmp_path / "eval.ipynb"
    path.write_text(tutorial_notebook())
    outcome = fix_file(path, "eval.ipynb", toy_lint, unsafe=False, write=True)
    assert [(f.cell, f.line, f.code) for f in outcome.remaining] == [(3, 5, "GPD201")]
    assert outcome.errors == ("eval.ipynb:cell 5: syntax error at line 1: invalid syntax",)
    assert "--- a/eval.ipynb:cell 3\n+++ b/eval.ipynb:cell 3\n" in outcome.diff
    assert "\\ No newline" not in outcome.diff
    cells = nbformat.read(path, as_version=4).cells
    assert cells[2].source.splitlines()[2] == "x = x.to(device)"


def test_what_cannot_be_read_is_one_error_line(tmp_path: Path) -> None:
    binary = tmp_path / "blob.py"
    binary.write_bytes(b"\xff\xfe\x00binary")
    (outcome,) = [fix_file(binary, "blob.py", toy_lint, unsafe=False, write=True)]
    assert outcome.errors[0].startswith("blob.py: cannot read: ")
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{")
    assert fix_file(broken, "broken.ipynb", toy_lint, unsafe=False, write=True).errors == (
        "broken.ipynb: not valid JSON: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)",
    )


def test_a_notebook_in_another_language_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "r.ipynb"
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "source": "x.to(device)"}
    document = {"cells": [cell], "metadata": {"kernelspec": {"language": "R"}}, "nbformat": 4}
    path.write_text(json.dumps(document))
    outcome = fix_file(path, "r.ipynb", toy_lint, unsafe=True, write=True)
    assert not outcome.changed and outcome.remaining == ()
    assert json.loads(path.read_text()) == document


def test_encoding_and_bom_are_kept(tmp_path: Path) -> None:
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"# -*- coding: latin-1 -*-\nx = 'caf\xe9'\r\nx.to(d)\r\n")
    assert fix_file(latin, "latin.py", toy_lint, unsafe=False, write=True).fixes_applied == 1
    assert latin.read_bytes() == b"# -*- coding: latin-1 -*-\nx = 'caf\xe9'\r\nx = x.to(d)\r\n"
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbfx.to(d)\n")
    fix_file(bom, "bom.py", toy_lint, unsafe=False, write=True)
    assert bom.read_bytes() == b"\xef\xbb\xbfx = x.to(d)\n"


def test_a_symlink_stays_a_link_to_the_fixed_file(tmp_path: Path) -> None:
    real = tmp_path / "real.py"
    real.write_text("x.to(d)\n")
    link = tmp_path / "link.py"
    link.symlink_to(real)
    fix_file(link, "link.py", toy_lint, unsafe=False, write=True)
    assert link.is_symlink() and real.read_text() == "x = x.to(d)\n"


def test_a_file_that_cannot_be_written_is_an_error_and_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As root, permissions cannot make a write fail here, so the write itself is made to fail.
    def refuse(path: Path, text: str, encoding: str = "utf-8") -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("gpudoc.lint.fixfile.write_source", refuse)
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    outcome = fix_file(path, "train.py", toy_lint, unsafe=False, write=True)
    assert outcome.errors == ("train.py: cannot write the fixes: Permission denied",)
    assert [f.code for f in outcome.remaining] == ["GPD103", "GPD201"]
    assert path.read_text() == SCRIPT and not outcome.changed


def test_the_lint_runs_findings_are_reused_when_the_file_has_dependencies(tmp_path: Path) -> None:
    """A script beside a helper it imports (its result key holds the helper's stamp): --fix
    starts from the findings the lint run already has, not from a second analysis."""
    from gpudoc.lint.config import LintConfig
    from gpudoc.lint.engine import lint_paths

    (tmp_path / "helper.py").write_text("import torch\ndef make():\n    return torch.ones(2)\n")
    path = tmp_path / "train.py"
    path.write_text("from helper import make\n" + SCRIPT)
    result = lint_paths([str(path)], LintConfig(), use_cache=False)
    calls: list[str] = []

    def counted(text: str, display: str = "train.py") -> list:  # type: ignore[type-arg]
        calls.append(text)
        return toy_lint(text)

    outcome = fix_file(path, str(path), counted, unsafe=True, write=False, linted=result.files[0])
    assert outcome.fixes_applied >= 1
    original = path.read_text()
    assert calls and original not in calls  # only fixed texts are linted again
