"""bench/emulate_fidelity.py's label check: what a real GPU's run says of a lint corpus script.

The check runs only where a GPU is lent; its reading of a run is tested here on recorded runs.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import cast

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = """\
import torch
model = torch.nn.Linear(2, 2).cuda()
out = model(torch.ones(1, 2))  # expect: {code}
print(out)
"""
LabelCheck = Callable[[Path, dict[str, object]], str]
MISMATCH = "RuntimeError: Expected all tensors to be on the same device, but found cuda:0 and cpu!"


@pytest.fixture(scope="module")
def label_check() -> LabelCheck:
    spec = importlib.util.spec_from_file_location(
        "emulate_fidelity", REPO / "bench/emulate_fidelity.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["emulate_fidelity"] = module
    spec.loader.exec_module(module)
    return cast(LabelCheck, module.label_check)


def run(code: int, error: str = "", frames: tuple[int, ...] = ()) -> dict[str, object]:
    return {
        "code": code,
        "error": error,
        "line": frames[-1] if frames else None,
        "frames": list(frames),
    }


def script(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.py"
    path.write_text(text)
    return path


def test_a_device_error_at_the_marked_line_confirms_the_label(
    label_check: LabelCheck, tmp_path: Path
) -> None:
    marked = script(tmp_path, SCRIPT.format(code="GPD101"))
    assert label_check(marked, run(1, MISMATCH, (3,))) == "bug: raised at a marked line"
    assert label_check(marked, run(1, MISMATCH, (4,))).startswith("bug: raised later")


def test_a_marked_bug_that_runs_clean_is_flagged_unless_its_rule_is_quiet(
    label_check: LabelCheck, tmp_path: Path
) -> None:
    assert label_check(script(tmp_path, SCRIPT.format(code="GPD101")), run(0)) == "bug: RAN CLEAN"
    quiet = label_check(script(tmp_path, SCRIPT.format(code="GPD201")), run(0))
    assert quiet.startswith("bug: quiet on a GPU")


def test_other_failures_and_memory_are_no_verdict(label_check: LabelCheck, tmp_path: Path) -> None:
    marked = script(tmp_path, SCRIPT.format(code="GPD101"))
    assert label_check(marked, run(1, "FileNotFoundError: data.pt", (3,))) == "not runnable here"
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 54.21 GiB."
    assert label_check(marked, run(1, oom, (3,))) == "not runnable here"


def test_correct_scripts(label_check: LabelCheck, tmp_path: Path) -> None:
    correct = script(tmp_path, SCRIPT.replace("# expect: {code}", "# fp: GPD101"))
    assert label_check(correct, run(0)) == "correct: clean"
    assert label_check(correct, run(1, MISMATCH, (3,))) == "CORRECT-LABELLED RAISED"
    assert label_check(script(tmp_path, "print(1)\n"), run(0)) == ""
