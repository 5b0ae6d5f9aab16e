"""What an emulated run found: the first device error, or how far the script got."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """What to run: a script path or a module name, and its own arguments."""

    name: str
    args: tuple[str, ...]
    as_module: bool


@dataclass(frozen=True)
class SourceLocation:
    """A line of the user's own code."""

    file: str
    line: int
    function: str
    source: str | None


@dataclass(frozen=True)
class TensorOrigin:
    """One tensor involved in the failing operation, and how it got to its device."""

    argument: str
    names: tuple[str, ...]
    device: str
    shape: tuple[int, ...]
    how: str | None
    where: SourceLocation | None
    note: str | None


@dataclass(frozen=True)
class DeviceError:
    """The first device error: what a GPU would raise, where, and which lint rule covers it."""

    error_type: str
    message: str
    location: SourceLocation | None
    called_from: tuple[SourceLocation, ...]
    operands: tuple[TensorOrigin, ...]
    pattern: str
    rule_code: str | None
    rule_name: str | None


@dataclass(frozen=True)
class PhaseCount:
    name: str
    count: int
    first_at: str | None
    devices: tuple[str, ...]


@dataclass(frozen=True)
class EmulationReport:
    target: str
    device_count: int
    batch_limit: int | None
    script_exit_code: int
    wall_s: float
    tensors_moved: int
    modules_moved: int
    ops_on_device: int
    batches_seen: int
    loops_capped: int
    phases: tuple[PhaseCount, ...]
    error: DeviceError | None
    not_emulated: str | None
    notes: tuple[str, ...] = ()
    gpudoc_failure: str | None = None  # gpudoc's own failure: no verdict on the script
