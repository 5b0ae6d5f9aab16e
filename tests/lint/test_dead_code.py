"""Module-level blocks that never run as written (``if False:``, a course's ``flag = 0`` /
``if flag:`` toggles) are neither reported nor read as running; what follows them is, at
its own line, and --fix still edits the file as written."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
from conftest import RunGpudoc
from lint_lines import lines

from gpudoc.lint.dead_code import without_dead_blocks

# zhangxiann's PyTorch_Practice: each section runs when its flag is flipped to 1 by hand
TOGGLED = """\
import os
import torch

flag = 0
# flag = 1
if flag:
    print(torch.cuda.is_available())

flag = {second}
if flag:
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "0,1")
    print(torch.cuda.get_device_name())
"""


def test_a_section_switched_off_does_not_initialise_cuda_for_the_next() -> None:
    assert lines(TOGGLED.format(second=1), "GPD403") == []
    # the first section switched on: CUDA is initialised before the variable is set
    first_on = TOGGLED.format(second=1).replace("flag = 0\n", "flag = 1\n", 1)
    assert lines(first_on, "GPD403") == [11]


def test_a_section_switched_off_reports_nothing_of_its_own() -> None:
    fallback = 'device = "cuda" if torch.cuda.is_available() else "cpu"\n'
    assert lines(TOGGLED.format(second=0) + fallback, "GPD205") == []
    assert lines(TOGGLED.format(second="True") + fallback, "GPD205") == [12]


DEVICE_DEMO = """\
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
{switch}
if {test}:
    net = nn.Linear(3, 3)
    net.to(device)
else:
    net = nn.Linear(3, 3)
x = torch.ones(2, 3).to(device)
print(net(x))
"""


def test_the_else_arm_of_a_dead_test_is_what_runs() -> None:
    # only the else arm runs: its host `net` meets a device batch
    assert lines(DEVICE_DEMO.format(switch="", test="False"), "GPD102") == [10]
    assert lines(DEVICE_DEMO.format(switch="flag = 0", test="flag"), "GPD102") == [10]
    # a switch rebound between its literal and the test is not known
    rebound = "flag = 0\nfor flag in range(2):\n    pass"
    assert lines(DEVICE_DEMO.format(switch=rebound, test="flag"), "GPD102") == [12]
    # as is a switch some function may set (`global flag`)
    shared = "flag = 0\ndef enable():\n    global flag\n    flag = 1"
    assert lines(DEVICE_DEMO.format(switch=shared, test="flag"), "GPD102") == [13]


def test_an_elif_after_a_dead_arm_stays_a_test() -> None:
    source = (
        "import torch\nflag = 0\nif flag:\n    a = 1\nelif torch.cuda.is_available():\n    b = 2\n"
    )
    module = cst.parse_module(source)
    live = without_dead_blocks(module, source)
    kept = live.body[-1]
    assert isinstance(kept, cst.If) and kept is module.body[-1].orelse
    # every statement kept is the parsed node itself
    assert live.body[:-1] == module.body[:-1]
    assert without_dead_blocks(module, source.replace("flag = 0", "flag = 2")) is module


def test_fix_edits_the_file_as_written_around_a_dead_block(
    run_gpudoc: RunGpudoc, tmp_path: Path
) -> None:
    script = tmp_path / "demo.py"
    source = DEVICE_DEMO.format(switch="flag = 0", test="flag")
    script.write_text(source)
    result = run_gpudoc("lint", "--no-cache", "--fix", "--unsafe-fixes", "demo.py", cwd=tmp_path)
    assert "Traceback" not in result.stderr, result.stderr
    fixed = script.read_text()
    # the live `net` is moved right after it is made; nothing else changes
    assert fixed.splitlines()[10] == "    net.to(device)", fixed
    assert fixed.splitlines()[:10] + fixed.splitlines()[11:] == source.splitlines()
    assert lines(fixed, "GPD102") == []
