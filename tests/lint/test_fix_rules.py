"""Fixes of the real rules: INVALID examples with a fix, the fixture scripts, generated programs."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from programs import PROGRAMS

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import python_findings
from gpudoc.lint.fix import fix_source, keeps_user_code
from gpudoc.lint.model import Finding
from gpudoc.lint.rule import Invalid, Rule, all_rules

CONFIG = LintConfig()


def lint(text: str) -> list[Finding]:
    return python_findings(text, "example.py", CONFIG)


def _fixable(rule: type[Rule], example: Invalid) -> bool:
    return any(f.code == rule.CODE and f.fix is not None for f in lint(example.code))


FIXABLE = [(r, e) for r in all_rules() for e in r.INVALID if _fixable(r, e)]


def test_some_rules_ship_fixes() -> None:
    assert len({rule.CODE for rule, _ in FIXABLE}) >= 4


@pytest.mark.parametrize(
    ("rule", "example"), FIXABLE, ids=[f"{r.CODE}-{i}" for i, (r, _) in enumerate(FIXABLE)]
)
def test_invalid_example_fix_round_trips(rule: type[Rule], example: Invalid) -> None:
    result = fix_source(example.code, lint, unsafe=True)
    assert result.changed
    cst.parse_module(result.fixed)
    assert keeps_user_code(example.code, result.fixed)
    assert not [f for f in result.remaining if f.code == rule.CODE], result.fixed
    assert result.remaining == tuple(lint(result.fixed))
    assert not fix_source(result.fixed, lint, unsafe=True).changed


@pytest.mark.parametrize(
    ("rule", "example"), FIXABLE, ids=[f"{r.CODE}-{i}" for i, (r, _) in enumerate(FIXABLE)]
)
def test_unsafe_fixes_wait_for_the_flag(rule: type[Rule], example: Invalid) -> None:
    own = [f for f in lint(example.code) if f.code == rule.CODE and f.fix is not None]
    result = fix_source(example.code, lint, unsafe=False)
    if all(f.fix is not None and not f.fix.safe for f in own):
        assert any(f.code == rule.CODE for f in result.remaining)
    else:
        assert result.changed


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(PROGRAMS)
def test_fix_on_generated_programs(source: str) -> None:
    """--fix never leaves source that fails to parse, never touches a file without findings."""
    findings = lint(source)
    result = fix_source(source, lint, unsafe=True)
    cst.parse_module(result.fixed)
    assert keeps_user_code(source, result.fixed)
    if not findings:
        assert result.fixed == source
    if result.changed:
        assert not fix_source(result.fixed, lint, unsafe=True).changed


FIXTURES = sorted((Path(__file__).parents[2] / "fixtures").glob("**/*.py"))


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_fixture_scripts_fix_cleanly(path: Path) -> None:
    """Every realistic fixture: all fixes land, the result parses, a second run is a no-op."""
    source = path.read_text(encoding="utf-8")
    result = fix_source(source, lint, unsafe=True)
    cst.parse_module(result.fixed)
    assert keeps_user_code(source, result.fixed)
    assert result.rejected == () and result.converged
    assert not [f for f in result.remaining if f.fix is not None]
    assert not fix_source(result.fixed, lint, unsafe=True).changed


REBOUND_DEVICE = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    pass


device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
net = Net().to(device)
loader = torch.utils.data.DataLoader(dataset)
for images, labels in loader:
    outputs = net(images)
    labels = device.to(device)
    device = torch.ones(3)
def step(batch):
    for images, labels in loader:
        images = images.to(device)
        outputs = net(images)
"""


def test_a_name_rebound_from_the_device_is_never_a_move_target() -> None:
    """Found by hypothesis: `labels = device.to(device)` once typed `labels` as a device, and the
    unmoved-batch fix then wrote `images.to(labels)`, which never converged."""
    result = fix_source(REBOUND_DEVICE, lint, unsafe=True)
    cst.parse_module(result.fixed)
    assert ".to(labels)" not in result.fixed
    assert "images, labels = images.to(device), labels.to(device)" in result.fixed
    assert result.converged
    assert not fix_source(result.fixed, lint, unsafe=True).changed


SHADOWED_DEVICE = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    pass


device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
net = Net().to(device)
loader = torch.utils.data.DataLoader(dataset)
def step(batch):
    for device in loader:
        pass
    for images, labels in loader:
        outputs = net(images)
