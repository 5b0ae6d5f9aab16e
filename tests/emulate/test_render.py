"""The report as text: fixed width, no colour, into a StringIO (no torch needed to render)."""

from __future__ import annotations

from io import StringIO

import pytest

from gpudoc.emulate.command import check_torch
from gpudoc.emulate.model import (
    DeviceError,
    EmulationReport,
    PhaseCount,
    SourceLocation,
    TensorOrigin,
)
from gpudoc.emulate.render import render
from gpudoc.exit_codes import UsageError


def _report(**changes: object) -> EmulationReport:
    fields: dict[str, object] = dict(
        target="train.py",
        device_count=2,
        batch_limit=3,
        script_exit_code=0,
        wall_s=1.25,
        tensors_moved=12,
        modules_moved=1,
        ops_on_device=3456,
        batches_seen=9,
        loops_capped=3,
        phases=(
            PhaseCount("forward (training)", 6, "/nowhere/train.py:40", ("cuda:0",)),
            PhaseCount("optimizer step", 6, None, ()),
        ),
        error=None,
        not_emulated=None,
    )
    fields.update(changes)
    return EmulationReport(**fields)  # type: ignore[arg-type]


def _text(report: EmulationReport) -> str:
    out = StringIO()
    render(report, file=out, width=80)
    return out.getvalue()


def test_summary() -> None:
    text = _text(_report())
    assert "gpudoc run --emulate-cuda: no device errors" in text
    assert "  devices    2 emulated (cuda:0, cuda:1)" in text
    assert "9 batches from DataLoaders (capped at 3 batches; 3 loops cut short)" in text
    assert "12 tensors, 1 module" in text and "3,456 operations on emulated devices" in text
    assert "    forward (training)         6  on cuda:0   first at /nowhere/train.py:40" in text


def test_error_keeps_brackets_and_long_lines() -> None:
    source = "self.layers = [nn.Linear(width, width) for _ in range(depth)]"
    where = SourceLocation("/nowhere/model.py", 14, "__init__", source)
    error = DeviceError(
        error_type="RuntimeError",
        message="Expected all tensors to be on the same device, but found at least two "
        "devices, cuda:0 and cpu!",
        location=SourceLocation("/nowhere/model.py", 20, "forward", "x = layer(x)"),
        called_from=(SourceLocation("/nowhere/train.py", 5, "<module>", "model(batch)"),),
        operands=(
            TensorOrigin(
                "mat2", ("model.layers[0].weight",), "cpu", (6, 6), "created", where, None
            ),
        ),
        pattern="submodules kept in a plain list or dict",
        rule_code="GPD104",
        rule_name="modules-in-plain-container",
    )
    text = _text(_report(error=error, script_exit_code=1))
    lines = text.splitlines()
    assert (
        "  RuntimeError: Expected all tensors to be on the same device, but found at least two "
        "devices, cuda:0 and cpu!" in lines
    )
    assert "  at /nowhere/model.py:20 in forward" in lines
    assert "  called from /nowhere/train.py:5 in <module>" in lines
    assert f"`{source}`" in text  # "[...]" is not swallowed as markup
    assert "model.layers[0].weight" in text
    assert "  lint     GPD104 modules-in-plain-container:" in text


def test_not_emulated() -> None:
    text = _text(_report(not_emulated="cannot emulate a Triton kernel: it needs a real GPU."))
    assert "gpudoc run --emulate-cuda: stopped: cannot emulate a Triton kernel" in text


def test_a_torch_too_old_to_emulate_is_a_usage_error() -> None:
    """The [torch] extra allows torch>=2.1 for smoke and info; emulation says what it needs."""
    check_torch("2.13.0+cpu")
    check_torch("2.6.0")
    with pytest.raises(UsageError, match=r"needs torch>=2\.6; found torch 2\.1\.2"):
        check_torch("2.1.2")
    with pytest.raises(UsageError, match="needs torch"):
        check_torch(None)


def test_a_failure_of_gpudocs_own_is_not_the_scripts() -> None:
    failure = "gpudoc failed while putting what torch.load returned on devices: RuntimeError: x"
    text = _text(_report(gpudoc_failure=failure, script_exit_code=2))
    assert f"stopped: {failure}" in text and "bug in gpudoc, not in your script" in text
    assert "exited with" not in text and "no device errors" not in text


def test_columns_never_run_together() -> None:
    """A long shape keeps a space before the name; a long phase name keeps its count apart."""
    long_shape = TensorOrigin("input", ("batch",), "cuda:0", (1024, 3, 224, 224), None, None, None)
    error = DeviceError("RuntimeError", "boom", None, (), (long_shape,), "p", None, None)
    text = _text(_report(error=error, script_exit_code=1))
    assert "(1024, 3, 224, 224) batch" in text
    phases = (
        PhaseCount("forward (training)", 6, None, ("cuda:0",)),
        PhaseCount("torch.compile skipped (eager)", 1, None, ()),
    )
    lines = _text(_report(phases=phases)).splitlines()
    training = next(line for line in lines if "forward (training)" in line)
    compiled = next(line for line in lines if "(eager)" in line)
    assert "(eager) " in compiled
    assert training.index(" 6") == compiled.rindex(" 1")  # counts right-aligned together
