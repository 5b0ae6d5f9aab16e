"""One GPU of `nvidia-smi -q` (text) or `-q -x` (XML) into GpuInfo fields.

Both parsers flatten a GPU's section into `path -> value` (`"fb memory usage/total"` in text,
`"fb_memory_usage/total"` in XML); the tables below name, per field, the paths nvidia-smi has
used across driver releases, the first present winning.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpudoc.info.model import GpuProcess, MigInstance
from gpudoc.info.reports import values as v
from gpudoc.info.reports.facts import normalize_bus_id

Paths = Mapping[str, tuple[str, ...]]


@dataclass
class Section:
    """A GPU's values by path, and its repeated groups (processes, MIG devices)."""

    values: dict[str, str]
    processes: list[dict[str, str]] | None = None  # None: not shown; []: shown, none running
    mig_devices: list[dict[str, str]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def fields_of(section: Section, paths: Paths) -> dict[str, Any]:
    """The GpuInfo fields `section` gives, read through `paths` (canonical name -> paths)."""

    def get(name: str) -> str | None:
        return next((section.values[p] for p in paths.get(name, ()) if p in section.values), None)

    def put(target: str, value: Any) -> None:
        if value is not None:
            fields[target] = value

    fields: dict[str, Any] = {}
    name = get("name")
    put("name", name if v.is_value(name) else None)
    uuid = get("uuid")
    put("uuid", uuid if v.is_value(uuid) else None)
    put("minor_number", v.integer(get("minor")))
    bus = get("bus")
    put("pci_bus_id", normalize_bus_id(bus) if bus and v.is_value(bus) else None)
    for target, source in _SWITCHES.items():
        put(target, v.switch(get(source)))
    for target, source in _INTEGERS.items():
        put(target, v.integer(get(source)))
    for target, source in _BYTES.items():
        put(target, v.bytes_of(get(source)))
    for target, source in _WATTS.items():
        put(target, v.milliwatts(get(source)))
    put("pcie_link_width_current", v.link_width(get("width_current")))
    put("pcie_link_width_max", v.link_width(get("width_max")))
    put("compute_mode", v.compute_mode(get("compute_mode")))
    put("remapped_rows_failure", v.switch(get("remap_failure")))
    put("fabric_state", _fabric_state(get("fabric_state")))
    status = get("fabric_status")
    put("fabric_status", status if v.is_value(status) else None)
    put("recovery_action", _recovery(get("recovery")))
    if v.switch(get("reset_required")) is not None:  # the model's default is False: say it
        fields["reset_required"] = v.switch(get("reset_required"))
    return fields


# nvidia-smi's words for NVML's fabric states; "N/A": the GPU has no fabric to join.
_FABRIC = {
    "n/a": "not_supported",
    "not supported": "not_supported",
    "not started": "not_started",
    "in progress": "in_progress",
    "completed": "completed",
}
_RECOVERY = {"reset": "gpu_reset", "reboot": "node_reboot"}


def _fabric_state(text: str | None) -> str | None:
    return None if text is None else _FABRIC.get(text.strip().lower())


def _recovery(text: str | None) -> str | None:
    """`None`, `GPU Reset`, `Node Reboot`, `Drain P2P`, `Drain and Reset` -> NVML's names."""
    if text is None or not text.strip() or text.strip().upper() == "N/A":
        return None
    name = text.strip().lower().replace(" ", "_")
    return _RECOVERY.get(name, name)


_SWITCHES = {
    "persistence_mode": "persistence",
    "display_active": "display_active",
    "mig_mode_current": "mig_current",
    "mig_mode_pending": "mig_pending",
    "retired_pages_pending": "retired_pending",
    "ecc_mode_current": "ecc_current",
    "ecc_mode_pending": "ecc_pending",
    "remapped_rows_pending": "remap_pending",
}
_INTEGERS = {
    "pcie_link_gen_current": "gen_current",
    "pcie_link_gen_max": "gen_max",
    "pcie_link_gen_gpu_max": "gen_gpu_max",
    "utilization_gpu_percent": "util_gpu",
    "utilization_memory_percent": "util_memory",
    "temperature_c": "temperature",
    "clock_sm_mhz": "clock_sm",
    "clock_sm_max_mhz": "clock_sm_max",
    "remapped_rows_correctable": "remap_corr",
    "remapped_rows_uncorrectable": "remap_unc",
    "pcie_replay_count": "replays",
}
_BYTES = {
    "memory_total_bytes": "memory_total",
    "memory_used_bytes": "memory_used",
    "memory_free_bytes": "memory_free",
    "memory_reserved_bytes": "memory_reserved",
}
_WATTS = {
    "power_draw_mw": "power_draw",
    "power_limit_mw": "power_limit",
    "power_default_limit_mw": "power_default",
}


def ecc_uncorrected(values: Mapping[str, str], volatile: str, double_bit_total: str) -> int | None:
    """Volatile uncorrectable errors: `<volatile>/*uncorrectable*` summed (SRAM and DRAM, R470+),
    or the older `Double Bit/Total`; None when nvidia-smi gives neither (ECC off: N/A)."""
    if double_bit_total in values:
        return v.integer(values[double_bit_total])
    counts = [
        v.integer(value)
        for path, value in values.items()
        if path.startswith(volatile) and "uncorrectable" in path.rpartition("/")[2]
    ]
    known = [c for c in counts if c is not None]
    return sum(known) if known else None


def clock_reasons(values: Mapping[str, str], prefixes: tuple[str, ...]) -> tuple[str, ...] | None:
    """The active clocks-event (throttle) reasons, in NVML's names; None when none is given."""
    active: list[str] = []
    seen = False
    for path, value in values.items():
        prefix = next((p for p in prefixes if path.startswith(p)), None)
        if prefix is None:
            continue
        state = v.switch(value)
        if state is None:
            continue
        seen = True
        if state:
            active.append(_reason_name(path.rpartition("/")[2]))
    return tuple(active) if seen else None


def _reason_name(leaf: str) -> str:
    for prefix in ("clocks_event_reason_", "clocks_throttle_reason_"):
        leaf = leaf.removeprefix(prefix)
    name = leaf.replace(" ", "_").replace("-", "_")
    return _REASON_NAMES.get(name, name)


# Where nvidia-smi's names differ from NVML's (nvml_health.CLOCKS_EVENT_REASONS).
_REASON_NAMES = {"idle": "gpu_idle", "display_clocks_setting": "display_clock_setting"}


def processes(records: list[dict[str, str]] | None, keys: Mapping[str, str]) -> Any:
    """GpuProcess tuples from records; `keys` names the pid, type, name and memory keys."""
    if records is None:
        return None
    found = []
    for record in records:
        pid = v.integer(record.get(keys["pid"]))
        kind = record.get(keys["type"], "C")
        if pid is None or not ("C" in kind or kind == "M"):
            continue  # graphics-only processes: NVML's compute list leaves them out too
        name = record.get(keys["name"])
        found.append(GpuProcess(pid, v.bytes_of(record.get(keys["memory"])), name or None))
    return tuple(found)


def mig_instances(records: list[dict[str, str]] | None, index: str, total: str) -> Any:
    if records is None:
        return None
    found = []
    for position, record in enumerate(records):
        number = v.integer(record.get(index))
        found.append(
            MigInstance(position if number is None else number, None, v.bytes_of(record.get(total)))
        )
    return tuple(found)
