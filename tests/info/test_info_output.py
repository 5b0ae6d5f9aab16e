"""What a person reads from `gpudoc info`: a spinner only on a terminal, one line saying why the
exit status is 1, JSON when asked for it, and no padding in piped output."""

from __future__ import annotations

import io
import json
import os
import pty
import select
import subprocess
import sys

import pytest
from conftest import RunGpudoc, gpudoc_env

from gpudoc.console import TrimmedLines
from gpudoc.info.doctor import all_checks


def test_list_checks_json_is_json(run_gpudoc: RunGpudoc) -> None:
    result = run_gpudoc("info", "--list-checks", "--json")
    assert result.returncode == 0, result.stderr
    checks = json.loads(result.stdout)["checks"]
    assert [c["id"] for c in checks] == [c.check_id for c in all_checks()]
    assert checks[0] == {
        "id": "torch-missing",
        "severity": "fail",
        "passes_when": "PyTorch is installed",
    }


def test_require_gpu_says_why_in_one_line(run_gpudoc: RunGpudoc) -> None:
    result = run_gpudoc("info", "--no-torch", "--require-gpu")
    report = json.loads(run_gpudoc("info", "--no-torch", "--json").stdout)
    if report["summary"]["usable_gpus"]:
        pytest.skip("this machine has a usable GPU")
    assert result.returncode == 1
    line = result.stderr.strip()
    assert "\n" not in line
    assert line.startswith("gpudoc info: --require-gpu: no usable GPU (")
    assert line.endswith("; see the doctor above")
    failed = [c["check_id"] for c in report["checks"] if c["status"] in ("fail", "warn")]
    assert failed and all(check_id in line for check_id in failed)


def test_strict_says_why_and_points_into_the_json(run_gpudoc: RunGpudoc) -> None:
    result = run_gpudoc("info", "--no-torch", "--strict", "--json")
    problems = json.loads(result.stdout)["summary"]["problems"]
    if not problems:
        pytest.skip("no problem on this machine")
    assert result.returncode == 1
    assert result.stderr.startswith(f"gpudoc info: --strict: {problems} problem")
    assert result.stderr.rstrip().endswith('see "checks" in the JSON')


def test_piped_output_is_not_padded(run_gpudoc: RunGpudoc) -> None:
    for args in (("info", "--no-torch"), ("info", "--list-checks")):
        result = run_gpudoc(*args, env={"COLUMNS": "80"})
        lines = result.stdout.splitlines()
        assert len(lines) > 10
        assert not [line for line in lines if line.endswith(" ")], result.stdout
        assert max(len(line) for line in lines) <= 80


def test_trimmed_lines_strip_line_ends_only() -> None:
    out = io.StringIO()
    trimmed = TrimmedLines(out)
    trimmed.write("a  b   \nc ")
    assert out.getvalue() == "a  b\n"  # "c " may still be continued
    trimmed.write(" d  \n  ")
    trimmed.flush()
    assert out.getvalue() == "a  b\nc  d\n  "


def _run_with_stderr_on_a_terminal(*args: str) -> tuple[int, str, str]:
    leader, follower = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "gpudoc", *args],
        stdout=subprocess.PIPE,
        stderr=follower,
        env=gpudoc_env(TERM="xterm", COLUMNS="80"),
        text=True,
    )
    os.close(follower)
    seen = b""
    while True:  # read as it comes, so that the child never blocks on a full terminal buffer
        ready, _, _ = select.select([leader], [], [], 600)
        if not ready:
            child.kill()
            break
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the child closed its end
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    stdout = child.stdout.read() if child.stdout else ""
    return child.wait(timeout=600), stdout, seen.decode("utf-8", "replace")


@pytest.mark.slow
def test_a_spinner_on_a_terminal_while_torch_is_probed() -> None:
    code, stdout, terminal = _run_with_stderr_on_a_terminal("info")
    assert code == 0
    assert "probing PyTorch in a subprocess" in terminal
    assert "probing" not in stdout and "Doctor" in stdout


@pytest.mark.slow
def test_no_spinner_when_stderr_is_piped(run_gpudoc: RunGpudoc) -> None:
    result = run_gpudoc("info", timeout=600)
    assert result.returncode == 0
    assert result.stderr == ""


def test_no_spinner_without_the_torch_probe() -> None:
    code, _, terminal = _run_with_stderr_on_a_terminal("info", "--no-torch")
    assert code == 0 and terminal == ""
