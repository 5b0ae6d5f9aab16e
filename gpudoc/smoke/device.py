"""One device's settings and identity: deterministic true-fp32 kernels, and the inventory that
groups identical devices (name, capability, versions, precision flags)."""

from __future__ import annotations

import os
import platform
import re
import sys
from typing import Any

import torch

from gpudoc.smoke.model import DeviceInfo


def configure(threads: int) -> None:
    """Deterministic kernels and true fp32 (TF32 off, through both the new and the old API)."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # read when cuBLAS starts
    torch.set_num_threads(threads)
    _deterministic_algorithms()
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    if hasattr(torch.backends, "fp32_precision"):  # torch >= 2.9; mixing in the old flags errors
        torch.backends.fp32_precision = "ieee"
        torch.backends.cuda.matmul.fp32_precision = "ieee"
        torch.backends.cudnn.fp32_precision = "ieee"
        torch.backends.cudnn.conv.fp32_precision = "ieee"
    else:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False


def _deterministic_algorithms() -> None:
    """``torch.use_deterministic_algorithms(True, warn_only=True)`` without its import of
    Inductor's config (1.1 s of CPU per worker, a fifth of a CPU run; nothing here is compiled).

    warn_only: an op that torch lists as nondeterministic on some build must not fail a healthy
    device; whether the bits actually repeat is what the self_consistency check measures.
    """
    setter = getattr(torch._C, "_set_deterministic_algorithms", None)
    if setter is None or "torch._inductor.config" in sys.modules:
        torch.use_deterministic_algorithms(True, warn_only=True)
    else:
        setter(True, warn_only=True)


def fp32_precision() -> tuple[str, str]:
    """(matmul, convolution) precision as torch >= 2.9 names it: 'ieee' or 'tf32'."""
    if hasattr(torch.backends, "fp32_precision"):
        matmul = str(torch.backends.cuda.matmul.fp32_precision)
        return matmul, str(torch.backends.cudnn.conv.fp32_precision)
    return tuple(  # type: ignore[return-value]
        "tf32" if flag else "ieee"
        for flag in (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    )


def inventory(label: str, device: torch.device) -> DeviceInfo:
    """What this device is, and every setting its bits depend on."""
    common: dict[str, Any] = {
        "device": label,
        "kind": device.type,
        "torch_version": torch.__version__,
        "threads": torch.get_num_threads(),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "fp32_precision_matmul": fp32_precision()[0],
        "fp32_precision_conv": fp32_precision()[1],
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }
    if device.type != "cuda":
        return DeviceInfo(name=_cpu_name(), **common)
    props = torch.cuda.get_device_properties(device)
    return DeviceInfo(
        name=props.name,
        driver_version=_driver_version(),
        uuid=str(getattr(props, "uuid", "")) or None,
        compute_capability=f"{props.major}.{props.minor}",
        sm_count=props.multi_processor_count,
        memory_total_bytes=props.total_memory,
        cuda_version=torch.version.cuda,
        cudnn_version=torch.backends.cudnn.version(),
        **common,
    )


def _driver_version() -> str | None:
    """The NVIDIA kernel module's version (Linux), without NVML: part of a GPU's identity."""
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as version:
            found = re.search(r"Kernel Module(?: for \S+)?\s+([\d.]+)", version.read())
    except OSError:
        return None
    return found.group(1) if found else None


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"
