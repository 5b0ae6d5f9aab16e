"""Doctor checks about each GPU as NVML reports it."""

from __future__ import annotations

from collections.abc import Iterator

from gpudoc.info import preconditions as pre
from gpudoc.info.checks.base import check, finding
from gpudoc.info.checks.shared import INDEX, label
from gpudoc.info.model import Finding, GpuInfo, InfoReport

GIB = 1024**3
# Other processes holding this share of a GPU's memory leave too little for training.
MEMORY_HELD_SHARE = 0.25


MIG_CAPABLE = pre.gpu_reporting("mig_mode_pending", "no MIG-capable GPU")
MIG_ENABLED = pre.gpu_reporting(
    "mig_mode_current", "no GPU has MIG enabled", lambda g: bool(g.mig_mode_current)
)


@check("every GPU answers", "fail", pre.gpu)
def gpu_lost(report: InfoReport) -> Iterator[Finding]:
    fix = "reset it (sudo nvidia-smi -r -i {}) or reboot; check power, cooling and PCIe seating, "
    for gpu in report.gpus:
        unopened = _unopened(gpu)
        if gpu.lost:
            yield finding(
                "fail",
                f"{label(gpu)} has fallen off the bus (NVML: GPU is lost).",
                fix.format(gpu.nvml_index) + "and the kernel log for Xid 79",
                gpu.nvml_index,
            )
        elif unopened:
            yield finding(
                "fail",
                f"{label(gpu)} does not answer: NVML cannot open it ({unopened}), as happens to a "
                "GPU that fell off the bus, overheated or lost power.",
                fix.format(gpu.nvml_index) + "and the kernel log for Xid 79 or PCIe errors",
                gpu.nvml_index,
            )


# Handle errors other checks explain: permissions (dev-permission), a pending reset
# (gpu-needs-reset).
_EXPLAINED = ("NoPermission", "ResetRequired", "GpuIsLost")


def _unopened(gpu: GpuInfo) -> str | None:
    """The error NVML answered for this GPU's handle, unless another check explains it."""
    errors = [e.error for e in gpu.field_errors if e.field == "handle"]
    return next((e for e in errors if e not in _EXPLAINED), None)


@check("MIG GPUs have instances", "fail", MIG_ENABLED)
def mig_no_instance(report: InfoReport) -> Iterator[Finding]:
    for gpu in report.gpus:
        if gpu.mig_mode_current and gpu.mig_instances == ():
            yield finding(
                "fail",
                f"{label(gpu)} has MIG enabled but no MIG instance: CUDA sees no device on it.",
                f"create instances (sudo nvidia-smi mig -i {gpu.nvml_index} -cgi <profile> -C) or "
                f"disable MIG (sudo nvidia-smi -i {gpu.nvml_index} -mig 0)",
                gpu.nvml_index,
            )


@check("no MIG change pending", "warn", MIG_CAPABLE)
def mig_pending(report: InfoReport) -> Iterator[Finding]:
    for gpu in report.gpus:
        current, pending = gpu.mig_mode_current, gpu.mig_mode_pending
        if current is not None and pending is not None and current != pending:
            state = "enable" if pending else "disable"
            yield finding(
                "warn",
                f"{label(gpu)}: a change to {state} MIG is pending until the GPU is reset.",
                f"reset the GPU (sudo nvidia-smi -r -i {gpu.nvml_index}) or reboot",
                gpu.nvml_index,
            )


@check(
    "MIG instances per process",
    "info",
    pre.all_of(MIG_ENABLED, pre.reported("CUDA_VISIBLE_DEVICES", "visible.raw")),
)
def mig_single_visible(report: InfoReport) -> Iterator[Finding]:
    visible = report.visible.raw or ""
    for gpu in report.gpus:
        instances = gpu.mig_instances or ()
        if len(instances) > 1 and "MIG-" not in visible.upper():
            yield finding(
                "info",
                f"{label(gpu)} has {len(instances)} MIG instances; a CUDA process uses only one.",
                "give each process its own instance: CUDA_VISIBLE_DEVICES=<MIG UUID> "
                "(listed under Devices)",
                gpu.nvml_index,
            )


