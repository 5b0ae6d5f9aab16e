"""When a doctor check can apply: pure functions from the report to why it cannot, or None.

A check whose precondition is absent (no driver, no GPU, torch not a CUDA build, ...) is
reported as not applicable with that reason, never as passed: a ✓ means the check looked.
Reasons are short and shared, so the human view can summarise them in one line.

On a report read with `gpudoc info --from` (`report.sources` set), a fact no report gave is
unknown: a check that needs it does not apply, with the reason "the report does not say ...",
instead of passing or failing on an empty value. On this machine (`sources` is None) every fact
was read, and these report clauses never apply.
"""

from __future__ import annotations

from collections.abc import Callable

# Unknown facts on reports read with --from: re-exported for the checks (`pre.reported(...)`).
from gpudoc.info.known import gpu_said as gpu_said
from gpudoc.info.known import on_reports as on_reports
from gpudoc.info.known import reported as reported
from gpudoc.info.known import says as says
from gpudoc.info.known import unswitched as unswitched
from gpudoc.info.model import GpuInfo, InfoReport

Precondition = Callable[[InfoReport], "str | None"]
NO_GPU = "no NVIDIA GPU"
# GpuInfo fields as a reason names them: "the report does not say the GPUs' MIG mode".
_READABLE = {
    "mig_mode_current": "MIG mode",
    "mig_mode_pending": "pending MIG mode",
    "ecc_uncorrected_volatile": "ECC error counts",
    "arch_supported_by_torch": "compute capability and torch's arch list",
    "clocks_event_reasons": "clock-event (throttle) reasons",
    "pcie_link_width_current": "PCIe link",
    "compute_mode": "compute mode",
    "persistence_mode": "persistence mode",
    "ecc_mode_current": "ECC mode",
    "inforom_valid": "InfoROM check",
    "nvlink_links_active": "NVLink links",
}
_NO_DRIVER_FACTS = "the report does not say whether the NVIDIA driver answers"
_NVML_REASONS = {
    "LibraryNotFound": "no NVIDIA driver",
    "DriverNotLoaded": "NVIDIA driver not loaded",
}


def always(report: InfoReport) -> str | None:
    return None


def torch_probed(report: InfoReport) -> str | None:
    if report.torch is not None:
        return None
    if report.sources is not None:
        return "the report does not say which PyTorch is installed"
    return "PyTorch not probed (--no-torch)"


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


def torch_built(report: InfoReport) -> str | None:
    """PyTorch imports and its build (cuda, rocm, cpu) is known."""
    reason = torch_imported(report)
    if reason is None and report.torch is not None and report.torch.build is None:
        return "the report does not say how PyTorch was built"
    return reason


def torch_cuda_build(report: InfoReport) -> str | None:
    reason = torch_built(report)
    if reason is None and report.torch is not None and report.torch.build != "cuda":
        build = report.torch.build
        return "PyTorch is a CPU-only build" if build == "cpu" else f"PyTorch is a {build} build"
    return reason


def torchvision_installed(report: InfoReport) -> str | None:
    reason = torch_imported(report)
    if reason is None and report.torch is not None:
        vision = report.torch.torchvision
        if vision is None and report.sources is not None:
            return "the report does not say which torchvision is installed"
        return None if vision is not None and vision.installed else "torchvision is not installed"
    return reason


def nvml(report: InfoReport) -> str | None:
    error = report.driver.nvml_error
    if error is None:
        return None if says(report, "driver.nvml_error", "gpus") else _NO_DRIVER_FACTS
    return _NVML_REASONS.get(error, f"NVML unavailable ({error})")


def driver_libraries(report: InfoReport) -> str | None:
    """The user-space driver is installed (whether or not its kernel module is loaded)."""
    return (
        _NVML_REASONS["LibraryNotFound"] if report.driver.nvml_error == "LibraryNotFound" else None
    )


def driver_answered(report: InfoReport) -> str | None:
    """Whether NVML could be initialised is known (always on this machine)."""
    return None if says(report, "driver.nvml_error") else _NO_DRIVER_FACTS


def driver_versions(report: InfoReport) -> str | None:
    """The NVML library and kernel module versions are both known, or NVML saw them differ."""
    driver = report.driver
    if driver.nvml_error == "LibRmVersionMismatch":
        return None
    if not says(report, "driver.kernel_module_version"):
        return "the report does not say the kernel module's version"
    if driver.kernel_module_version is None and driver.nvml_library_path is None:
        return driver_libraries(report) or "driver versions unknown"
    if driver.kernel_module_version is None:
        return "no NVIDIA kernel module loaded"
    if driver.nvml_library_path is None:
        if report.sources is not None:
            return "the report does not say the NVML library's version"
        return "NVML library path unknown"
    return None


