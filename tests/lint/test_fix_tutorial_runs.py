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
from conftest import REPO, RunGpudoc, emulate_batch

pytestmark = pytest.mark.slow

STANDIN = Path(__file__).parent / "data" / "standin"


def _phase(report: str, name: str) -> str:
    return next(line for line in report.splitlines() if line.strip().startswith(name))


def test_fixed_tutorial_evaluates_on_the_device(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    fixed, unfixed = tmp_path / "fixed.py", tmp_path / "unfixed.py"
    for path in (fixed, unfixed):
        shutil.copy(REPO / "fixtures" / "cifar_tutorial.py", path)
    result = run_gpudoc("lint", "--no-cache", "--fix", "--unsafe-fixes", fixed.name, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert run_gpudoc("lint", "--no-cache", fixed.name, cwd=tmp_path).returncode == 0

    # Both runs in one interpreter (one torch import): conftest.emulate_batch.
    pythonpath = os.pathsep.join([str(STANDIN), str(REPO)])
    lines = [("--batches", "3", path.name) for path in (fixed, unfixed)]
    (code, out, err), unfixed_run = emulate_batch(lines, tmp_path, PYTHONPATH=pythonpath)
    report = out + err
    assert code == 0, report
    assert "no device errors" in report and "Accuracy of plane" in report
    assert "on cuda:0" in _phase(report, "forward (training)")
    assert "on cuda:0" in _phase(report, "forward (evaluation)")
    assert "checkpoint loaded" in report

    code, out, err = unfixed_run
    report = out + err
    assert code == 0, report  # no crash: the unfixed evaluation silently runs on the CPU
    assert "on cpu" in _phase(report, "forward (evaluation)")
