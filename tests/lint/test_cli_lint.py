"""`gpudoc lint` as a user runs it: paths, formats, selection, config, noqa, exit codes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
from conftest import RunGpudoc

BUGGY = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(3)
x.to(device)
state = torch.load("w.pt")
"""
CLEAN = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(3).to(device)
"""
JSON_SCHEMA = {
    "type": "object",
    "required": ["findings", "files_checked", "errors"],
    "properties": {
        "files_checked": {"type": "integer"},
        "errors": {"type": "array", "items": {"type": "string"}},
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [
                    "path", "line", "col", "end_line", "end_col", "code", "name", "message",
                    "fixable",
                ],
                "properties": {"line": {"type": "integer"}, "fixable": {"type": "boolean"}},
            },
        },
    },
}  # fmt: skip


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_exit_codes_and_text_format(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    clean = write(tmp_path, "clean.py", CLEAN)
    buggy = write(tmp_path, "buggy.py", BUGGY)
    assert run_gpudoc("lint", "--no-cache", str(clean)).returncode == 0
    result = run_gpudoc("lint", "--no-cache", str(buggy), str(clean))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{buggy}:4:1: GPD103 ")
    assert lines[1].startswith(f"{buggy}:5:9: GPD201 ")
    assert "Found 2 findings (2 files checked)" in result.stderr


def test_json_format(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    buggy = write(tmp_path, "buggy.py", BUGGY)
    result = run_gpudoc("lint", "--no-cache", "--format", "json", str(buggy))
    document = json.loads(result.stdout)
    jsonschema.validate(document, JSON_SCHEMA)
    assert document["files_checked"] == 1 and document["errors"] == []
    first = document["findings"][0]
    assert (first["code"], first["line"], first["col"], first["fixable"]) == ("GPD103", 4, 1, True)
    assert first["name"] == "discarded-tensor-move"


def test_select_ignore_and_noqa(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    buggy = write(tmp_path, "buggy.py", BUGGY)
    only = run_gpudoc("lint", "--no-cache", "--select", "GPD2", str(buggy))
    assert [line.split()[1] for line in only.stdout.splitlines()] == ["GPD201"]
    ignored = run_gpudoc("lint", "--no-cache", "--ignore", "GPD201,GPD103", str(buggy))
    assert ignored.returncode == 0 and ignored.stdout == ""
    suppressed = write(tmp_path, "noqa.py", BUGGY.replace('"w.pt")', '"w.pt")  # noqa: GPD201'))
    result = run_gpudoc("lint", "--no-cache", str(suppressed))
    assert [line.split()[1] for line in result.stdout.splitlines()] == ["GPD103"]
    bad = run_gpudoc("lint", "--select", "E501", str(buggy))
    assert bad.returncode == 2 and "unknown rule code" in bad.stderr


def test_pyproject_configuration(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    write(
        tmp_path,
        "pyproject.toml",
        '[tool.gpudoc.lint]\nignore = ["GPD103"]\nexclude = ["generated"]\n'
        '[tool.gpudoc.lint.per-file-ignores]\n"scripts/*" = ["GPD201"]\n',
    )
    write(tmp_path, "train.py", BUGGY)
    write(tmp_path, "scripts/eval.py", BUGGY)
    write(tmp_path, "generated/model.py", BUGGY)
    result = run_gpudoc("lint", "--no-cache", ".", cwd=tmp_path)
    found = sorted(
        line.split(":")[0] + " " + line.split()[1] for line in result.stdout.splitlines()
    )
    assert found == ["train.py GPD201"]
    broken = write(tmp_path / "bad", "pyproject.toml", "[tool.gpudoc.lint]\nselect = 3\n")
    result = run_gpudoc("lint", "x.py", cwd=broken.parent)
    assert result.returncode == 2 and "select must be a list" in result.stderr


def test_directory_walk_skips_vendored_and_ignored(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    for name in (".venv/lib/x.py", "build/x.py", "lib/site-packages/x.py", "ignored/x.py"):
        write(tmp_path, name, BUGGY)
    write(tmp_path, "venv2/pyvenv.cfg", "home = /usr\n")
    write(tmp_path, "venv2/x.py", BUGGY)
    write(tmp_path, "src/train.py", BUGGY)
    write(tmp_path, ".gitignore", "ignored/\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    result = run_gpudoc("lint", "--no-cache", ".", cwd=tmp_path)
    assert {line.split(":")[0] for line in result.stdout.splitlines()} == {"src/train.py"}


def test_stdin(run_gpudoc: RunGpudoc) -> None:
    result = run_gpudoc("lint", "--no-cache", "-", input=BUGGY)
    assert result.returncode == 1
    assert result.stdout.startswith("<stdin>:4:1: GPD103")
    named = run_gpudoc("lint", "--stdin-filename", "train.py", "-", input=BUGGY)
    assert named.stdout.startswith("train.py:4:1: GPD103")


def test_explain(run_gpudoc: RunGpudoc) -> None:
    result = run_gpudoc("lint", "--explain", "gpd101")
    assert result.returncode == 0
    assert result.stdout.startswith("GPD101 (unmoved-input)")
    assert "## Why is this bad?" in result.stdout
    assert run_gpudoc("lint", "--explain", "GPD999").returncode == 2


def test_no_paths_is_a_usage_error(run_gpudoc: RunGpudoc) -> None:
    result = run_gpudoc("lint")
    assert result.returncode == 2 and "give files or directories" in result.stderr
