"""`nvidia-smi --query-gpu=... --format=csv`: a header of query names (units in brackets with
`nounits`), one row per GPU. Only columns gpudoc models are read; without the header the columns
cannot be named, and the text is not recognised."""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from typing import Any

from gpudoc.info.reports import values as v
from gpudoc.info.reports.facts import Facts, GpuFacts, normalize_bus_id

FORMAT = "nvidia-smi --query-gpu"
_UNIT = re.compile(r"\s*\[([^\]]+)\]\s*$")
Reader = Callable[[str], Any]


def _bus(text: str) -> str | None:
    return normalize_bus_id(text) if v.is_value(text) else None


def _text(text: str) -> str | None:
    return text.strip() if v.is_value(text) else None


# Query name (nvidia-smi --help-query-gpu, first name and its aliases) -> GpuInfo field, reader.
COLUMNS: dict[str, tuple[str, Reader]] = {
    "index": ("nvml_index", v.integer),
    "name": ("name", _text),
    "gpu_name": ("name", _text),
    "uuid": ("uuid", _text),
    "gpu_uuid": ("uuid", _text),
    "pci.bus_id": ("pci_bus_id", _bus),
    "gpu_bus_id": ("pci_bus_id", _bus),
    "compute_cap": ("compute_capability", _text),
    "persistence_mode": ("persistence_mode", v.switch),
    "display_active": ("display_active", v.switch),
    "compute_mode": ("compute_mode", v.compute_mode),
    "temperature.gpu": ("temperature_c", v.integer),
    "utilization.gpu": ("utilization_gpu_percent", v.integer),
    "utilization.memory": ("utilization_memory_percent", v.integer),
    "memory.total": ("memory_total_bytes", v.bytes_of),
    "memory.used": ("memory_used_bytes", v.bytes_of),
    "memory.free": ("memory_free_bytes", v.bytes_of),
    "memory.reserved": ("memory_reserved_bytes", v.bytes_of),
    "power.draw": ("power_draw_mw", v.milliwatts),
    "power.draw.average": ("power_draw_mw", v.milliwatts),
    "power.limit": ("power_limit_mw", v.milliwatts),
    "enforced.power.limit": ("power_limit_mw", v.milliwatts),
    "power.default_limit": ("power_default_limit_mw", v.milliwatts),
    "clocks.sm": ("clock_sm_mhz", v.integer),
    "clocks.current.sm": ("clock_sm_mhz", v.integer),
    "clocks.max.sm": ("clock_sm_max_mhz", v.integer),
    "clocks.max.sm_clock": ("clock_sm_max_mhz", v.integer),
    "pcie.link.gen.current": ("pcie_link_gen_current", v.integer),
    "pcie.link.gen.max": ("pcie_link_gen_max", v.integer),
    "pcie.link.gen.gpumax": ("pcie_link_gen_gpu_max", v.integer),
    "pcie.link.width.current": ("pcie_link_width_current", v.integer),
    "pcie.link.width.max": ("pcie_link_width_max", v.integer),
    "mig.mode.current": ("mig_mode_current", v.switch),
    "mig.mode.pending": ("mig_mode_pending", v.switch),
    "ecc.mode.current": ("ecc_mode_current", v.switch),
    "ecc.mode.pending": ("ecc_mode_pending", v.switch),
    "ecc.errors.uncorrected.volatile.total": ("ecc_uncorrected_volatile", v.integer),
    "retired_pages.pending": ("retired_pages_pending", v.switch),
    "remapped_rows.correctable": ("remapped_rows_correctable", v.integer),
    "remapped_rows.uncorrectable": ("remapped_rows_uncorrectable", v.integer),
    "remapped_rows.pending": ("remapped_rows_pending", v.switch),
    "remapped_rows.failure": ("remapped_rows_failure", v.switch),
}
# clocks_event_reasons.hw_slowdown, clocks_throttle_reasons.hw_slowdown, ...
_REASON = re.compile(r"^clocks_(?:event|throttle)_reasons\.(?!active|supported)(\w+)$")
_BARE = re.compile(r"^-?\d+(?:\.\d+)?$")
_DRIVER = ("driver_version",)


def _header(line: str) -> list[tuple[str, str | None]] | None:
    """(query name, unit) per column, or None when this is not a query header."""
    columns = []
    for cell in next(csv.reader([line]), []):
        unit = _UNIT.search(cell)
        name = _UNIT.sub("", cell).strip()
        if not re.fullmatch(r"[\w.]+", name):
            return None  # query names are words and dots: this is the command line, or prose
        columns.append((name, unit.group(1) if unit else None))
    known = [c for c, _ in columns if c in COLUMNS or c in _DRIVER or _REASON.match(c)]
    return columns if len(known) >= 2 and len(known) >= len(columns) / 2 else None


def looks_like(text: str) -> bool:
    return any(_header(line) for line in text.splitlines() if "," in line)


def parse(text: str) -> Facts:
    facts = Facts(FORMAT)
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "," in line and _header(line))
    columns = _header(lines[start]) or []
    facts.gpus = []
    for row in csv.reader(lines[start + 1 :], skipinitialspace=True):
        if len(row) != len(columns):
            break  # the table ends
        _row(facts, columns, row)
    return facts


def _row(facts: Facts, columns: list[tuple[str, str | None]], row: list[str]) -> None:
    fields: dict[str, Any] = {}
    reasons: list[str] = []
    said_reasons = False
    for (name, unit), cell in zip(columns, row, strict=True):
        value = cell.strip()
        if unit and _BARE.match(value):
            value = f"{value} {unit}"  # --format=csv,nounits: the unit is in the header
        if name in _DRIVER and v.is_value(value):
            facts.driver.update(driver_version=value, nvml_error=None)
        reason = _REASON.match(name)
        if reason and v.switch(value) is not None:
            said_reasons = True
            if v.switch(value):
                reasons.append(reason.group(1))
        if name in COLUMNS:
            target, read = COLUMNS[name]
            parsed = read(value)
            if parsed is not None:
                fields.setdefault(target, parsed)
    if said_reasons:
        fields["clocks_event_reasons"] = tuple(reasons)
    index = fields.pop("nvml_index", None)
    assert facts.gpus is not None
    facts.gpus.append(GpuFacts(index, fields))
