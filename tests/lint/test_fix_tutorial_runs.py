"""Done when: the tutorial fixed by `gpudoc lint --fix --unsafe-fixes` evaluates on the device.

The verbatim tutorial (fixtures/cifar_tutorial.py) is fixed by the real CLI, then run by
`gpudoc run --emulate-cuda` (the CPU standing in for a GPU, with the GPU's placement rules). The
script imports torchvision, which cannot be imported here (a CUDA build beside a CPU torch) and
downloads CIFAR-10, which cannot be reached: tests/lint/data/standin serves the same two APIs
with synthetic CIFAR-shaped data. Unfixed, the same run evaluates on the CPU.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import REPO, RunGpudoc

pytestmark = pytest.mark.slow

STANDIN = Path(__file__).parent / "data" / "standin"


def _emulate(run_gpudoc: RunGpudoc, script: Path) -> tuple[int, str]:
    env = {"PYTHONPATH": os.pathsep.join([str(STANDIN), str(REPO)])}
    result = run_gpudoc(
        "run", "--emulate-cuda", "--batches", "3", script.name, cwd=script.parent, env=env
    )
    return result.returncode, result.stdout + result.stderr


def _phase(report: str, name: str) -> str:
    return next(line for line in report.splitlines() if line.strip().startswith(name))


def test_fixed_tutorial_evaluates_on_the_device(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    fixed = tmp_path / "fixed" / "cifar_tutorial.py"
    unfixed = tmp_path / "unfixed" / "cifar_tutorial.py"
    for path in (fixed, unfixed):
        path.parent.mkdir()
        shutil.copy(REPO / "fixtures" / "cifar_tutorial.py", path)
    result = run_gpudoc(
        "lint", "--no-cache", "--fix", "--unsafe-fixes", fixed.name, cwd=fixed.parent
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert run_gpudoc("lint", "--no-cache", fixed.name, cwd=fixed.parent).returncode == 0

    code, report = _emulate(run_gpudoc, fixed)
    assert code == 0, report
    assert "no device errors" in report and "Accuracy of plane" in report
    assert "on cuda:0" in _phase(report, "forward (training)")
    assert "on cuda:0" in _phase(report, "forward (evaluation)")
    assert "checkpoint loaded" in report

    code, report = _emulate(run_gpudoc, unfixed)
    assert code == 0, report  # no crash: the unfixed evaluation silently runs on the CPU
    assert "on cpu" in _phase(report, "forward (evaluation)")
