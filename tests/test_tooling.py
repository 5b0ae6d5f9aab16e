"""The repo's own tooling runs in the test suite so that it cannot rot: ruff and mypy strict.

Both come with the `test` extra; a missing tool is a failure here, not a skip.
"""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO


def _run_module(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_ruff_check() -> None:
    result = _run_module("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    result = _run_module("ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict() -> None:
    result = _run_module("mypy")
    assert result.returncode == 0, result.stdout + result.stderr
