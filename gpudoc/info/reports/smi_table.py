"""`nvidia-smi` (no arguments): the header with the driver and CUDA versions, a block of two or
three rows per GPU, the MIG devices and the processes; or the one line it prints on failure.

Columns, row by row: `index name persistence | bus-id display | ECC`, then `fan temp perf
power/cap | used/total memory | util compute-mode`, then (R470+) `| | MIG mode`. A value nvidia-smi
could not read is `ERR!` or `N/A`: left unknown, `ERR!` noted as a field error.
"""

from __future__ import annotations

import re
from typing import Any

from gpudoc.info.model import FieldError, GpuProcess, MigInstance
from gpudoc.info.reports import values as v
from gpudoc.info.reports.facts import Facts, GpuFacts, normalize_bus_id
from gpudoc.info.reports.smi_notes import BUS, PHRASES, read_notes

FORMAT = "nvidia-smi"
_HEADER = re.compile(
    r"NVIDIA-SMI\s+(?P<smi>[\d.]+)\s+Driver Version:\s+(?P<driver>[\d.]+)"
    r"(?:\s+CUDA Version:\s+(?P<cuda>[\d.]+|N/A))?"
)
_BUS = BUS
_ROW1 = re.compile(r"^\s*(?P<index>\d+)\s+(?P<name>.*?)\s*(?P<mode>\bOn|\bOff|WDDM|TCC|N/A|ERR!)?$")
_BUS_CELL = re.compile(rf"^\s*(?P<bus>{_BUS})\s*(?P<disp>On|Off|N/A|ERR!)?\s*$")
_TEMP = re.compile(r"(?<!\S)(\d+)C\b")
_POWER = re.compile(r"(\S+?)\s*/\s*(\S+?)\s*$")
_UTIL = re.compile(r"^\s*(?P<util>\d+%|N/A|ERR!)\s+(?P<mode>.+?)\s*$")
_PROCESS = re.compile(
    r"^\|\s*(?P<gpu>\d+)\s+(?:\S+\s+\S+\s+)?(?P<pid>\d+)\s+(?P<type>C\+G|M\+C|C|G|M)\s+"
    r"(?P<name>.+?)\s+(?P<memory>\d+MiB|N/A)\s*\|$"
)
_MIG = re.compile(r"^\|\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*\|\s*(\d+)MiB\s*/\s*(\d+)MiB")


def looks_like(text: str) -> bool:
    return bool(_HEADER.search(text)) or any(phrase in text for phrase in PHRASES)


def parse(text: str) -> Facts:
    facts = Facts(FORMAT)
    lines = [line.strip() for line in text.splitlines()]
    header = next((m for line in lines if (m := _HEADER.search(line))), None)
    if header is not None:
        facts.driver.update(driver_version=header.group("driver"), nvml_error=None)
        cuda = header.group("cuda")
        facts.driver["cuda_driver_version"] = cuda if v.is_value(cuda) else None
        facts.gpus = [g for block in _gpu_blocks(lines) if (g := _gpu(block)) is not None]
        _processes(facts, lines)
        _mig(facts, lines)
    elif any("No devices were found" in line for line in lines):
        facts.driver["nvml_error"] = None
        facts.gpus = []
    read_notes(facts, text)
    if facts.gpus is not None and header is not None:
        facts.driver["physical_gpu_count"] = len({g.fields.get("pci_bus_id") for g in facts.gpus})
    return facts


def _gpu_blocks(lines: list[str]) -> list[list[list[str]]]:
    """The rows (as cells) of each GPU's block: between the `|===` line under the `Bus-Id`
    header and the end of the table, split at `+---` separators."""
    blocks: list[list[list[str]]] = []
    inside = False
    seen_header = False
    for line in lines:
        if "Bus-Id" in line:
            seen_header = True
        elif seen_header and line.startswith("|=") and not inside:
            inside, blocks = True, [[]]
        elif inside and line.startswith("+-"):
            blocks.append([])
        elif inside and line.startswith("|") and line.count("|") >= 4:
            blocks[-1].append([cell.strip() for cell in line.strip("|").split("|")])
        elif inside:
            break  # the end of the GPU table
    return [block for block in blocks if block]


