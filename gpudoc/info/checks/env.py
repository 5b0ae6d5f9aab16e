"""Doctor checks about the environment variables CUDA reads and messages only CUDA gives."""

from __future__ import annotations

from collections.abc import Iterator

from gpudoc.info import preconditions as pre
from gpudoc.info.checks.base import check, finding
from gpudoc.info.model import Finding, InfoReport

LIST_GPUS = "list GPUs with `gpudoc info` (UUIDs under Devices) or `nvidia-smi -L`"
# What each debugging or profiling variable does to every CUDA process started with it.
DEBUG_EFFECTS = {
    "CUDA_LAUNCH_BLOCKING": "every kernel launch waits for the GPU: training runs much slower",
    "PYTORCH_NO_CUDA_MEMORY_CACHING": "PyTorch's caching allocator is off: every tensor "
    "allocation calls cudaMalloc, much slower",
    "NSIGHT_CUDA_DEBUGGER": "Nsight debugger hooks",
    "CUDA_INJECTION32_PATH": "loads a profiling tool into every CUDA process",
    "CUDA_INJECTION64_PATH": "loads a profiling tool into every CUDA process",
    "CUDA_AUTO_BOOST": "overrides the GPU's boost clock policy",
    "CUDA_ENABLE_COREDUMP_ON_EXCEPTION": "a GPU fault writes a GPU core dump, which takes long",
    "CUDA_COREDUMP_FILE": "GPU core dumps are configured",
    "CUDA_DEVICE_WAITS_ON_EXCEPTION": "a GPU fault stops the process waiting for a debugger "
    "instead of failing",
    "CUDA_PROFILE": "the legacy CUDA profiler logs every kernel",
    "COMPUTE_PROFILE": "the legacy CUDA profiler logs every kernel",
    "OPENCL_PROFILE": "the legacy OpenCL profiler logs every kernel",
}
# These two are read as switches: "0" (or empty) leaves them off. DCGM warns about the others
# whenever they are set, whatever the value.
_SWITCHES = ("CUDA_LAUNCH_BLOCKING", "PYTORCH_NO_CUDA_MEMORY_CACHING")
TORCH_MESSAGES = pre.reported(
    "torch's CUDA error messages", "torch.unavailable_reason", "torch.init_warnings"
)


@check("CUDA_VISIBLE_DEVICES is not empty", "fail", pre.cvd_set)
def cvd_empty(report: InfoReport) -> Iterator[Finding]:
    raw = report.visible.raw
    if raw is not None and not raw.strip():
        yield finding(
            "fail",
            "CUDA_VISIBLE_DEVICES is set to an empty string: CUDA shows no device at all.",
            "unset CUDA_VISIBLE_DEVICES, or list the GPUs to use (CUDA_VISIBLE_DEVICES=0,1), "
            "before Python starts",
        )


@check("CUDA_VISIBLE_DEVICES is valid", "fail/warn", pre.cvd_listed)
def cvd_invalid(report: InfoReport) -> Iterator[Finding]:
    visible = report.visible
    if visible.raw is None or not visible.raw.strip() or not visible.problems:
        return
    nothing_left = visible.nvml_indices == ()
    yield finding(
        "fail" if nothing_left else "warn",
        f"CUDA_VISIBLE_DEVICES={visible.raw!r}: {'; '.join(visible.problems)}"
        + (" — no device is visible." if nothing_left else "."),
        f"use valid indices or UUIDs, set before Python starts; {LIST_GPUS}",
    )


