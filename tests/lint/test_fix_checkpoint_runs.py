"""GPD201's map_location fix, checked by running: the fixed script evaluates on the device.

The script reloads a whole model from a checkpoint written outside it (here: by the test, as a
user's earlier training run would), then feeds it data on the device it chose with
``torch.accelerator.current_accelerator()``. ``gpudoc run --emulate-cuda`` stands in for a GPU.
Unfixed, or "fixed" with ``map_location="cpu"`` (the old fix, pytorch/examples
word_language_model), the model stays on the CPU and the first forward is a device error.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from conftest import REPO, RunGpudoc, emulate_batch

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).parent / "data" / "fix_runs" / "reload_whole_model.py"


def test_map_location_fix_passes_the_scripts_device(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    script = tmp_path / SCRIPT.name
    shutil.copy(SCRIPT, script)
    torch.save(torch.nn.Linear(4, 2), tmp_path / "ckpt.pt")
    cpu = tmp_path / "cpu_fixed.py"
    cpu.write_text(
        script.read_text().replace("weights_only=False", "weights_only=False, map_location='cpu'")
    )
    fixed = tmp_path / "fixed.py"
    shutil.copy(SCRIPT, fixed)
    result = run_gpudoc("lint", "--no-cache", "--fix", "--unsafe-fixes", fixed.name, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "map_location=device" in fixed.read_text()

    # One interpreter for the three runs: one torch import (conftest.emulate_batch).
    lines = [(path.name, "ckpt.pt") for path in (script, cpu, fixed)]
    unfixed_run, cpu_run, fixed_run = emulate_batch(lines, tmp_path, PYTHONPATH=str(REPO))
    code, out, err = unfixed_run
    report = out + err
    assert code == 1 and "Expected all tensors to be on the same device" in report, report
    code, out, err = cpu_run
    assert code == 1 and "same device" in out + err, "map_location='cpu' must be a device error"
    code, out, err = fixed_run
    report = out + err
    assert code == 0, report
    assert "no device errors" in report and "output on cuda:0" in report