def _gpu(rows: list[list[str]]) -> GpuFacts | None:
    first = _ROW1.match(rows[0][0])
    if first is None:
        return None
    fields: dict[str, Any] = {}
    errors: list[FieldError] = []
    name = first.group("name")
    if v.is_value(name):
        fields["name"] = name
    if first.group("mode") in ("On", "Off"):
        fields["persistence_mode"] = first.group("mode") == "On"
    bus = _BUS_CELL.match(rows[0][1]) if len(rows[0]) > 1 else None
    if bus:
        fields["pci_bus_id"] = normalize_bus_id(bus.group("bus"))
        if bus.group("disp") in ("On", "Off"):
            fields["display_active"] = bus.group("disp") == "On"
    if len(rows[0]) > 2:
        _cell(fields, errors, "ecc_uncorrected_volatile", rows[0][2], v.integer)
    if len(rows) > 1 and len(rows[1]) > 2:
        _second_row(fields, errors, rows[1])
    if len(rows) > 2 and len(rows[2]) > 2 and v.switch(rows[2][2].rstrip("*")) is not None:
        fields["mig_mode_current"] = v.switch(rows[2][2].rstrip("*"))
    if errors:
        fields["field_errors"] = tuple(errors)
    return GpuFacts(int(first.group("index")), fields)


def _second_row(fields: dict[str, Any], errors: list[FieldError], cells: list[str]) -> None:
    power, memory, util = cells[0], cells[1], cells[2]
    temp = _TEMP.search(power)
    if temp:
        fields["temperature_c"] = int(temp.group(1))
    elif "ERR!" in power:
        errors.append(FieldError("temperature_c", "Unknown"))
    watts = _POWER.search(power)
    if watts:
        _cell(fields, errors, "power_draw_mw", watts.group(1), v.milliwatts)
        _cell(fields, errors, "power_limit_mw", watts.group(2), v.milliwatts)
    used, _, total = memory.partition("/")
    _cell(fields, errors, "memory_used_bytes", used, v.bytes_of)
    _cell(fields, errors, "memory_total_bytes", total, v.bytes_of)
    match = _UTIL.match(util)
    if match:
        _cell(fields, errors, "utilization_gpu_percent", match.group("util"), v.integer)
        mode = v.compute_mode(match.group("mode"))
        if mode is not None:
            fields["compute_mode"] = mode


def _cell(
    fields: dict[str, Any], errors: list[FieldError], name: str, text: str, read: Any
) -> None:
    value = read(text)
    if value is not None:
        fields[name] = value
    elif "ERR!" in text:
        errors.append(FieldError(name, "Unknown"))


def _section(lines: list[str], title: str) -> list[str] | None:
    """The table lines after the line titled `title`; None when absent."""
    start = next((i for i, line in enumerate(lines) if title in line), None)
    if start is None:
        return None
    rows: list[str] = []
    for line in lines[start + 1 :]:
        if not line.startswith(("|", "+")):
            break  # the table ends
        rows.append(line)
    return rows


def _processes(facts: Facts, lines: list[str]) -> None:
    rows = _section(lines, "Processes:")
    if rows is None or facts.gpus is None:
        return
    found: dict[int, list[GpuProcess]] = {}
    for row in rows:
        match = _PROCESS.match(row)
        if match and ("C" in match.group("type") or match.group("type") == "M"):
            process = GpuProcess(
                int(match.group("pid")), v.bytes_of(match.group("memory")), match.group("name")
            )
            found.setdefault(int(match.group("gpu")), []).append(process)
    for gpu in facts.gpus:
        if gpu.index is not None:
            gpu.fields["processes"] = tuple(found.get(gpu.index, ()))


def _mig(facts: Facts, lines: list[str]) -> None:
    rows = _section(lines, "MIG devices:")
    if rows is None or facts.gpus is None:
        return
    found: dict[int, list[MigInstance]] = {}
    for row in rows:
        match = _MIG.match(row)
        if match:
            instance = MigInstance(int(match.group(4)), None, int(match.group(6)) * v.MIB)
            found.setdefault(int(match.group(1)), []).append(instance)
    for gpu in facts.gpus:
        if gpu.index is not None and gpu.fields.get("mig_mode_current"):
            gpu.fields["mig_instances"] = tuple(found.get(gpu.index, ()))


def has_header(text: str) -> bool:
    return bool(_HEADER.search(text))
