"""collect_info: NVML in this process, torch in a subprocess (started first, so both run at
once), host facts from /proc, /sys and /dev; devices joined by UUID. Checks run afterwards."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpudoc.info import host as host_facts
from gpudoc.info.child import start_child
from gpudoc.info.kernel_log import LogStarter, start_kernel_log
from gpudoc.info.model import (
    DriverInfo,
    GpuInfo,
    GpuProcess,
    HostInfo,
    InfoReport,
    TorchDevice,
    TorchInfo,
)
from gpudoc.info.nvml import NvmlSnapshot, binding_distributions, read_nvml
from gpudoc.info.visible import parse_visible_devices
from gpudoc.jsondata import from_json

if TYPE_CHECKING:  # toolchain.py (and shutil) load only on the torch path
    from gpudoc.info.toolchain import NvccStarter

PROBE_SCRIPT = Path(__file__).with_name("torch_probe.py")
DEFAULT_TORCH_TIMEOUT_S = 60.0
# journalctl (only asked when /dev/kmsg is closed) may take this long: hidden behind the torch
# probe, but --no-torch must stay fast.
KERNEL_LOG_TIMEOUT_S = 2.0
KERNEL_LOG_TIMEOUT_NO_TORCH_S = 0.2
# start() -> wait(): the probe runs while NVML and the host are read.
ProbeStarter = Callable[[], Callable[[], TorchInfo]]


def start_torch_probe(timeout_s: float = DEFAULT_TORCH_TIMEOUT_S) -> Callable[[], TorchInfo]:
    waiter = start_child([sys.executable, str(PROBE_SCRIPT)], timeout_s)

    def wait() -> TorchInfo:
        answer = waiter()
        if answer is None:
            return _probe_failed(f"the torch probe did not finish within {timeout_s:g} s (hang?)")
        return parse_probe_output(answer.returncode, answer.out, answer.err)

    return wait


def parse_probe_output(returncode: int, out: str, err: str) -> TorchInfo:
    lines = out.strip().splitlines()
    if returncode == 0 and lines:
        try:
            return from_json(TorchInfo, json.loads(lines[-1]))
        except ValueError as error:  # DecodeError included
            return _probe_failed(f"the torch probe printed unreadable output ({error})")
    if returncode == 0:
        return _probe_failed("the torch probe printed nothing")
    if returncode < 0:
        import signal

        what = f"was killed by {signal.Signals(-returncode).name}"
    else:
        what = f"exited with status {returncode}"
    tail = err.strip().splitlines()[-1:] or [""]
    return _probe_failed(f"the torch probe {what}: {tail[0]}".rstrip(": "))


def _probe_failed(reason: str) -> TorchInfo:
    import importlib.util  # only on this rare path: it costs start-up time

    return TorchInfo(installed=importlib.util.find_spec("torch") is not None, probe_error=reason)


def collect_info(
    *,
    torch_probe: ProbeStarter | None,
    nvml_lib: Any | None = None,
    host: HostInfo | None = None,
    root: str = "/",
    environ: Mapping[str, str] | None = None,
    kernel_log: LogStarter | None = None,
    nvcc: NvccStarter | None = None,
) -> InfoReport:
    """The report without checks. `torch_probe=None` is --no-torch; `kernel_log` and `nvcc`
    default to the real ones (nvcc only with the torch probe)."""
    started = time.perf_counter()
    env = os.environ if environ is None else environ
    wait_for_torch = torch_probe() if torch_probe is not None else None
    wait_for_nvcc = _nvcc_starter(nvcc, torch_probe is not None, env)()
    wait_for_log = (kernel_log or _log_starter(torch_probe is not None))()
    snapshot = read_nvml(nvml_lib, maps_path=str(Path(root) / "proc/self/maps"))
    host = host or host_facts.read_host(root, env)
    torch = wait_for_torch() if wait_for_torch is not None else None
    nvcc_path, nvcc_version = wait_for_nvcc()
    host = dataclasses.replace(
        host, kernel_log=wait_for_log(), nvcc_path=nvcc_path, nvcc_cuda_version=nvcc_version
    )
    # NVML reports host PIDs: inside a container /proc/<pid> may be another process entirely.
    name_processes = host.container is None
    gpus = tuple(_join(gpu, torch, root, name_processes) for gpu in snapshot.gpus)
    mig_parents = {
        m.uuid: gpu.nvml_index for gpu in gpus for m in gpu.mig_instances or () if m.uuid
    }
    uuids = None if snapshot.init_error else [gpu.uuid for gpu in gpus]
    visible = parse_visible_devices(host.env.get("CUDA_VISIBLE_DEVICES"), uuids, mig_parents)
    return InfoReport(
        torch=torch,
        driver=_driver(snapshot, root),
        gpus=gpus,
        host=host,
        visible=visible,
        collect_seconds=round(time.perf_counter() - started, 3),
    )


def _log_starter(with_torch: bool) -> LogStarter:
    timeout = KERNEL_LOG_TIMEOUT_S if with_torch else KERNEL_LOG_TIMEOUT_NO_TORCH_S
    return lambda: start_kernel_log(timeout_s=timeout)


def _nvcc_starter(
    nvcc: NvccStarter | None, with_torch: bool, env: Mapping[str, str]
) -> NvccStarter:
    if not with_torch:  # nvcc matters only next to torch; --no-torch never runs it
        return lambda: lambda: (None, None)
    if nvcc is not None:
        return nvcc
    from gpudoc.info.toolchain import start_nvcc

    return lambda: start_nvcc(env)


def _driver(snapshot: NvmlSnapshot, root: str) -> DriverInfo:
    bindings = binding_distributions()
    return DriverInfo(
        nvml_error=snapshot.init_error,
        nvml_error_message=snapshot.init_error_message,
        driver_version=snapshot.driver_version,
        nvml_version=snapshot.nvml_version,
        cuda_driver_version=snapshot.cuda_driver_version,
        kernel_module_version=host_facts.kernel_module_version(root),
        nvml_library_path=snapshot.library_path,
        nvml_binding=bindings[0] if bindings else None,
        nvml_binding_deprecated=tuple(b for b in bindings if not b.startswith("nvidia-ml-py ")),
        physical_gpu_count=snapshot.device_count,
    )


def _join(gpu: GpuInfo, torch: TorchInfo | None, root: str, name_processes: bool) -> GpuInfo:
    """Attach torch's index, its arch verdict and the names of processes using the GPU."""
    supported = None
    if torch is not None and torch.build == "cuda" and torch.arch_list is not None:
        supported = arch_supported(gpu.compute_capability, torch.arch_list)
    processes = gpu.processes
    if processes is not None and name_processes:
        processes = tuple(_named(p, root) for p in processes)
    return dataclasses.replace(
        gpu,
        torch_index=torch_index_of(gpu, torch.devices if torch else ()),
        arch_supported_by_torch=supported,
        processes=processes,
    )