def gpu(report: InfoReport) -> str | None:
    if report.driver.nvml_error is not None:
        return nvml(report)
    if report.sources is not None and not report.gpus and not says(report, "gpus"):
        return "the report does not say which GPUs there are"
    return nvml(report) or (None if report.gpus else NO_GPU)


def two_gpus(report: InfoReport) -> str | None:
    return gpu(report) or (None if len(report.gpus) > 1 else "only one GPU")


def nvidia_on_pci(report: InfoReport) -> str | None:
    if report.host.pci_gpus is None:
        if report.sources is not None:
            return "the report does not say which GPUs are on the PCI bus"
        return "PCI bus unreadable"
    return None if report.host.pci_gpus else NO_GPU


def host_may_have_gpu(report: InfoReport) -> str | None:
    """Not ruled out: NVML shows GPUs, or the PCI bus shows them or cannot be read."""
    return NO_GPU if report.host.pci_gpus == () and not report.gpus else None


def nvidia_gpu(report: InfoReport) -> str | None:
    """An NVIDIA GPU as NVML or the PCI bus shows it (PCI works without a driver)."""
    if report.gpus or report.host.pci_gpus:
        return None
    return NO_GPU if says(report, "gpus", "host.pci_gpus") else gpu(report)


def container(report: InfoReport) -> str | None:
    if report.host.container:
        return None
    if not says(report, "host.container"):
        return "the report does not say whether it ran in a container"
    return "not in a container"


def device_nodes(report: InfoReport) -> str | None:
    if report.driver.nvml_error == "NoPermission":
        return None
    if report.host.dev_nodes is None:
        return "the report does not say which device nodes exist"
    if report.host.dev_nodes or report.gpus:
        return None
    return driver_libraries(report) or "no NVIDIA device nodes"


def capabilities_set(report: InfoReport) -> str | None:
    if not says(report, "host.env.NVIDIA_DRIVER_CAPABILITIES"):
        return "the report does not say NVIDIA_DRIVER_CAPABILITIES"
    if report.host.env.get("NVIDIA_DRIVER_CAPABILITIES") is None:
        return "NVIDIA_DRIVER_CAPABILITIES is unset"
    return None


def cvd_set(report: InfoReport) -> str | None:
    if not says(report, "visible.raw"):
        return "the report does not say CUDA_VISIBLE_DEVICES"
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
    """Some GPU answered `field` (not None, and `when` it holds): otherwise `reason`, or on a
    report that gives `field` for no GPU, 'the report does not say the GPUs' <field>'."""

    def precondition(report: InfoReport) -> str | None:
        missing = gpu(report)
        if missing is not None:
            return missing
        values = [g for g in report.gpus if getattr(g, field) is not None]
        if not values and report.sources is not None:
            return f"the report does not say the GPUs' {_READABLE.get(field, field)}"
        return None if any(when is None or when(g) for g in values) else reason

    return precondition


def uvm(report: InfoReport) -> str | None:
    """/dev/nvidiactl exists (so nvidia-uvm should too) or CUDA torch tried to initialise."""
    if report.host.dev_nodes is None:
        return "the report does not say which device nodes exist"
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
    if report.sources is not None:
        return "the report does not say the GPUs' page retirement or row remapping"
    return "no GPU reports page retirement or row remapping"


def kernel_log_readable(report: InfoReport) -> str | None:
    log = report.host.kernel_log
    if log is None:
        return "kernel log not read" if report.sources is None else "the report has no kernel log"
    if log.source is None:
        return f"kernel log unreadable ({log.unreadable_reason})"
    return None


def nvcc_found(report: InfoReport) -> str | None:
    reason = torch_cuda_build(report)
    if reason is None and report.sources is not None:
        if not says(report, "host.nvcc_cuda_version"):
            return "the report does not say which nvcc is installed"
        return None if report.host.nvcc_cuda_version else "no nvcc (CUDA toolkit) found"
    if reason is None and report.host.nvcc_path is None:
        return "no nvcc (CUDA toolkit) found"
    if reason is None and report.host.nvcc_cuda_version is None:
        return "nvcc --version gave no version"
    return reason
