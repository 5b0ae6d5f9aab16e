"""When a doctor check can apply: pure functions from the report to why it cannot, or None.

A check whose precondition is absent (no driver, no GPU, torch not a CUDA build, ...) is
reported as not applicable with that reason, never as passed: a ✓ means the check looked.
Reasons are short and shared, so the human view can summarise them in one line.
"""

from __future__ import annotations

from collections.abc import Callable

from gpudoc.info.model import GpuInfo, InfoReport

Precondition = Callable[[InfoReport], "str | None"]
NO_GPU = "no NVIDIA GPU"
_NVML_REASONS = {
    "LibraryNotFound": "no NVIDIA driver",
    "DriverNotLoaded": "NVIDIA driver not loaded",
}


def always(report: InfoReport) -> str | None:
    return None


def torch_probed(report: InfoReport) -> str | None:
    return "PyTorch not probed (--no-torch)" if report.torch is None else None


def torch_installed(report: InfoReport) -> str | None:
    if report.torch is not None and not report.torch.installed:
        return "PyTorch is not installed"
    return torch_probed(report)


def torch_imported(report: InfoReport) -> str | None:
    torch = report.torch
    if torch is None or not torch.installed:
        return torch_installed(report)
    if torch.probe_error or torch.import_error:
        return "PyTorch could not be imported"
    return None


def torch_cuda_build(report: InfoReport) -> str | None:
    reason = torch_imported(report)
    if reason is None and report.torch is not None and report.torch.build != "cuda":
        build = report.torch.build
        return "PyTorch is a CPU-only build" if build == "cpu" else f"PyTorch is a {build} build"
    return reason


def torchvision_installed(report: InfoReport) -> str | None:
    reason = torch_imported(report)
    if reason is None and report.torch is not None:
        vision = report.torch.torchvision
        return None if vision is not None and vision.installed else "torchvision is not installed"
    return reason


def nvml(report: InfoReport) -> str | None:
    error = report.driver.nvml_error
    if error is None:
        return None
    return _NVML_REASONS.get(error, f"NVML unavailable ({error})")


def driver_libraries(report: InfoReport) -> str | None:
    """The user-space driver is installed (whether or not its kernel module is loaded)."""
    return (
        _NVML_REASONS["LibraryNotFound"] if report.driver.nvml_error == "LibraryNotFound" else None
    )


def driver_versions(report: InfoReport) -> str | None:
    """The NVML library and kernel module versions are both known, or NVML saw them differ."""
    driver = report.driver
    if driver.nvml_error == "LibRmVersionMismatch":
        return None
    if driver.kernel_module_version is None and driver.nvml_library_path is None:
        return driver_libraries(report) or "driver versions unknown"
    if driver.kernel_module_version is None:
        return "no NVIDIA kernel module loaded"
    if driver.nvml_library_path is None:
        return "NVML library path unknown"
    return None


def gpu(report: InfoReport) -> str | None:
    return nvml(report) or (None if report.gpus else NO_GPU)


def two_gpus(report: InfoReport) -> str | None:
    return gpu(report) or (None if len(report.gpus) > 1 else "only one GPU")


def nvidia_on_pci(report: InfoReport) -> str | None:
    if report.host.pci_gpus is None:
        return "PCI bus unreadable"
    return None if report.host.pci_gpus else NO_GPU


def host_may_have_gpu(report: InfoReport) -> str | None:
    """Not ruled out: NVML shows GPUs, or the PCI bus shows them or cannot be read."""
    return NO_GPU if report.host.pci_gpus == () and not report.gpus else None


def nvidia_gpu(report: InfoReport) -> str | None:
    """An NVIDIA GPU as NVML or the PCI bus shows it (PCI works without a driver)."""
    return None if report.gpus or report.host.pci_gpus else NO_GPU


def container(report: InfoReport) -> str | None:
    return None if report.host.container else "not in a container"


def device_nodes(report: InfoReport) -> str | None:
    if report.host.dev_nodes or report.gpus or report.driver.nvml_error == "NoPermission":
        return None
    return driver_libraries(report) or "no NVIDIA device nodes"


def capabilities_set(report: InfoReport) -> str | None:
    if report.host.env.get("NVIDIA_DRIVER_CAPABILITIES") is None:
        return "NVIDIA_DRIVER_CAPABILITIES is unset"
    return None


def cvd_set(report: InfoReport) -> str | None:
    return "CUDA_VISIBLE_DEVICES is unset" if report.visible.raw is None else None


def cvd_listed(report: InfoReport) -> str | None:
    raw = report.visible.raw
    if raw is not None and not raw.strip():
        return "CUDA_VISIBLE_DEVICES is empty"
    return cvd_set(report)


def all_of(*preconditions: Precondition) -> Precondition:
    """The first reason among `preconditions`: each must hold for the check to apply."""

    def combined(report: InfoReport) -> str | None:
        return next((r for p in preconditions if (r := p(report)) is not None), None)

    return combined


def gpu_reporting(
    field: str, reason: str, when: Callable[[GpuInfo], bool] | None = None
) -> Precondition:
    """Some GPU answered `field` (not None, and `when` it holds): otherwise `reason`."""

    def precondition(report: InfoReport) -> str | None:
        missing = gpu(report)
        if missing is not None:
            return missing
        values = [g for g in report.gpus if getattr(g, field) is not None]
        return None if any(when is None or when(g) for g in values) else reason

    return precondition


def uvm(report: InfoReport) -> str | None:
    """/dev/nvidiactl exists (so nvidia-uvm should too) or CUDA torch tried to initialise."""
    if any(n.path == "/dev/nvidiactl" for n in report.host.dev_nodes):
        return None
    if torch_cuda_build(report) is None:
        return None
    return driver_libraries(report) or "no /dev/nvidiactl"


def memory_repair_reported(report: InfoReport) -> str | None:
    """Some GPU reports page retirement (before Ampere) or row remapping (Ampere and later)."""
    missing = gpu(report)
    if missing is not None:
        return missing
    if any(
        g.retired_pages_pending is not None or g.remapped_rows_pending is not None
        for g in report.gpus
    ):
        return None
    return "no GPU reports page retirement or row remapping"


def kernel_log_readable(report: InfoReport) -> str | None:
    log = report.host.kernel_log
    if log is None:
        return "kernel log not read"
    if log.source is None:
        return f"kernel log unreadable ({log.unreadable_reason})"
    return None


def nvcc_found(report: InfoReport) -> str | None:
    reason = torch_cuda_build(report)
    if reason is None and report.host.nvcc_path is None:
        return "no nvcc (CUDA toolkit) found"
    if reason is None and report.host.nvcc_cuda_version is None:
        return "nvcc --version gave no version"
    return reason
