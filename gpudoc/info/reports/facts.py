"""What one report says: the model's field names with the values it gives.

A key present means the report determined that value (None included: "nvcc: Could not collect"
is a known absence); a key absent means the report does not say. build.py merges the Facts of
every report into one InfoReport and lists, per report, the keys it gave.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpudoc.info.model import SxidEvent, XidEvent


@dataclass
class GpuFacts:
    """One GPU of a report: GpuInfo field names and values. `index` is nvidia-smi's index when
    the report prints it; reports are joined on `pci_bus_id` first."""

    index: int | None
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass
class Facts:
    format: str  # the name ReportSource.format shows: "collect_env", "nvidia-smi -q", ...
    torch: dict[str, Any] = field(default_factory=dict)  # TorchInfo fields
    torchvision: dict[str, Any] = field(default_factory=dict)  # TorchvisionInfo fields
    driver: dict[str, Any] = field(default_factory=dict)  # DriverInfo fields
    host: dict[str, Any] = field(default_factory=dict)  # HostInfo fields (env below)
    env: dict[str, str | None] = field(default_factory=dict)  # environment variables it shows
    gpus: list[GpuFacts] | None = None  # None: it does not list the GPUs; []: it lists none
    xid_events: list[XidEvent] | None = None  # None: no kernel log in it
    sxid_events: list[SxidEvent] = field(default_factory=list)  # NVSwitch SXid lines
    packages: dict[str, str] = field(default_factory=dict)  # pip/conda name -> version
    # Facts the report gives that no key above names: "host.pci_gpus.driver" (lspci -k).
    declared: list[str] = field(default_factory=list)
    # GpuInfo fields of every GPU of that name (torch names a GPU, not its index or bus).
    gpus_by_name: dict[str, dict[str, Any]] = field(default_factory=dict)


def normalize_bus_id(bus: str) -> str:
    """`00000000:3B:00.0` (nvidia-smi) and `0000:3b:00.0` (the kernel) alike: `0000:3b:00.0`."""
    domain, _, rest = bus.strip().lower().partition(":")
    if not rest:
        return bus.strip().lower()
    try:
        return f"{int(domain, 16):04x}:{rest}"
    except ValueError:
        return bus.strip().lower()
