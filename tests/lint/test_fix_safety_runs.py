"""Fix safety, checked by running under `gpudoc run --emulate-cuda` (the CPU standing in for a
GPU with the GPU's placement rules): a safe fix makes a script that fails on the GPU run; an
unsafe one is held back because applying it would break a script that runs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import REPO, RunGpudoc, emulate_batch

pytestmark = pytest.mark.slow

DATA = Path(__file__).parent / "data" / "fix_runs"


def _copy(tmp_path: Path, name: str, as_name: str) -> Path:
    script = tmp_path / as_name
    shutil.copy(DATA / name, script)
    return script


def _emulate(*scripts: Path) -> list[tuple[int, str]]:
    """Each script under `gpudoc run --emulate-cuda`, in its folder, all in one interpreter (one
    torch import: conftest.emulate_batch): (exit status, output) of each."""
    folder = scripts[0].parent
    runs = emulate_batch([(script.name,) for script in scripts], folder, PYTHONPATH=str(REPO))
    return [(code, out + err) for code, out, err in runs]


def _lint(run_gpudoc: RunGpudoc, script: Path, *args: str) -> int:
    return run_gpudoc("lint", "--no-cache", *args, script.name, cwd=script.parent).returncode


def test_safe_fixes_make_the_script_run_on_the_device(
    run_gpudoc: RunGpudoc, tmp_path: Path
) -> None:
    name = "discarded_move_then_numpy.py"
    script, fixed = _copy(tmp_path, name, name), _copy(tmp_path, name, "fixed.py")
    assert _lint(run_gpudoc, fixed, "--fix") == 0  # safe fixes only: nothing left
    text = fixed.read_text()
    assert "x = x.to(device)" in text and "out.argmax(1).cpu().numpy()" in text
    (code, report), (fixed_code, fixed_report) = _emulate(script, fixed)
    assert code == 1 and "same device" in report, report
    assert fixed_code == 0 and "no device errors" in fixed_report, fixed_report
    assert "predictions" in fixed_report


def test_an_unsafe_fix_is_held_back_because_it_would_break_a_running_script(
    run_gpudoc: RunGpudoc, tmp_path: Path
) -> None:
    name = "model_stays_on_cpu.py"
    script, fixed = _copy(tmp_path, name, name), _copy(tmp_path, name, "fixed.py")
    assert _lint(run_gpudoc, fixed, "--select", "GPD103", "--fix") == 1  # held back
    assert fixed.read_text() == (DATA / name).read_text()
    assert _lint(run_gpudoc, fixed, "--select", "GPD103", "--fix", "--unsafe-fixes") == 0
    (code, report), (fixed_code, fixed_report) = _emulate(script, fixed)
    assert code == 0 and "shape ok" in report, report
    assert fixed_code == 1 and "same device" in fixed_report  # what "unsafe" protects against
