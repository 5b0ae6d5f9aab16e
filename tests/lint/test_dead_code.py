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


def test_a_switch_with_another_arm_is_a_mode_and_stays() -> None:
    # `if flag: ... else: ...` runs one arm or the other: both are read, joined
    assert lines(DEVICE_DEMO.format(switch="flag = 0", test="flag"), "GPD102") == [10]
    source = (
        "import torch\nflag = 0\nif flag:\n    a = 1\nelif torch.cuda.is_available():\n    b = 2\n"
    )
    module = cst.parse_module(source)
    assert without_dead_blocks(module, source) is module


MODE = """\
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(3, 3).to(device)
train = False  # set to True to train first
{second}
if train:
    torch.save(model.state_dict(), "model.pth")
model.load_state_dict(torch.load("model.pth"))
"""


def test_a_section_switched_off_once_still_tells_what_the_file_saves() -> None:
    # one `train = False`: a mode the reader sets, whose save the load reads back
    assert lines(MODE.format(second=""), "GPD201") == []
    # a switch set again and again (`flag = 0` before each demo) is a toggle: switched off,
    # its section is not there
    toggled = MODE.format(second="train = False")
    assert lines(toggled, "GPD201") == [10]


def test_dead_sections_are_left_out_and_the_rest_is_the_parsed_nodes() -> None:
    source = "import torch\nif False:\n    a = 1\nflag = 0\nflag = 0\nif flag:\n    b = 2\nc = 3\n"
    module = cst.parse_module(source)
    live = without_dead_blocks(module, source)
    assert [module.body.index(s) for s in live.body] == [0, 2, 3, 5]
    # a switch some function may set (`global flag`) is not known
    shared = source + "def enable():\n    global flag\n    flag = 1\n"
    kept = without_dead_blocks(cst.parse_module(shared), shared).body
    assert len(kept) == 6 and isinstance(kept[3], cst.If)


TOGGLED_DEMOS = """\
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
flag = 0
if flag:
    net = nn.Linear(3, 3).to(device)
flag = 0
if flag:
    print(net)
net = nn.Linear(3, 3)
x = torch.ones(2, 3).to(device)
print(net(x))
"""


def test_fix_edits_the_file_as_written_around_a_dead_block(
    run_gpudoc: RunGpudoc, tmp_path: Path
) -> None:
    script = tmp_path / "demo.py"
    script.write_text(TOGGLED_DEMOS)
    result = run_gpudoc("lint", "--no-cache", "--fix", "--unsafe-fixes", "demo.py", cwd=tmp_path)
    assert "Traceback" not in result.stderr, result.stderr
    fixed = script.read_text().splitlines()
    # the live `net` is moved right after it is made; the sections switched off are untouched
    assert fixed[11] == "net.to(device)", fixed
    assert fixed[:11] + fixed[12:] == TOGGLED_DEMOS.splitlines()
    assert lines("\n".join(fixed) + "\n", "GPD102") == []
