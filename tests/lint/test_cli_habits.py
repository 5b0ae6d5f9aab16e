"""What ruff users expect of a linter's command line, and the loose ends of issue 15.

--exit-zero, --statistics, --output-format, exact-code ``# noqa`` found by the tokenizer, GPD902
(unused noqa), named pipes, syntax error positions, empty directories, --unsafe-fixes alone,
notebook order and ``files_checked``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest
from conftest import RunGpudoc
from nbformat.v4 import new_code_cell, new_notebook

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths, lint_source

BUGGY = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(3)
x.to(device)
state = torch.load(args.checkpoint)
"""


def codes(source: str, select: tuple[str, ...] = ("GPD",)) -> list[tuple[int, str]]:
    result = lint_source(source, "x.py", LintConfig(select=select))
    return [(f.line, f.code) for f in result.findings]


def test_exit_zero_statistics_and_output_format(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(BUGGY)
    (tmp_path / "b.py").write_text(BUGGY.replace("state =", "other ="))
    plain = run_gpudoc("lint", "--no-cache", ".", cwd=tmp_path)
    assert plain.returncode == 1
    assert run_gpudoc("lint", "--no-cache", "--exit-zero", ".", cwd=tmp_path).returncode == 0

    stats = run_gpudoc("lint", "--no-cache", "--statistics", ".", cwd=tmp_path)
    assert stats.returncode == 1
    assert stats.stdout.splitlines() == [
        "2\tGPD103\t[*] discarded-tensor-move",
        "2\tGPD201\t[*] load-without-map-location",
    ]
    as_json = run_gpudoc(
        "lint", "--no-cache", "--statistics", "--output-format", "json", ".", cwd=tmp_path
    )
    rows = json.loads(as_json.stdout)
    assert [(r["code"], r["count"], r["fixable"]) for r in rows] == [
        ("GPD103", 2, 2),
        ("GPD201", 2, 2),
    ]
    alias = run_gpudoc("lint", "--no-cache", "--format", "json", ".", cwd=tmp_path)
    full = run_gpudoc("lint", "--no-cache", "--output-format", "json", ".", cwd=tmp_path)
    assert json.loads(alias.stdout) == json.loads(full.stdout)
    assert len(json.loads(full.stdout)["findings"]) == 4


def test_exit_zero_keeps_exit_2_for_unreadable_files(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_bytes(b"import torch\0")
    assert run_gpudoc("lint", "--no-cache", "--exit-zero", "bad.py", cwd=tmp_path).returncode == 2


def test_noqa_is_exact_and_only_in_real_comments() -> None:
    line = "x.to(device)"
    assert codes(BUGGY.replace(line, f"{line}  # noqa: GPD103")) == [(5, "GPD201")]
    assert codes(BUGGY.replace(line, f"{line}  # noqa")) == [(5, "GPD201")]
    assert codes(BUGGY.replace(line, f"{line}  # NOQA:GPD201,GPD103")) == [(5, "GPD201")]
    # a prefix is not a code (ruff reads codes exactly), and another code is another rule
    assert (4, "GPD103") in codes(BUGGY.replace(line, f"{line}  # noqa: GPD1"))
    assert (4, "GPD103") in codes(BUGGY.replace(line, f"{line}  # noqa: GPD201"))
    # a noqa directive inside a string is text, not a comment
    in_string = BUGGY.replace(line, f'{line}; note = "# noqa: GPD103"')
    assert (4, "GPD103") in codes(in_string)
    multiline = BUGGY.replace(line, f'{line}; note = """\n# noqa: GPD103\n"""')
    assert (4, "GPD103") in codes(multiline)


def test_unused_noqa_is_an_opt_in_rule() -> None:
    source = BUGGY.replace("x.to(device)", "x.to(device)  # noqa: GPD103, GPD201, E501")
    assert codes(source) == [(5, "GPD201")]  # GPD902 is off by default
    found = lint_source(source, "x.py", LintConfig(select=("GPD902",))).findings
    assert [(f.line, f.col, f.code) for f in found] == [(4, 15, "GPD902")]
    assert "GPD201" in found[0].message and "GPD103" not in found[0].message
    used = BUGGY.replace("x.to(device)", "x.to(device)  # noqa: GPD103")
    assert codes(used, ("GPD902",)) == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_named_pipes_are_skipped_not_read(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "ok.py").write_text("import torch\n")
    walked = run_gpudoc("lint", "--no-cache", ".", cwd=tmp_path, timeout=60)
    assert walked.returncode == 0 and "1 file checked" in walked.stderr
    given = run_gpudoc("lint", "--no-cache", "pipe.py", "ok.py", cwd=tmp_path, timeout=60)
    assert given.returncode == 2
    assert "pipe.py: not a regular file" in given.stderr


@pytest.mark.parametrize(
    ("source", "where"),
    [
        ("import torch\ndef broken(:\n", "syntax error at 2:12: invalid syntax"),
        ('import torch\nx = "abc\n', "syntax error at 2:5: unterminated string literal"),
        ("import torch\nx = (\n", "syntax error at 2:5: '(' was never closed"),
    ],
)
def test_syntax_errors_are_placed_where_python_places_them(source: str, where: str) -> None:
    error = lint_source(source, "x.py").error
    assert error is not None and error.startswith(f"x.py: {where}")


def test_empty_directory_says_so(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("import torch\n")
    result = run_gpudoc("lint", "--no-cache", ".", cwd=tmp_path)
    assert result.returncode == 0
    assert "warning: no Python files (*.py, *.ipynb) found in ." in result.stderr


def test_unsafe_fixes_alone_is_a_usage_error(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(BUGGY)
    result = run_gpudoc("lint", "--no-cache", "--unsafe-fixes", "a.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "--unsafe-fixes needs --fix" in result.stderr
    assert (tmp_path / "a.py").read_text() == BUGGY


def test_notebook_findings_sort_by_cell_and_a_partly_linted_one_counts(tmp_path: Path) -> None:
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook = new_notebook(metadata={"kernelspec": kernel})
    notebook.cells = [
        new_code_cell('import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"'),
        new_code_cell("\n\n\n\nx = torch.randn(3)\nx.to(device)\nprint(x)"),  # line 6, cell 2
        new_code_cell("y = torch.randn(3)\ny.to(device)\nprint(y)"),  # line 2 of cell 3
        new_code_cell("def broken(:\n    pass"),
    ]
    path = tmp_path / "nb.ipynb"
    path.write_text(nbformat.writes(notebook))
    result = lint_paths([str(path)], use_cache=False)
    assert [(f.cell, f.line) for f in result.findings] == [(2, 6), (3, 2)]
    assert result.files_checked == 1
    assert result.errors and "cell 4: syntax error" in result.errors[0]


@pytest.mark.parametrize(
    ("metadata", "quiet"),
    [
        ({"accelerator": "GPU", "colab": {"provenance": []}}, True),  # Colab
        ({"kaggle": {"accelerator": "nvidiaTeslaT4"}}, True),  # Kaggle
        ({"kaggle": {"accelerator": "none"}}, False),
        ({}, False),
    ],
)
def test_notebook_that_asks_for_a_gpu_draws_no_cuda_fallback_finding(
    tmp_path: Path, metadata: dict[str, object], quiet: bool
) -> None:
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook = new_notebook(metadata={"kernelspec": kernel, **metadata})
    # the notebook offers a CPU path (its device has a fallback), then hard-codes CUDA
    notebook.cells = [
        new_code_cell('import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"'),
        new_code_cell("model = torch.nn.Linear(4, 2).cuda()"),
        new_code_cell("free, total = torch.cuda.mem_get_info()"),
    ]
    path = tmp_path / "colab.ipynb"
    path.write_text(nbformat.writes(notebook))
    found = [f.code for f in lint_paths([str(path)], use_cache=False).findings]
    assert found == ([] if quiet else ["GPD203", "GPD205"])
