"""`nvidia-smi -q`: "Key : value" lines nested by indentation, one `GPU 00000000:07:00.0` section
per GPU (every GPU, or those of `-i`), after the driver and CUDA versions."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gpudoc.info.reports import smi_gpu
from gpudoc.info.reports.facts import Facts, GpuFacts
from gpudoc.info.reports.smi_notes import read_notes
from gpudoc.info.reports.values import is_value

FORMAT = "nvidia-smi -q"
_GPU = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])$")
_LINE = re.compile(r"^(?P<indent>\s*)(?P<key>[^:]+?)\s*(?::\s*(?P<value>.*))?$")
_LINK = "pci/gpu link info/"
PATHS = {
    "name": ("product name",),
    "uuid": ("gpu uuid",),
    "minor": ("minor number",),
    "bus": ("pci/bus id",),
    "persistence": ("persistence mode",),
    "display_active": ("display active",),
    "mig_current": ("mig mode/current",),
    "mig_pending": ("mig mode/pending",),
    "gen_max": (_LINK + "pcie generation/max",),
    "gen_current": (_LINK + "pcie generation/current",),
    "gen_gpu_max": (_LINK + "pcie generation/device max",),
    "width_max": (_LINK + "link width/max",),
    "width_current": (_LINK + "link width/current",),
    "compute_mode": ("compute mode",),
    "util_gpu": ("utilization/gpu",),
    "util_memory": ("utilization/memory",),
    "memory_total": ("fb memory usage/total",),
    "memory_reserved": ("fb memory usage/reserved",),
    "memory_used": ("fb memory usage/used",),
    "memory_free": ("fb memory usage/free",),
    "temperature": ("temperature/gpu current temp",),
    "power_draw": (
        "gpu power readings/power draw",
        "gpu power readings/average power draw",
        "gpu power readings/instantaneous power draw",
        "power readings/power draw",
    ),
    "power_limit": (
        "gpu power readings/enforced power limit",
        "power readings/enforced power limit",
        "gpu power readings/current power limit",
        "power readings/power limit",
    ),
    "power_default": (
        "gpu power readings/default power limit",
        "power readings/default power limit",
    ),
    "clock_sm": ("clocks/sm",),
    "clock_sm_max": ("max clocks/sm",),
    "ecc_current": ("ecc mode/current",),
    "ecc_pending": ("ecc mode/pending",),
    "retired_pending": (
        "retired pages/pending page blacklist",
        "retired pages/pending page retirement",
        "retired pages/pending",
    ),
    "remap_corr": ("remapped rows/correctable error",),
    "remap_unc": ("remapped rows/uncorrectable error",),
    "remap_pending": ("remapped rows/pending",),
    "remap_failure": ("remapped rows/remapping failure occurred",),
    "replays": ("pci/replays since reset",),
    "fabric_state": ("fabric/state",),
    "fabric_status": ("fabric/status",),
    "recovery": ("gpu recovery action",),
    "reset_required": ("gpu reset status/reset required",),
}
PROCESS_KEYS = {"pid": "process id", "type": "type", "name": "name", "memory": "used gpu memory"}


@dataclass
class _Node:
    key: str
    value: str | None
    indent: int
    children: list[_Node] = field(default_factory=list)


# Sections of one GPU: an excerpt of -q pasted alone ("Remapped Rows" and its lines) is read as
# one GPU's, of unknown index and bus.
_SECTIONS = (
    "Remapped Rows|Retired Pages|Clocks Event Reasons|Clocks Throttle Reasons|ECC Errors|Ecc Mode|"
    "FB Memory Usage|GPU Link Info|GPU Power Readings|Power Readings|MIG Mode|GPU Reset Status"
)
_FRAGMENT = re.compile(rf"^(\s*)(?:{_SECTIONS})\s*\n\1\s+\S[^:\n]*\s:\s", re.MULTILINE)


def looks_like(text: str) -> bool:
    return (
        "NVSMI LOG" in text
        or bool(
            re.search(r"^\s*Attached GPUs\s*:", text, re.MULTILINE)
            and re.search(r"^\s*Product Name\s*:", text, re.MULTILINE)
        )
        or bool(_FRAGMENT.search(text))
    )


def parse(text: str) -> Facts:
    facts = Facts(FORMAT)
    roots = _tree(text.splitlines())
    top = {node.key.lower(): node.value for node in roots if node.value is not None}
    if is_value(top.get("driver version")):
        facts.driver.update(driver_version=top["driver version"], nvml_error=None)
    if "cuda version" in top:
        cuda = top["cuda version"]
        facts.driver["cuda_driver_version"] = cuda if is_value(cuda) else None
    gpus = [GpuFacts(None, _gpu(node)) for node in roots if _GPU.match(node.key)]
    if not gpus and "attached gpus" not in top and _FRAGMENT.search(text):
        gpus = [GpuFacts(None, _gpu(_Node("excerpt", None, -1, roots)))]
    if gpus or "attached gpus" in top:
        facts.gpus = gpus
        # Sections come in nvidia-smi's index order; with `-i` they are not all there.
        count = top.get("attached gpus")
        if count is not None and count.strip().isdigit() and int(count) == len(gpus):
            for index, gpu in enumerate(gpus):
                gpu.index = index
            facts.driver["physical_gpu_count"] = int(count)
    read_notes(facts, text)
    return facts


def _tree(lines: list[str]) -> list[_Node]:
    roots: list[_Node] = []
    stack: list[_Node] = []
    for line in lines:
        if not line.strip() or line.strip().startswith("="):
            continue
        node = _node(line)
        if node is None:
            continue
        while stack and stack[-1].indent >= node.indent:
            stack.pop()
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)
    return roots


def _node(line: str) -> _Node | None:
    indent = len(line.expandtabs()) - len(line.expandtabs().lstrip())
    if _GPU.match(line.strip()):  # "GPU 00000000:07:00.0": its colons separate nothing
        return _Node(line.strip(), None, indent)
    match = _LINE.match(line)
    if match is None:
        return None
    value = match.group("value")
    return _Node(match.group("key").strip(), None if value is None else value.strip(), indent)


def _flatten(node: _Node, prefix: str, into: dict[str, str]) -> None:
    for child in node.children:
        path = prefix + child.key.lower()
        if child.value is not None and path not in into:
            into[path] = child.value
        _flatten(child, path + "/", into)


def _gpu(node: _Node) -> dict[str, Any]:
    values: dict[str, str] = {}
    _flatten(node, "", values)
    header = _GPU.match(node.key)
    if header:
        values.setdefault("pci/bus id", header.group(1))
    children = {child.key.lower(): child for child in node.children}
    section = smi_gpu.Section(
        values, _records(children.get("processes")), _mig_records(children.get("mig devices"))
    )
    fields = smi_gpu.fields_of(section, PATHS)
    ecc = smi_gpu.ecc_uncorrected(
        values, "ecc errors/volatile/", "ecc errors/volatile/double bit/total"
    )
    if ecc is not None:
        fields["ecc_uncorrected_volatile"] = ecc
    reasons = smi_gpu.clock_reasons(values, ("clocks event reasons/", "clocks throttle reasons/"))
    if reasons is not None:
        fields["clocks_event_reasons"] = reasons
    if section.processes is not None:
        fields["processes"] = smi_gpu.processes(section.processes, PROCESS_KEYS)
    if fields.get("mig_mode_current") and section.mig_devices is not None:
        fields["mig_instances"] = smi_gpu.mig_instances(
            section.mig_devices, "index", "fb memory usage/total"
        )
    return fields


def _records(node: _Node | None) -> list[dict[str, str]] | None:
    """The processes: one record per run of keys, a new one where a key repeats."""
    if node is None:
        return None
    records: list[dict[str, str]] = []
    for child in node.children:
        key = child.key.lower()
        if not records or key in records[-1]:
            records.append({})
        records[-1][key] = child.value or ""
    return records


def _mig_records(node: _Node | None) -> list[dict[str, str]] | None:
    if node is None:
        return None
    records = []
    for device in node.children:
        values: dict[str, str] = {}
        _flatten(device, "", values)
        records.append(values)
    return records
