"""Torch's warnings under `gpudoc run --emulate-cuda` name the line a plain run names: the
user's, never gpudoc's own frames (issue 13, item 6)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from conftest import RunGpudoc, gpudoc_env

SCRIPT = """\
import torch
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "cpu"
x = torch.randn(1, 1, 4, 4, device=device)
grid = torch.rand(1, 2, 2, 2, device=device) * 2 - 1
y = F.grid_sample(x, grid)
copy = torch.ones(2, device=device).new_tensor(torch.zeros(2))
print(device, tuple(y.shape), tuple(copy.shape))
"""
LOCATION = re.compile(r"^(?P<file>\S+):(?P<line>\d+): UserWarning", re.MULTILINE)


def warned_at(stderr: str) -> list[tuple[str, int]]:
    return [(Path(m["file"]).name, int(m["line"])) for m in LOCATION.finditer(stderr)]


def test_warnings_name_the_same_lines_as_a_plain_run(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    plain = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=gpudoc_env()
    )
    assert plain.returncode == 0 and plain.stdout.startswith("cpu"), plain.stderr
    emulated = run_gpudoc("run", "--emulate-cuda", str(script))
    assert emulated.returncode == 0 and emulated.stdout.startswith("cuda"), emulated.stderr
    # the align_corners default (a Python warning) and new_tensor's copy warning (from C++)
    assert warned_at(plain.stderr) == [("train.py", 7), ("train.py", 8)]
    assert warned_at(emulated.stderr) == warned_at(plain.stderr)
    assert "gpudoc" not in emulated.stderr.split("gpudoc run --emulate-cuda:")[0]
