"""The report of an emulated run, on stderr (the script's own output keeps stdout)."""

from __future__ import annotations

import os
from typing import IO

from rich.console import Console
from rich.text import Text

from gpudoc.console import make_console
from gpudoc.emulate.model import DeviceError, EmulationReport, SourceLocation, TensorOrigin

TITLE = "gpudoc run --emulate-cuda"


def render(report: EmulationReport, file: IO[str] | None = None, width: int | None = None) -> None:
    console = make_console(file=file, stderr=file is None, width=width)
    console.soft_wrap = True  # long paths and error texts stay on one line, for grep and CI logs
    console.print()
    if report.gpudoc_failure is not None:
        _say(console, f"{TITLE}: stopped: {report.gpudoc_failure}", "bold yellow")
        _say(console, "  this is a bug in gpudoc, not in your script; please report it")
    elif report.error is not None:
        _render_error(console, report.error)
    elif report.not_emulated is not None:
        _say(console, f"{TITLE}: stopped: {report.not_emulated}", "bold yellow")
    else:
        _render_summary(console, report)


def _render_error(console: Console, error: DeviceError) -> None:
    _say(console, f"{TITLE}: device error — a GPU raises this here", "bold red")
    console.print()
    _say(console, f"  {error.error_type}: {error.message}", "red")
    console.print()
    if error.location is not None:
        _print_location(console, "at", error.location)
    for caller in reversed(error.called_from):
        _print_location(console, "called from", caller)
    if error.operands:
        console.print()
        _say(console, "  tensors involved")
        for operand in error.operands:
            names = " = ".join(operand.names) or "(unnamed)"
            head = (
                f"    {operand.argument:<7} {operand.device:<7} {_shape(operand.shape):<15} {names}"
            )
            _say(console, head)
            _say(console, f"    {'':<8}{_how(operand)}")
    console.print()
    _say(console, f"  pattern  {error.pattern}")
    if error.rule_code is not None:
        where = _bug_file(error)
        _say(
            console,
            f"  lint     {error.rule_code} {error.rule_name}: "
            f"`gpudoc lint {where}` looks for this pattern without running the script",
        )


def _bug_file(error: DeviceError) -> str:
    """The file to lint: where the host tensor came from, else where the error surfaced."""
    for operand in error.operands:
        if operand.device == "cpu" and operand.where is not None:
            return _path(operand.where.file)
    return _path(error.location.file) if error.location is not None else "your script"


def _say(console: Console, text: str, style: str = "") -> None:
    """One line of output; never parsed as markup (source lines hold "[...]")."""
    console.print(Text(text, style=style))


def _print_location(console: Console, label: str, location: SourceLocation) -> None:
    _say(console, f"  {label} {_path(location.file)}:{location.line} in {location.function}")
    if location.source is not None:
        _say(console, f"      {location.source}", "bold")


def _how(operand: TensorOrigin) -> str:
    parts = []
    if operand.how is not None:
        where = operand.where
        at = f" at {_path(where.file)}:{where.line}" if where is not None else ""
        parts.append(f"{operand.how}{at}")
        if where is not None and where.source is not None:
            parts.append(f"`{where.source}`")
    if operand.note is not None:
        parts.append(f"({operand.note})")
    return " ".join(parts) or f"computed on {operand.device} by an earlier operation"


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(size) for size in shape) + ")"


def _render_summary(console: Console, report: EmulationReport) -> None:
    status = report.script_exit_code
    if status == 0:
        _say(console, f"{TITLE}: no device errors", "bold green")
    else:
        _say(console, f"{TITLE}: no device errors; the script exited with {status}", "bold")
    devices = ", ".join(f"cuda:{index}" for index in range(report.device_count))
    cap = f"capped at {report.batch_limit} batches" if report.batch_limit else "not capped"
    _say(console, f"  devices    {report.device_count} emulated ({devices})")
    _say(
        console,
        f"  data       {report.batches_seen} batches from DataLoaders ({cap}; "
        f"{report.loops_capped} loops cut short)",
    )
    modules = "module" if report.modules_moved == 1 else "modules"
    _say(console, f"  moved      {report.tensors_moved} tensors, {report.modules_moved} {modules}")
    _say(console, f"  ran        {report.ops_on_device:,} operations on emulated devices")
    _say(console, f"  time       {report.wall_s:.1f} s")
    if report.phases:
        _say(console, "  phases reached")
        width = max(22, *(len(phase.name) + 1 for phase in report.phases))
        for phase in report.phases:
            on = "on " + ", ".join(phase.devices) if phase.devices else ""
            first = f"first at {_path(phase.first_at)}" if phase.first_at else ""
            line = f"    {phase.name:<{width}}{phase.count:>6}  {on:<10}  {first}"
            _say(console, line.rstrip())
    for note in report.notes:
        _say(console, f"  note: {note}", "yellow")


def _path(path: str) -> str:
    """Paths under the current directory are shown relative to it, as the user typed them."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative
