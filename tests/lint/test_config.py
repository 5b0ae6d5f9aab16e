"""``[tool.gpudoc.lint]``: which pyproject.toml is read, on every supported Python, and bad ones."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, RunGpudoc

from gpudoc.exit_codes import UsageError
from gpudoc.lint.config import LintConfig, load_config

CONFIGURED = '[tool.gpudoc.lint]\nignore = ["GPD103"]\n'


def write(directory: Path, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "pyproject.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_nearest_configured_pyproject_wins(tmp_path: Path) -> None:
    write(tmp_path, CONFIGURED)
    assert load_config(tmp_path / "pkg").ignore == ("GPD103",)
    assert load_config(tmp_path).root == tmp_path.resolve()


def test_pyproject_without_a_gpudoc_table_is_skipped(tmp_path: Path) -> None:
    """ruff's rule: a sub-project's pyproject.toml for other tools does not hide the repo's."""
    write(tmp_path, CONFIGURED)
    write(tmp_path / "sub", '[project]\nname = "sub"\n[tool.black]\nline-length = 80\n')
    config = load_config(tmp_path / "sub")
    assert config.ignore == ("GPD103",)
    assert config.source == str(tmp_path.resolve() / "pyproject.toml")


def test_an_empty_gpudoc_table_stops_the_search(tmp_path: Path) -> None:
    write(tmp_path, CONFIGURED)
    write(tmp_path / "sub", "[tool.gpudoc]\n")
    config = load_config(tmp_path / "sub")
    assert config == LintConfig(root=(tmp_path / "sub").resolve())


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("tool = 1\n", "tool must be a table"),
        ("[tool]\ngpudoc = [1]\n", "tool.gpudoc must be a table"),
        ("[tool.gpudoc]\nlint = 3\n", "tool.gpudoc.lint must be a table"),
        ("[tool.gpudoc.lint]\nselect = 3\n", "tool.gpudoc.lint.select must be a list"),
        ("[tool.gpudoc.lint]\nexclude = [1]\n", "tool.gpudoc.lint.exclude must be a list"),
        (
            '[tool.gpudoc.lint.per-file-ignores]\n"a/*" = 1\n',
            'tool.gpudoc.lint.per-file-ignores."a/*" must be a list',
        ),
        ("[tool.gpudoc.lint]\nselct = []\n", "unknown key(s) in tool.gpudoc.lint: selct"),
        ("x = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
        ("[tool.gpudoc\n", "cannot read"),
    ],
)
def test_bad_pyproject_is_one_line_naming_file_and_key(tmp_path: Path, text: str, key: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(UsageError) as raised:
        load_config(tmp_path)
    message = str(raised.value)
    assert message.startswith(f"{path.resolve()}: ") and key in message
    assert "\n" not in message


def test_bad_pyproject_exits_2_without_traceback(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    for text in ("tool = 1\n", "[tool]\ngpudoc = [1]\n", "x = " + "[" * 5000 + "]" * 5000):
        write(tmp_path, text)
        result = run_gpudoc("lint", "--no-cache", "x.py", cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr
        assert len(result.stderr.splitlines()) == 1 and "pyproject.toml" in result.stderr


def test_tomli_is_declared_for_python_before_3_11() -> None:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert "\"tomli>=1.1; python_version < '3.11'\"" in text


def _python_310_with_tomli() -> str | None:
    """An interpreter for 3.10 with tomli importable: GPUDOC_TEST_PYTHON310, or python3.10."""
    python = os.environ.get("GPUDOC_TEST_PYTHON310") or shutil.which("python3.10")
    if python is None:
        return None
    probe = subprocess.run(
        [python, "-c", "import sys, tomli; assert sys.version_info[:2] == (3, 10)"],
        capture_output=True,
        check=False,
    )
    return python if probe.returncode == 0 else None


@pytest.mark.skipif(sys.version_info >= (3, 11), reason="runs where tomllib is missing")
def test_config_is_read_on_python_310(tmp_path: Path) -> None:
    write(tmp_path, CONFIGURED)
    assert load_config(tmp_path).ignore == ("GPD103",)


def test_config_is_read_by_a_python_310_interpreter(tmp_path: Path) -> None:
    """The same check from a 3.11 suite, where a 3.10 interpreter with tomli is at hand."""
    python = _python_310_with_tomli()
    if python is None:
        pytest.skip("no Python 3.10 with tomli (set GPUDOC_TEST_PYTHON310)")
    write(tmp_path, CONFIGURED)
    code = (
        "import sys; from pathlib import Path; from gpudoc.lint.config import load_config; "
        "print(load_config(Path(sys.argv[1])).ignore)"
    )
    result = subprocess.run(
        [python, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "('GPD103',)"
