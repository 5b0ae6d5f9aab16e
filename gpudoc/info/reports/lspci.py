"""`lspci` (also `-nn`, `-k`, `| grep -i nvidia`): the NVIDIA GPUs and NVSwitches on the PCI bus,
and with `-k` the kernel driver bound to each GPU (without -k the driver stays unknown, and the
report says so: the fact `host.pci_gpus.driver` is absent). lspci leaves out PCI domain 0000."""

from __future__ import annotations

import re

from gpudoc.info.model import PciGpu
from gpudoc.info.reports.facts import Facts

FORMAT = "lspci"
# "3b:00.0 3D controller: NVIDIA Corporation GA100 [A100 SXM4 80GB] (rev a1)"; -nn adds
# "[0302]" after the class and "[10de:20b2]" after the name.
_DEVICE = re.compile(
    r"^\s*(?P<bus>(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+"
    r"(?P<kind>3D controller|VGA compatible controller|Bridge)(?: \[[0-9a-fA-F]{4}\])?: "
    r"NVIDIA Corporation(?P<rest>.*)$"
)
_IDS = re.compile(r"\[10de:([0-9a-fA-F]{4})\]")
_ANY_DEVICE = re.compile(r"^\s*(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\s")
_DRIVER = re.compile(r"^\s+Kernel driver in use: (\S+)")


def looks_like(text: str) -> bool:
    return any(_DEVICE.match(line) for line in text.splitlines())


def parse(text: str) -> Facts:
    facts = Facts(FORMAT)
    gpus: list[PciGpu] = []
    switches: list[str] = []
    current: int | None = None  # the GPU whose -k lines follow
    for line in text.splitlines():
        device = _DEVICE.match(line)
        if device:
            bus = device.group("bus").lower()
            bus = bus if bus.count(":") == 2 else f"0000:{bus}"
            current = None
            if device.group("kind") == "Bridge":
                switches.append(bus)
            else:
                ids = _IDS.search(device.group("rest"))
                gpus.append(PciGpu(bus, f"0x{ids.group(1).lower()}" if ids else None, None))
                current = len(gpus) - 1
            continue
        if _ANY_DEVICE.match(line):
            current = None  # another vendor's device, or the GPU's audio function
            continue
        driver = _DRIVER.match(line)
        if driver and current is not None:
            gpu = gpus[current]
            gpus[current] = PciGpu(gpu.bus_id, gpu.device_id, driver.group(1))
    facts.host["pci_gpus"] = tuple(gpus)
    facts.host["nvswitches"] = tuple(switches)
    if any(_DRIVER.match(line) for line in text.splitlines()):
        facts.declared.append("host.pci_gpus.driver")  # -k: None is "no driver bound"
    return facts