@check(
    "torch and nvidia-smi number GPUs alike",
    "warn",
    pre.all_of(pre.two_gpus, pre.reported("CUDA_DEVICE_ORDER", "host.env.CUDA_DEVICE_ORDER")),
)
def device_order(report: InfoReport) -> Iterator[Finding]:
    order = report.host.env.get("CUDA_DEVICE_ORDER")
    names = {g.name for g in report.gpus if g.name}
    joined = sorted((g.torch_index, g.nvml_index) for g in report.gpus if g.torch_index is not None)
    expected = list(report.visible.nvml_indices or ()) or sorted(n for _, n in joined)
    actual = [nvml for _, nvml in joined]
    fix = "export CUDA_DEVICE_ORDER=PCI_BUS_ID before Python starts, or address GPUs by UUID"
    if actual and actual != expected[: len(actual)]:
        pairs = ", ".join(f"cuda:{t} = NVML GPU {n}" for t, n in joined)
        yield finding(
            "warn",
            f"torch numbers the GPUs differently from nvidia-smi: {pairs}.",
            fix,
        )
    elif len(names) > 1 and order != "PCI_BUS_ID":
        yield finding(
            "warn",
            f"{len(names)} different GPU models and CUDA_DEVICE_ORDER is "
            f"{order or 'unset (FASTEST_FIRST)'}: cuda:0 may not be nvidia-smi's GPU 0.",
            fix,
        )


def _torch_messages(report: InfoReport) -> list[str]:
    torch = report.torch
    if torch is None:
        return []
    return [*torch.init_warnings, *([torch.unavailable_reason] if torch.unavailable_reason else [])]


@check(
    "no NVSwitch fabric-manager error",
    "fail",
    pre.all_of(pre.driver_libraries, pre.torch_cuda_build, TORCH_MESSAGES),
)
def fabric_manager(report: InfoReport) -> Iterator[Finding]:
    for message in _torch_messages(report):
        if "Error 802" in message:
            yield finding(
                "fail",
                f"CUDA reports 'system not yet initialized' (NVSwitch system): {message}",
                "install and start nvidia-fabricmanager of the same version as the driver "
                "(sudo systemctl enable --now nvidia-fabricmanager)",
            )
            return


@check(
    "no CUDA forward-compat mismatch",
    "fail",
    pre.all_of(pre.driver_libraries, pre.torch_cuda_build, TORCH_MESSAGES),
)
def forward_compat(report: InfoReport) -> Iterator[Finding]:
    for message in _torch_messages(report):
        if "Error 804" in message:
            yield finding(
                "fail",
                f"CUDA forward-compatibility libraries are used on an unsupported GPU: {message}",
                "remove the cuda-compat package from the image (or LD_LIBRARY_PATH), or upgrade "
                "the host driver",
            )
            return


@check(
    "no debugging or profiling variables set",
    "warn",
    pre.reported("the environment variables", "host.env", "host.debug_env"),
)
def bad_cuda_env(report: InfoReport) -> Iterator[Finding]:
    host = report.host
    found = {"CUDA_LAUNCH_BLOCKING": host.env.get("CUDA_LAUNCH_BLOCKING"), **host.debug_env}
    found = {
        name: value
        for name, value in found.items()
        if value is not None and not (name in _SWITCHES and value.strip() in ("", "0", "false"))
    }
    if not found:
        return
    listed = "; ".join(
        f"{name}={value!r} ({DEBUG_EFFECTS.get(name, 'debugging')})"
        for name, value in found.items()
    )
    yield finding(
        "warn",
        f"Debugging or profiling variables are set: {listed}.",
        f"unset {' '.join(found)} for normal runs (keep them for a debugging session)",
    )


@check("nvcc matches torch's CUDA", "info", pre.nvcc_found)
def nvcc_mismatch(report: InfoReport) -> Iterator[Finding]:
    torch_cuda = report.torch.cuda_version if report.torch else None
    nvcc = report.host.nvcc_cuda_version
    if torch_cuda is None or nvcc is None or _major_minor(nvcc) == _major_minor(torch_cuda):
        return
    same_major = nvcc.split(".")[0] == torch_cuda.split(".")[0]
    build = "only warns" if same_major else "fails ('The detected CUDA version mismatches')"
    yield finding(
        "info",
        f"nvcc ({report.host.nvcc_path or 'path unknown'}) is CUDA {nvcc}, torch was built with "
        f"CUDA {torch_cuda}: irrelevant for running torch (the wheel ships its own CUDA runtime); "
        f"it matters only when building CUDA extensions, where this difference {build}.",
        f"nothing to do unless you build extensions; then install the CUDA {torch_cuda} toolkit "
        "and point CUDA_HOME at it",
    )


def _major_minor(version: str) -> tuple[str, ...]:
    return tuple(version.split(".")[:2])
