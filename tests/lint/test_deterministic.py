"""The same text gives the same findings and fixes in every process: nothing in the analysis may
depend on the order of a set of strings, which changes with PYTHONHASHSEED."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# several device names, joined where the branches meet: which one a fix uses must not change
SCRIPT = """\
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument("--flag", action="store_true")
args = parser.parse_args()
if args.flag:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    main_device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    gpu = torch.device("cuda" if torch.cuda.is_available() else "cpu")
else:
    gpu = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    main_device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2)
x = torch.randn(3, 4).to(device)
print(model(x))
"""


def test_findings_and_fixes_do_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT, encoding="utf-8")
    outputs = set()
    for seed in ("0", "1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
        done = subprocess.run(
            [sys.executable, "-m", "gpudoc", "lint", "--no-cache", "--diff", "--unsafe-fixes",
             str(script)],
            capture_output=True, text=True, env=env, check=False,
        )  # fmt: skip
        assert done.returncode in (0, 1), done.stderr
        outputs.add(done.stdout)
    assert len(outputs) == 1, outputs
    assert "model" in next(iter(outputs))
