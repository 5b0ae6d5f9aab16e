"""The only pynvml importer. Every NVML read goes through `Reader.get`.

A library-level failure (no library, driver not loaded, version mismatch) ends the session and is
reported once in `NvmlSnapshot.init_error`; a per-field failure (NotSupported, NoPermission,
GpuIsLost, ...) makes that field None and is recorded as a `FieldError`. Nothing here raises.
`lib` is the pynvml module, or in tests a fake built on pynvml's real exception classes.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpudoc.info.model import GpuInfo, GpuProcess, MigInstance
from gpudoc.info.nvml_health import clocks, memory_health, pcie_link
from gpudoc.info.nvml_interconnect import interconnect
from gpudoc.info.nvml_reader import Reader, error_name

COMPUTE_MODES = {0: "default", 1: "exclusive_thread", 2: "prohibited", 3: "exclusive_process"}
# Distributions that install a module named `pynvml`; only the first is maintained by NVIDIA.
BINDING_DISTS = ("nvidia-ml-py", "pynvml", "nvidia-ml-py3")
_DIST_NAMES = {d.replace("-", "_"): d for d in BINDING_DISTS}
_DIST_INFO = re.compile(r"^([A-Za-z0-9_.-]+?)-([0-9][^-]*)\.(?:dist|egg)-info$")


@dataclass(frozen=True)
class NvmlSnapshot:
    init_error: str | None
    init_error_message: str | None
    driver_version: str | None
    nvml_version: str | None
    cuda_driver_version: str | None
    library_path: str | None
    device_count: int | None
    gpus: tuple[GpuInfo, ...]


def load_pynvml() -> Any:
    import pynvml

    return pynvml


def read_nvml(lib: Any | None = None, maps_path: str = "/proc/self/maps") -> NvmlSnapshot:
    if lib is None:
        try:
            lib = load_pynvml()
        except ImportError as error:  # nvidia-ml-py missing: nvml-binding says what to install
            return NvmlSnapshot("ModuleNotFound", str(error), None, None, None, None, None, ())
    try:
        lib.nvmlInit()
    except Exception as error:
        # After a version mismatch the library is loaded: its file name still tells its version.
        library = mapped_library_path(maps_path)
        return NvmlSnapshot(error_name(error), str(error), None, None, None, library, None, ())
    try:
        return _read_initialised(lib, maps_path)
    finally:
        with contextlib.suppress(Exception):  # shutting down cannot change what was read
            lib.nvmlShutdown()


def _read_initialised(lib: Any, maps_path: str) -> NvmlSnapshot:
    system = Reader(lib)
    cuda = system.get("cuda_driver_version", "nvmlSystemGetCudaDriverVersion")
    count = system.get("device_count", "nvmlDeviceGetCount")
    gpus = tuple(read_gpu(lib, index) for index in range(count or 0))
    return NvmlSnapshot(
        init_error=None,
        init_error_message=None,
        driver_version=system.get("driver_version", "nvmlSystemGetDriverVersion"),
        nvml_version=system.get("nvml_version", "nvmlSystemGetNVMLVersion"),
        cuda_driver_version=None if cuda is None else f"{cuda // 1000}.{(cuda % 1000) // 10}",
        library_path=mapped_library_path(maps_path),
        device_count=count,
        gpus=gpus,
    )


def read_gpu(lib: Any, index: int) -> GpuInfo:
    read = Reader(lib)
    handle = read.get("handle", "nvmlDeviceGetHandleByIndex", index)
    if handle is None:
        return _empty_gpu(index, read)
    fields = {
        **_identity(read, handle),
        **_usage(lib, read, handle),
        **clocks(lib, read, handle),
        **_modes(lib, read, handle),
        **memory_health(read, handle),
        **pcie_link(read, handle),
        **interconnect(lib, read, handle),
    }
    return GpuInfo(
        nvml_index=index,
        torch_index=None,
        arch_supported_by_torch=None,
        **fields,
        processes=_processes(read, handle),
        lost=read.lost,
        field_errors=tuple(read.errors),
        reset_required=read.reset_required,
    )


def _identity(read: Reader, handle: Any) -> dict[str, Any]:
    pci = read.get("pci_bus_id", "nvmlDeviceGetPciInfo", handle)
    capability = read.get("compute_capability", "nvmlDeviceGetCudaComputeCapability", handle)
    return {
        "name": read.get("name", "nvmlDeviceGetName", handle),
        "uuid": read.get("uuid", "nvmlDeviceGetUUID", handle),
        "pci_bus_id": None if pci is None else normalise_bus_id(pci.busId),
        "minor_number": read.get("minor_number", "nvmlDeviceGetMinorNumber", handle),
        "compute_capability": None if capability is None else "{}.{}".format(*capability),
    }


def _usage(lib: Any, read: Reader, handle: Any) -> dict[str, Any]:
    memory = read.first(
        "memory",
        ("nvmlDeviceGetMemoryInfo", (handle, lib.nvmlMemory_v2)),  # v2 separates "reserved"
        ("nvmlDeviceGetMemoryInfo", (handle,)),
    )
    utilization = read.get("utilization", "nvmlDeviceGetUtilizationRates", handle)
    return {
        "memory_total_bytes": _attr(memory, "total"),
        "memory_used_bytes": _attr(memory, "used"),
        "memory_free_bytes": _attr(memory, "free"),
        "memory_reserved_bytes": _attr(memory, "reserved"),
        "utilization_gpu_percent": _attr(utilization, "gpu"),
        "utilization_memory_percent": _attr(utilization, "memory"),
        "temperature_c": read.first(
            "temperature_c",
            ("nvmlDeviceGetTemperatureV", (handle, lib.NVML_TEMPERATURE_GPU)),
            ("nvmlDeviceGetTemperature", (handle, lib.NVML_TEMPERATURE_GPU)),  # drivers < 550
        ),
        "power_draw_mw": read.get("power_draw_mw", "nvmlDeviceGetPowerUsage", handle),
        "power_limit_mw": read.get("power_limit_mw", "nvmlDeviceGetEnforcedPowerLimit", handle),
        "power_default_limit_mw": read.get(
            "power_default_limit_mw", "nvmlDeviceGetPowerManagementDefaultLimit", handle
        ),
    }


def _modes(lib: Any, read: Reader, handle: Any) -> dict[str, Any]:
    mode = read.get("compute_mode", "nvmlDeviceGetComputeMode", handle)
    persistence = read.get("persistence_mode", "nvmlDeviceGetPersistenceMode", handle)
    display = read.get("display_active", "nvmlDeviceGetDisplayActive", handle)
    mig = read.get("mig_mode", "nvmlDeviceGetMigMode", handle)
    mig_current = None if mig is None else bool(mig[0])
    ecc = read.get(
        "ecc_uncorrected_volatile",
        "nvmlDeviceGetTotalEccErrors",
        handle,
        lib.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
        lib.NVML_VOLATILE_ECC,
    )
    return {
        "compute_mode": None if mode is None else COMPUTE_MODES.get(mode, f"unknown({mode})"),
        "persistence_mode": None if persistence is None else bool(persistence),
        "display_active": None if display is None else bool(display),
        "mig_mode_current": mig_current,
        "mig_mode_pending": None if mig is None else bool(mig[1]),
        "mig_instances": _mig_instances(read, handle) if mig_current else None,
        "ecc_uncorrected_volatile": ecc,
    }


def _empty_gpu(index: int, read: Reader) -> GpuInfo:
    nothing: dict[str, Any] = {name: None for name in GpuInfo.__dataclass_fields__}
    nothing.update(nvml_index=index, lost=read.lost, field_errors=tuple(read.errors))
    nothing.update(reset_required=read.reset_required)
    return GpuInfo(**nothing)


def _mig_instances(read: Reader, handle: Any) -> tuple[MigInstance, ...] | None:
    slots = read.get("mig_instances", "nvmlDeviceGetMaxMigDeviceCount", handle)
    if slots is None:
        return None
    instances = []
    for slot in range(slots):
        # An empty slot raises NotFound: that is the normal answer, not an error.
        mig = read.get(
            "mig_handle",
            "nvmlDeviceGetMigDeviceHandleByIndex",
            handle,
            slot,
            expected=("NotFound",),
        )
        if mig is None:
            continue
        memory = read.get("mig_memory", "nvmlDeviceGetMemoryInfo", mig)
        uuid = read.get("mig_uuid", "nvmlDeviceGetUUID", mig)
        instances.append(MigInstance(slot, uuid, _attr(memory, "total")))
    return tuple(instances)


def _processes(read: Reader, handle: Any) -> tuple[GpuProcess, ...] | None:
    listed = read.get("processes", "nvmlDeviceGetComputeRunningProcesses", handle)
    if listed is None:
        return None
    return tuple(GpuProcess(int(p.pid), getattr(p, "usedGpuMemory", None)) for p in listed)


def _attr(value: Any, name: str) -> Any:
    return None if value is None else getattr(value, name, None)


def normalise_bus_id(bus_id: str | bytes) -> str:
    """NVML says `00000000:01:00.0`, torch and sysfs `0000:01:00.0`: use the sysfs form."""
    text = bus_id.decode() if isinstance(bus_id, bytes) else bus_id
    domain, _, rest = text.partition(":")
    try:
        return f"{int(domain, 16):04x}:{rest.lower()}"
    except ValueError:
        return text.lower()


def mapped_library_path(maps_path: str) -> str | None:
    """The libnvidia-ml.so.<version> this process loaded: its name has the user-space version."""
    try:
        text = Path(maps_path).read_text()
    except OSError:
        return None
    for line in text.splitlines():
        path = line.rsplit(" ", 1)[-1]
        if "libnvidia-ml.so" in path:
            return str(Path(path).resolve())
    return None


def binding_distributions(paths: list[str] | None = None) -> tuple[str, ...]:
    """`("nvidia-ml-py 13.615.71",)`: every installed distribution that provides `pynvml`.

    Reads the `*.dist-info` names on sys.path directly: importlib.metadata costs more start-up
    time than the whole NVML session.
    """
    found: list[str] = []
    for entry in sys.path if paths is None else paths:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            match = _DIST_INFO.match(name)
            if match and (dist := _DIST_NAMES.get(match.group(1).lower())):
                found.append(f"{dist} {match.group(2)}")
    return tuple(dict.fromkeys(sorted(found, key=lambda d: BINDING_DISTS.index(d.split()[0]))))
