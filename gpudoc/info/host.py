"""Facts about the host that need neither NVML nor torch: environment, OS, container, device
nodes, the PCI bus, the kernel module. `root` lets tests point at a directory tree on disk."""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Mapping
from pathlib import Path

from gpudoc.info import host_links
from gpudoc.info.model import DevNode, HostInfo, PciGpu

ENV_VARS = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "PYTORCH_CUDA_ALLOC_CONF",
    "CUDA_MODULE_LOADING",
    "CUDA_LAUNCH_BLOCKING",
    "PYTORCH_NVML_BASED_CUDA_CHECK",
)
# Set for profiling or debugging, they slow or change every CUDA process: DCGM's software
# diagnostic warns about the first ten; PyTorch's allocator switch makes training crawl.
DEBUG_ENV_VARS = (
    "NSIGHT_CUDA_DEBUGGER",
    "CUDA_INJECTION32_PATH",
    "CUDA_INJECTION64_PATH",
    "CUDA_AUTO_BOOST",
    "CUDA_ENABLE_COREDUMP_ON_EXCEPTION",
    "CUDA_COREDUMP_FILE",
    "CUDA_DEVICE_WAITS_ON_EXCEPTION",
    "CUDA_PROFILE",
    "COMPUTE_PROFILE",
    "OPENCL_PROFILE",
    "PYTORCH_NO_CUDA_MEMORY_CACHING",
)
NVIDIA_VENDOR = "0x10de"
# PCI classes 0x0300 (VGA) and 0x0302 (3D controller: data-centre GPUs).
GPU_CLASSES = ("0x0300", "0x0302")
_MODULE_VERSION = re.compile(r"Kernel Module(?: for \S+)?\s+([0-9][0-9.]+)")


def read_host(root: str = "/", environ: Mapping[str, str] | None = None) -> HostInfo:
    env = os.environ if environ is None else environ
    base = Path(root)
    container, evidence = detect_container(base, env)
    switches = host_links.nvswitches(base / "sys/bus/pci/devices")
    return HostInfo(
        os=_os_name(base),
        kernel=platform.release() or None,
        python=platform.python_version(),
        container=container,
        container_evidence=evidence,
        dev_nodes=dev_nodes(base / "dev"),
        pci_gpus=pci_gpus(base / "sys/bus/pci/devices"),
        env={name: env.get(name) for name in ENV_VARS},
        debug_env={name: env[name] for name in DEBUG_ENV_VARS if name in env},
        infiniband_ports=host_links.infiniband_ports(base),
        kernel_modules=host_links.kernel_modules(base),
        nvswitches=switches,
        fabric_manager_running=host_links.fabric_manager_running(base, switches, bool(container)),
    )


def _os_name(root: Path) -> str | None:
    try:
        text = (root / "etc/os-release").read_text()
    except OSError:
        return platform.system() or None
    for line in text.splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.partition("=")[2].strip().strip('"')
    return platform.system() or None


def detect_container(root: Path, env: Mapping[str, str]) -> tuple[str | None, str | None]:
    if env.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes", "KUBERNETES_SERVICE_HOST is set"
    if (root / ".dockerenv").exists():
        return "docker", "/.dockerenv exists"
    if (root / "run/.containerenv").exists():
        return "podman", "/run/.containerenv exists"
    try:
        cgroup = (root / "proc/1/cgroup").read_text()
    except OSError:
        return None, None
    for marker in ("kubepods", "docker", "containerd", "libpod"):
        if marker in cgroup:
            return marker.replace("kubepods", "kubernetes"), f"/proc/1/cgroup mentions {marker}"
    return None, None


def dev_nodes(dev: Path) -> tuple[DevNode, ...]:
    try:
        names = sorted(p.name for p in dev.iterdir() if p.name.startswith("nvidia"))
    except OSError:
        return ()
    nodes = []
    for name in names:
        path = dev / name
        if path.is_dir():
            continue  # /dev/nvidia-caps
        readable, writable = os.access(path, os.R_OK), os.access(path, os.W_OK)
        nodes.append(DevNode(f"/dev/{name}", readable, writable))
    return tuple(nodes)


def pci_gpus(devices: Path) -> tuple[PciGpu, ...] | None:
    try:
        entries = sorted(devices.iterdir())
    except OSError:
        return None
    found = []
    for entry in entries:
        if _read(entry / "vendor") != NVIDIA_VENDOR:
            continue
        if not (_read(entry / "class") or "").startswith(GPU_CLASSES):
            continue
        driver = entry / "driver"
        bound = os.path.basename(os.readlink(driver)) if driver.is_symlink() else None
        found.append(PciGpu(entry.name, _read(entry / "device"), bound))
    return tuple(found)


def kernel_module_version(root: str = "/") -> str | None:
    """`550.90.07` from /proc/driver/nvidia/version; None when the module is not loaded."""
    text = _read(Path(root) / "proc/driver/nvidia/version")
    match = _MODULE_VERSION.search(text or "")
    return match.group(1) if match else None


def process_name(pid: int, root: str = "/") -> str | None:
    """The command name of a (host) PID; None inside a container without the host PID space."""
    return _read(Path(root) / f"proc/{pid}/comm")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None