def torch_index_of(gpu: GpuInfo, devices: tuple[TorchDevice, ...]) -> int | None:
    """The torch ordinal of `gpu`: same UUID; for MIG, torch's `GPU-<hex>` is NVML's `MIG-<hex>`
    (nvitop maps them the same way); without UUIDs, the same PCI bus id."""
    migs = {m.uuid for m in gpu.mig_instances or () if m.uuid}
    for device in devices:
        if device.uuid is not None and (
            device.uuid == gpu.uuid or "MIG-" + device.uuid.removeprefix("GPU-") in migs
        ):
            return device.index
    for device in devices:
        if device.uuid is None and device.pci_bus_id and device.pci_bus_id == gpu.pci_bus_id:
            return device.index
    return None


def _named(process: GpuProcess, root: str) -> GpuProcess:
    return dataclasses.replace(process, name=host_facts.process_name(process.pid, root))


_ARCH = re.compile(r"^(sm|compute)_(\d+)(\d)([a-z]?)$")


def arch_supported(capability: str | None, arch_list: tuple[str, ...]) -> bool | None:
    """Can a kernel image in `arch_list` run on a device of `capability` ("8.9")?

    `sm_XY` (machine code) runs on the same major with minor >= Y; `sm_XYa` only on exactly X.Y;
    `compute_XY` (PTX) is compiled at load time for any device >= X.Y.
    """
    if capability is None or not arch_list:
        return None
    major, _, minor = capability.partition(".")
    device = (int(major), int(minor or 0))
    for entry in arch_list:
        match = _ARCH.match(entry)
        if match is None:
            continue
        kind, arch = match.group(1), (int(match.group(2)), int(match.group(3)))
        if kind == "compute" and arch <= device:
            return True
        if kind == "sm" and match.group(4) == "a" and arch == device:
            return True
        if kind == "sm" and not match.group(4) and arch[0] == device[0] and arch[1] <= device[1]:
            return True
    return False
