"""GPD201's map_location fix, checked by running: the fixed script evaluates on the device.

The script reloads a whole model from a checkpoint written outside it (here: by the test, as a
user's earlier training run would), then feeds it data on the device it chose with
``torch.accelerator.current_accelerator()``. ``gpudoc run --emulate-cuda`` stands in for a GPU.
Unfixed, or "fixed" with ``map_location="cpu"`` (the old fix, pytorch/examples
word_language_model), the model stays on the CPU and the first forward is a device error.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import REPO, RunGpudoc, gpudoc_env, stretch

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).parent / "data" / "fix_runs" / "reload_whole_model.py"


BATCH_RUNNER = REPO / "tests" / "emulate" / "batch_runner.py"


def _emulate(folder: Path, *scripts: Path) -> list[tuple[int, str]]:
    """``gpudoc run --emulate-cuda SCRIPT ckpt.pt`` in ``folder`` for each script, all in one
    interpreter (batch_runner.py: one torch import): (exit status, output) of each."""
    done = subprocess.run(
        [sys.executable, str(BATCH_RUNNER)],
        input=json.dumps([[script.name, "ckpt.pt"] for script in scripts]),
        cwd=folder,
        env=gpudoc_env(PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=stretch(300),
    )
    assert done.returncode == 0, done.stderr
    return [(run["code"], run["out"] + run["err"]) for run in json.loads(done.stdout)]


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

    unfixed_run, cpu_run, fixed_run = _emulate(tmp_path, script, cpu, fixed)
    code, report = unfixed_run
    assert code == 1 and "Expected all tensors to be on the same device" in report, report
    code, report = cpu_run
    assert code == 1 and "same device" in report, "map_location='cpu' must be a device error"
    code, report = fixed_run
    assert code == 0, report
    assert "no device errors" in report and "output on cuda:0" in report
