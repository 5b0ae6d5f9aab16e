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
from conftest import REPO, RunGpudoc

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).parent / "data" / "fix_runs" / "reload_whole_model.py"


def _emulate(run_gpudoc: RunGpudoc, script: Path) -> tuple[int, str]:
    result = run_gpudoc(
        "run", "--emulate-cuda", script.name, "ckpt.pt", cwd=script.parent,
        env={"PYTHONPATH": str(REPO)}, timeout=600,
    )  # fmt: skip
    return result.returncode, result.stdout + result.stderr


def test_map_location_fix_passes_the_scripts_device(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    script = tmp_path / SCRIPT.name
    shutil.copy(SCRIPT, script)
    torch.save(torch.nn.Linear(4, 2), tmp_path / "ckpt.pt")

    code, report = _emulate(run_gpudoc, script)
    assert code == 1 and "Expected all tensors to be on the same device" in report, report

    cpu = tmp_path / "cpu_fixed.py"
    cpu.write_text(
        script.read_text().replace("weights_only=False", "weights_only=False, map_location='cpu'")
    )
    code, report = _emulate(run_gpudoc, cpu)
    assert code == 1 and "same device" in report, "map_location='cpu' must be a device error"

    fixed = run_gpudoc("lint", "--no-cache", "--fix", "--unsafe-fixes", script.name, cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "map_location=device" in script.read_text()
    code, report = _emulate(run_gpudoc, script)
    assert code == 0, report
    assert "no device errors" in report and "output on cuda:0" in report
