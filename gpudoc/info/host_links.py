"""Host facts about the links between GPUs and between machines, read from /sys and /proc:
RDMA (InfiniBand, RoCE) ports, the GPU and RDMA kernel modules, the NVSwitches on the PCI bus
and whether the fabric manager runs. `root` lets tests point at a directory tree on disk."""

from __future__ import annotations

import re
from pathlib import Path

from gpudoc.info.model import InfinibandPort

NVIDIA_VENDOR = "0x10de"
# NVSwitches sit on the PCI bus as NVIDIA "bridge, other" (0x0680) devices.
NVSWITCH_CLASS = "0x0680"
# Modules the checks ask about; the rest of /proc/modules is noise in a report.
MODULE_PREFIXES = ("nvidia", "nv_peer_mem", "nouveau", "mlx", "ib_", "rdma")
FABRIC_MANAGER = "nv-fabricmanager"
_RATE = re.compile(r"^\s*([0-9.]+)\s*Gb/sec")


def infiniband_ports(root: Path) -> tuple[InfinibandPort, ...] | None:
    """Every port under /sys/class/infiniband; () when the class is absent (no RDMA driver)."""
    devices = root / "sys/class/infiniband"
    if not devices.exists():
        return ()
    try:
        adapters = sorted(devices.iterdir())
        ports = [(a.name, p) for a in adapters for p in sorted((a / "ports").iterdir())]
    except OSError:
        return None
    return tuple(_port(device, path) for device, path in ports if path.name.isdigit())


def _port(device: str, path: Path) -> InfinibandPort:
    rate = _RATE.match(_read(path / "rate") or "")
    return InfinibandPort(
        device=device,
        port=int(path.name),
        state=_after_colon(_read(path / "state")),  # "4: ACTIVE"
        physical_state=_after_colon(_read(path / "phys_state")),  # "5: LinkUp"
        rate_gbps=float(rate.group(1)) if rate else None,  # "400 Gb/sec (4X NDR)"
        link_layer=_read(path / "link_layer"),
    )


def kernel_modules(root: Path) -> tuple[str, ...] | None:
    """The loaded GPU and RDMA modules of /proc/modules ("name size refs deps state addr")."""
    text = _read(root / "proc/modules")
    if text is None:
        return None
    names = (line.split(" ", 1)[0] for line in text.splitlines() if line.strip())
    return tuple(sorted(n for n in names if n.startswith(MODULE_PREFIXES)))


def nvswitches(devices: Path) -> tuple[str, ...] | None:
    try:
        entries = sorted(devices.iterdir())
    except OSError:
        return None
    return tuple(
        entry.name
        for entry in entries
        if _read(entry / "vendor") == NVIDIA_VENDOR
        and (_read(entry / "class") or "").startswith(NVSWITCH_CLASS)
    )


def fabric_manager_running(
    root: Path, switches: tuple[str, ...] | None, in_container: bool
) -> bool | None:
    """Looked for only where NVSwitches are, and only where the host's processes are visible:
    a container's PID namespace hides the host's daemons, so there absence says nothing."""
    if not switches or in_container:
        return None
    try:
        pids = [p for p in (root / "proc").iterdir() if p.name.isdigit()]
    except OSError:
        return None
    return any(_read(pid / "comm") == FABRIC_MANAGER for pid in pids)


def _after_colon(text: str | None) -> str | None:
    return None if text is None else text.partition(":")[2].strip() or text


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None
