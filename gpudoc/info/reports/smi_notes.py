"""The lines nvidia-smi prints around (or instead of) its output, in every mode: NVML failing to
start, a GPU it cannot open, a corrupted InfoROM."""

from __future__ import annotations

import re
from typing import Any

from gpudoc.info.model import FieldError
from gpudoc.info.reports.facts import Facts, GpuFacts, normalize_bus_id

BUS = r"[0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]"
# What nvidia-smi prints when NVML fails to start, as NVML's error names (nvmlErrorString).
NVML_FAILURES = {
    "couldn't communicate with the NVIDIA driver": "DriverNotLoaded",
    "Driver/library version mismatch": "LibRmVersionMismatch",
    "Failed to initialize NVML: Insufficient Permissions": "NoPermission",
    "Failed to initialize NVML: Unknown Error": "Unknown",
    "NVML Shared Library Not Found": "LibraryNotFound",
}
# "Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.  Reboot ..."
HANDLE = re.compile(rf"Unable to determine the device handle for (?:gpu|GPU)\s*({BUS}):\s*(.+)")
# "WARNING: infoROM is corrupted at gpu 0000:01:00.0" (nvidia-smi validates every InfoROM).
INFOROM = re.compile(rf"infoROM is corrupted at gpu\s*({BUS})", re.IGNORECASE)
PHRASES = (
    *NVML_FAILURES,
    "No devices were found",
    "Unable to determine the device handle",
    "infoROM is corrupted at gpu",
)


def read_notes(facts: Facts, text: str) -> None:
    """NVML's failure into `facts.driver`; GPUs it could not open, or with a corrupted InfoROM,
    appended to `facts.gpus` (joined with the GPUs of the report by bus id later)."""
    for line in text.splitlines():
        for phrase, error in NVML_FAILURES.items():
            if phrase in line:
                facts.driver.update(nvml_error=error, nvml_error_message=line.strip())
    notes = [GpuFacts(None, handle_failure(m.group(1), m.group(2))) for m in HANDLE.finditer(text)]
    notes += [
        GpuFacts(None, {"pci_bus_id": normalize_bus_id(m.group(1)), "inforom_valid": False})
        for m in INFOROM.finditer(text)
    ]
    if notes:
        facts.gpus = [*(facts.gpus or []), *notes]


def handle_failure(bus: str, message: str) -> dict[str, Any]:
    """A GPU nvidia-smi could not open: lost, needing a reset, or an unknown error."""
    lowered = message.lower()
    error = "Unknown"
    if "is lost" in lowered:
        error = "GpuIsLost"
    elif "requires reset" in lowered or "reset required" in lowered:
        error = "ResetRequired"
    fields: dict[str, Any] = {
        "pci_bus_id": normalize_bus_id(bus),
        "field_errors": (FieldError("handle", error),),
    }
    if error == "GpuIsLost":
        fields["lost"] = True
    if error == "ResetRequired":
        fields["reset_required"] = True
    return fields
