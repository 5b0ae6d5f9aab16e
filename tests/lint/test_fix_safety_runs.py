"""Fix safety, checked by running under `gpudoc run --emulate-cuda` (the CPU standing in for a
GPU with the GPU's placement rules): a safe fix makes a script that fails on the GPU run; an
unsafe one is held back because applying it would break a script that runs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import REPO, RunGpudoc

pytestmark = pytest.mark.slow

DATA = Path(__file__).parent / "data" / "fix_runs"


def _copy(tmp_path: Path, name: str) -> Path:
    script = tmp_path / name
    shutil.copy(DATA / name, script)
    return script


def _emulate(run_gpudoc: RunGpudoc, script: Path) -> tuple[int, str]:
    env = {"PYTHONPATH": str(REPO)}
    result = run_gpudoc("run", "--emulate-cuda", script.name, cwd=script.parent, env=env)
    return result.returncode, result.stdout + result.stderr


def _lint(run_gpudoc: RunGpudoc, script: Path, *args: str) -> int:
    return run_gpudoc("lint", "--no-cache", *args, script.name, cwd=script.parent).returncode


def test_safe_fixes_make_the_script_run_on_the_device(
    run_gpudoc: RunGpudoc, tmp_path: Path
) -> None:
    script = _copy(tmp_path, "discarded_move_then_numpy.py")
    code, report = _emulate(run_gpudoc, script)
    assert code == 1 and "same device" in report, report
    assert _lint(run_gpudoc, script, "--fix") == 0  # safe fixes only: nothing left
    text = script.read_text()
    assert "x = x.to(device)" in text and "out.argmax(1).cpu().numpy()" in text
    code, report = _emulate(run_gpudoc, script)
    assert code == 0 and "no device errors" in report and "predictions" in report, report


def test_an_unsafe_fix_is_held_back_because_it_would_break_a_running_script(
    run_gpudoc: RunGpudoc, tmp_path: Path
) -> None:
    script = _copy(tmp_path, "model_stays_on_cpu.py")
    code, report = _emulate(run_gpudoc, script)
    assert code == 0 and "shape ok" in report, report
    assert _lint(run_gpudoc, script, "--select", "GPD103", "--fix") == 1  # held back
    assert script.read_text() == (DATA / "model_stays_on_cpu.py").read_text()
    assert _lint(run_gpudoc, script, "--select", "GPD103", "--fix", "--unsafe-fixes") == 0
    code, report = _emulate(run_gpudoc, script)
    assert code == 1 and "same device" in report  # what "unsafe" protects against