@check(
    "no GPU exclusively owned by another process",
    "fail/warn",
    pre.gpu_reporting("compute_mode", "no GPU reports its compute mode"),
)
def exclusive_busy(report: InfoReport) -> Iterator[Finding]:
    for gpu in report.gpus:
        if gpu.compute_mode == "exclusive_process" and gpu.processes:
            owners = ", ".join(_process(p.pid, p.name) for p in gpu.processes)
            yield finding(
                "fail",
                f"{label(gpu)} is in Exclusive_Process mode and already owned by {owners}: "
                "a new process gets 'all CUDA-capable devices are busy or unavailable'.",
                "use another GPU, wait for or stop that process, or (admin) "
                f"sudo nvidia-smi -i {gpu.nvml_index} -c DEFAULT",
                gpu.nvml_index,
            )
        elif gpu.compute_mode == "exclusive_process" and _probably_held(gpu):
            used = (gpu.memory_used_bytes or 0) // 2**20
            yield finding(
                "warn",
                f"{label(gpu)} is in Exclusive_Process mode with {used} MiB in use and its "
                "processes unlisted: a CUDA context probably holds it, and a new process would "
                "get 'all CUDA-capable devices are busy or unavailable'.",
                f"list its processes (nvidia-smi -i {gpu.nvml_index}; sudo fuser -v /dev/nvidia*), "
                f"use another GPU, or (admin) sudo nvidia-smi -i {gpu.nvml_index} -c DEFAULT",
                gpu.nvml_index,
            )


# A GPU without a context uses a few MiB at most; a CUDA context takes tens to hundreds.
CONTEXT_BYTES = 32 * 2**20


def _probably_held(gpu: GpuInfo) -> bool:
    """Processes unknown, memory in use, and no display whose memory that could be."""
    used = gpu.memory_used_bytes or 0
    return gpu.processes is None and used >= CONTEXT_BYTES and gpu.display_active is not True


@check(
    "no GPU in Prohibited mode",
    "fail",
    pre.gpu_reporting("compute_mode", "no GPU reports its compute mode"),
)
def compute_prohibited(report: InfoReport) -> Iterator[Finding]:
    for gpu in report.gpus:
        if gpu.compute_mode == "prohibited":
            yield finding(
                "fail",
                f"{label(gpu)} is in Prohibited compute mode: no CUDA process may use it.",
                f"(admin) sudo nvidia-smi -i {gpu.nvml_index} -c DEFAULT",
                gpu.nvml_index,
            )


@check(
    "torch has kernels for every GPU",
    "fail",
    pre.all_of(
        pre.gpu,
        pre.torch_cuda_build,
        pre.on_reports(
            pre.gpu_reporting("arch_supported_by_torch", "no GPU's compute capability known")
        ),
    ),
)
def arch_unsupported(report: InfoReport) -> Iterator[Finding]:
    arch = ", ".join(report.torch.arch_list or ()) if report.torch else ""
    for gpu in report.gpus:
        if gpu.arch_supported_by_torch is False:
            yield finding(
                "fail",
                f"{label(gpu)} has compute capability {gpu.compute_capability}, which this torch "
                f"build does not cover ({arch}): kernels fail with 'no kernel image is available'.",
                "install a wheel built for it: newer GPUs need newer CUDA wheels (sm_120 needs "
                f"cu128+: pip install --force-reinstall torch --index-url {INDEX}/cu128); very "
                "old GPUs need an older torch",
                gpu.nvml_index,
            )


@check("GPU memory is free", "warn", pre.gpu_reporting("processes", "no GPU lists its processes"))
def memory_held(report: InfoReport) -> Iterator[Finding]:
    for gpu in report.gpus:
        if not gpu.processes or not gpu.memory_total_bytes:
            continue
        held = sum(p.used_memory_bytes or 0 for p in gpu.processes)
        if held < MEMORY_HELD_SHARE * gpu.memory_total_bytes:
            continue
        top = sorted(gpu.processes, key=lambda p: -(p.used_memory_bytes or 0))[:3]
        who = ", ".join(
            f"{_process(p.pid, p.name)} {(p.used_memory_bytes or 0) / GIB:.1f} GiB" for p in top
        )
        yield finding(
            "warn",
            f"{label(gpu)}: {held / GIB:.1f} of {gpu.memory_total_bytes / GIB:.1f} GiB held by "
            f"other processes: {who}.",
            "stop those processes or pick a freer GPU; memory held by processes that nvidia-smi "
            "does not list: sudo fuser -v /dev/nvidia*",
            gpu.nvml_index,
        )


@check(
    "no uncorrectable ECC errors",
    "warn",
    pre.gpu_reporting("ecc_uncorrected_volatile", "no GPU reports ECC errors"),
)
def ecc_uncorrectable(report: InfoReport) -> Iterator[Finding]:
    for gpu in report.gpus:
        if gpu.ecc_uncorrected_volatile:
            yield finding(
                "warn",
                f"{label(gpu)} reported {gpu.ecc_uncorrected_volatile} uncorrectable ECC "
                "error(s) since the driver loaded: results on it may be wrong.",
                "drain the GPU and reset it (sudo nvidia-smi -r); replace it if errors return",
                gpu.nvml_index,
            )


def _process(pid: int, name: str | None) -> str:
    return f"PID {pid} ({name})" if name else f"PID {pid}"
