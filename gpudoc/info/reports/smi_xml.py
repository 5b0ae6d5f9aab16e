"""`nvidia-smi -q -x`: the same facts as `-q` as XML (`<nvidia_smi_log>`, one `<gpu id=...>`
per GPU), read with the standard library's parser (no DTD is fetched, entities are not)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from gpudoc.info.reports import smi_gpu
from gpudoc.info.reports.facts import Facts, GpuFacts
from gpudoc.info.reports.values import is_value

FORMAT = "nvidia-smi -q -x"
_DOCUMENT = re.compile(r"<nvidia_smi_log\b.*?</nvidia_smi_log>", re.DOTALL)
_LINK = "pci/pci_gpu_link_info/"
PATHS = {
    "name": ("product_name",),
    "uuid": ("uuid",),
    "minor": ("minor_number",),
    "bus": ("pci/pci_bus_id",),
    "persistence": ("persistence_mode",),
    "display_active": ("display_active",),
    "mig_current": ("mig_mode/current_mig",),
    "mig_pending": ("mig_mode/pending_mig",),
    "gen_max": (_LINK + "pcie_gen/max_link_gen",),
    "gen_current": (_LINK + "pcie_gen/current_link_gen",),
    "gen_gpu_max": (_LINK + "pcie_gen/max_device_link_gen",),
    "width_max": (_LINK + "link_widths/max_link_width",),
    "width_current": (_LINK + "link_widths/current_link_width",),
    "compute_mode": ("compute_mode",),
    "util_gpu": ("utilization/gpu_util",),
    "util_memory": ("utilization/memory_util",),
    "memory_total": ("fb_memory_usage/total",),
    "memory_reserved": ("fb_memory_usage/reserved",),
    "memory_used": ("fb_memory_usage/used",),
    "memory_free": ("fb_memory_usage/free",),
    "temperature": ("temperature/gpu_temp",),
    "power_draw": (
        "gpu_power_readings/power_draw",
        "gpu_power_readings/average_power_draw",
        "gpu_power_readings/instant_power_draw",
        "power_readings/power_draw",
    ),
    "power_limit": (
        "gpu_power_readings/enforced_power_limit",
        "power_readings/enforced_power_limit",
        "gpu_power_readings/current_power_limit",
        "power_readings/power_limit",
    ),
    "power_default": (
        "gpu_power_readings/default_power_limit",
        "power_readings/default_power_limit",
    ),
    "clock_sm": ("clocks/sm_clock",),
    "clock_sm_max": ("max_clocks/sm_clock",),
    "ecc_current": ("ecc_mode/current_ecc",),
    "ecc_pending": ("ecc_mode/pending_ecc",),
    "retired_pending": ("retired_pages/pending_blacklist", "retired_pages/pending_retirement"),
    "remap_corr": ("remapped_rows/remapped_row_corr",),
    "remap_unc": ("remapped_rows/remapped_row_unc",),
    "remap_pending": ("remapped_rows/remapped_row_pending",),
    "remap_failure": ("remapped_rows/remapped_row_failure",),
    "replays": ("pci/replay_counter",),
    "fabric_state": ("fabric/state",),
    "fabric_status": ("fabric/status",),
    "recovery": ("gpu_recovery_action",),
    "reset_required": ("gpu_reset_status/reset_required",),
}
PROCESS_KEYS = {"pid": "pid", "type": "type", "name": "process_name", "memory": "used_memory"}


class XmlError(ValueError):
    """The document is `nvidia-smi -q -x` output but does not parse (cut off, edited)."""


def looks_like(text: str) -> bool:
    return "<nvidia_smi_log" in text


def parse(text: str) -> Facts:
    match = _DOCUMENT.search(text)
    if match is None:
        raise XmlError("the <nvidia_smi_log> document has no end (cut off?)")
    try:
        root = ET.fromstring(match.group(0))
    except ET.ParseError as error:
        raise XmlError(f"the nvidia-smi -q -x XML does not parse: {error}") from None
    facts = Facts(FORMAT)
    driver = _text(root.find("driver_version"))
    if is_value(driver):
        facts.driver.update(driver_version=driver, nvml_error=None)
    cuda = root.find("cuda_version")
    if cuda is not None:
        facts.driver["cuda_driver_version"] = _text(cuda) if is_value(_text(cuda)) else None
    elements = root.findall("gpu")
    facts.gpus = [GpuFacts(None, _gpu(gpu)) for gpu in elements]
    count = _text(root.find("attached_gpus"))
    if count is not None and count.isdigit() and int(count) == len(elements):
        for index, gpu in enumerate(facts.gpus):
            gpu.index = index  # every GPU is there, in nvidia-smi's order
        facts.driver["physical_gpu_count"] = int(count)
    return facts


def _text(element: ET.Element | None) -> str | None:
    return None if element is None or element.text is None else element.text.strip()


def _flatten(element: ET.Element, prefix: str, into: dict[str, str]) -> None:
    for child in element:
        path = prefix + child.tag
        if len(child) == 0 and path not in into:
            into[path] = (child.text or "").strip()
        _flatten(child, path + "/", into)


def _gpu(element: ET.Element) -> dict[str, Any]:
    values: dict[str, str] = {}
    _flatten(element, "", values)
    values.setdefault("pci/pci_bus_id", element.get("id", ""))
    fields = smi_gpu.fields_of(smi_gpu.Section(values), PATHS)
    ecc = smi_gpu.ecc_uncorrected(
        values, "ecc_errors/volatile/", "ecc_errors/volatile/double_bit/total"
    )
    if ecc is not None:
        fields["ecc_uncorrected_volatile"] = ecc
    reasons = smi_gpu.clock_reasons(values, ("clocks_event_reasons/", "clocks_throttle_reasons/"))
    if reasons is not None:
        fields["clocks_event_reasons"] = reasons
    processes = element.find("processes")
    if processes is not None:
        records = [_record(info) for info in processes.findall("process_info")]
        fields["processes"] = smi_gpu.processes(records, PROCESS_KEYS)
    migs = element.find("mig_devices")
    if fields.get("mig_mode_current") and migs is not None:
        records = [_record(device) for device in migs.findall("mig_device")]
        fields["mig_instances"] = smi_gpu.mig_instances(records, "index", "fb_memory_usage/total")
    return fields


def _record(element: ET.Element) -> dict[str, str]:
    values: dict[str, str] = {}
    _flatten(element, "", values)
    return values