"""


def test_a_device_name_a_function_rebinds_is_never_a_move_target() -> None:
    """Found by hypothesis: `for device in loader` makes `device` a local of `step`, yet the
    unmoved-batch fix wrote `images.to(device)` with it, which never converged (and would move
    to a batch, not the device). The finding stays; no fix is offered."""
    assert [f.code for f in lint(SHADOWED_DEVICE)] == ["GPD101"]
    result = fix_source(SHADOWED_DEVICE, lint, unsafe=True)
    assert result.fixed == SHADOWED_DEVICE
    later = SHADOWED_DEVICE.replace("    for device in loader:\n        pass\n", "") + (
        "    device = batch\n"  # bound after the loop: still local in all of `step`
    )
    assert "images.to(device)" not in fix_source(later, lint, unsafe=True).fixed


def test_numpy_fix_is_safe_only_for_a_known_device_tensor() -> None:
    from gpudoc.lint.config import LintConfig
    from gpudoc.lint.engine import lint_source
    from gpudoc.lint.rules.gpd202_numpy_on_device_tensor import NumpyOnDeviceTensor

    safety = []
    for example in NumpyOnDeviceTensor.INVALID:
        result = lint_source(example.code, "x.py", LintConfig(select=("GPD202",)))
        (finding,) = result.findings
        safety.append(None if finding.fix is None else finding.fix.safe)
    # placed model's output: safe; np.mean reduction: unsafe; a parameter typed by name: unsafe;
    # a list of device tensors: no fix (the list is built elsewhere)
    assert safety == [True, False, False, None]


def test_discarded_move_fix_is_safe_only_where_the_device_needs_it() -> None:
    from gpudoc.lint.config import LintConfig
    from gpudoc.lint.engine import lint_source

    def safety(source: str) -> bool | None:
        (finding,) = lint_source(source, "x.py", LintConfig(select=("GPD103",))).findings
        return finding.fix.safe if finding.fix is not None else None

    head = 'import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
    placed = head + "model = torch.nn.Linear(4, 2).to(device)\nx = torch.randn(3, 4)\n"
    assert safety(placed + "x.to(device)\ny = model(x)\n") is True
    assert safety(placed + "x.to(device)\nprint(x.shape)\ny = model(x)\n") is False
    host = head + "model = torch.nn.Linear(4, 2)\nx = torch.randn(3, 4)\n"
    assert safety(host + "x.to(device)\ny = model(x)\n") is False  # the model stays on the CPU
    assert safety(placed + "x = x.to(device)\nx.half()\ny = model(x)\n") is False  # a dtype


SCRIPTS_ONE_AFTER_THE_OTHER = """\
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(8, 3).to(device)
out = model(torch.randn(2, 8).to(device))

model = nn.Linear(4, 4)
model.to(device)
out = model(torch.randn(2, 4).to(device))

model = nn.Linear(4, 2)
out = model(torch.randn(2, 4).to(device))
"""


def test_a_rebinding_moved_before_its_use_is_not_reported_for_a_later_one() -> None:
    """Scripts pasted one after the other (bench/lint_bigfile.py): the second `model = ...` is
    moved before its use; only the third stays on the host. The third's use once reported the
    second too, so its fix (`model.to(device)`) came back in every round and --fix started over."""
    found = [(f.code, f.line) for f in lint(SCRIPTS_ONE_AFTER_THE_OTHER)]
    assert found == [("GPD102", 12)]
    passes: list[str] = []

    def counted(text: str) -> list[Finding]:
        passes.append(text)
        return lint(text)

    result = fix_source(SCRIPTS_ONE_AFTER_THE_OTHER, counted, unsafe=True)
    assert result.fixed.count("model.to(device)") == 2 and result.remaining == ()
    assert len(passes) == 2  # the source, then the fixed text: one round, nothing came back


TWO_DEVICE_ARGUMENTS = """\
import torch
from sklearn.metrics import accuracy_score

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)
targets = torch.randint(0, 2, (8,)).to(device)
predictions = model(torch.randn(8, 4).to(device)).argmax(dim=1)
print(accuracy_score(targets, predictions))
"""


def test_a_call_given_two_device_tensors_is_fixed_in_one_round() -> None:
    """GPD202 reported the first device argument of a NumPy / scikit-learn call only, so --fix
    needed a round for each; now one finding names both and its fix moves both."""
    (finding,) = lint(TWO_DEVICE_ARGUMENTS)
    assert finding.code == "GPD202" and "`targets`, `predictions`" in finding.message
    passes: list[str] = []

    def counted(text: str) -> list[Finding]:
        passes.append(text)
        return lint(text)

    result = fix_source(TWO_DEVICE_ARGUMENTS, counted)
    assert "accuracy_score(targets.cpu(), predictions.cpu())" in result.fixed
    assert result.remaining == () and len(passes) == 2
