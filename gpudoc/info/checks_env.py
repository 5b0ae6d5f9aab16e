"""Doctor checks about the environment variables CUDA reads and messages only CUDA gives."""

from __future__ import annotations

from collections.abc import Iterator

from gpudoc.info import preconditions as pre
from gpudoc.info.doctor import Check, finding
from gpudoc.info.model import Finding, InfoReport

LIST_GPUS = "list GPUs with `gpudoc info` (UUIDs under Devices) or `nvidia-smi -L`"


def cvd_empty(report: InfoReport) -> Iterator[Finding]:
    raw = report.visible.raw
    if raw is not None and not raw.strip():
        yield finding(
            "cvd-empty",
            "fail",
            "CUDA_VISIBLE_DEVICES is set to an empty string: CUDA shows no device at all.",
            "unset CUDA_VISIBLE_DEVICES, or list the GPUs to use (CUDA_VISIBLE_DEVICES=0,1), "
            "before Python starts",
        )


def cvd_invalid(report: InfoReport) -> Iterator[Finding]:
    visible = report.visible
    if visible.raw is None or not visible.raw.strip() or not visible.problems:
        return
    nothing_left = visible.nvml_indices == ()
    yield finding(
        "cvd-invalid",
        "fail" if nothing_left else "warn",
        f"CUDA_VISIBLE_DEVICES={visible.raw!r}: {'; '.join(visible.problems)}"
        + (" — no device is visible." if nothing_left else "."),
        f"use valid indices or UUIDs, set before Python starts; {LIST_GPUS}",
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
            "device-order",
            "warn",
            f"torch numbers the GPUs differently from nvidia-smi: {pairs}.",
            fix,
        )
    elif len(names) > 1 and order != "PCI_BUS_ID":
        yield finding(
            "device-order",
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


def fabric_manager(report: InfoReport) -> Iterator[Finding]:
    for message in _torch_messages(report):
        if "Error 802" in message:
            yield finding(
                "fabric-manager",
                "fail",
                f"CUDA reports 'system not yet initialized' (NVSwitch system): {message}",
                "install and start nvidia-fabricmanager of the same version as the driver "
                "(sudo systemctl enable --now nvidia-fabricmanager)",
            )
            return


def forward_compat(report: InfoReport) -> Iterator[Finding]:
    for message in _torch_messages(report):
        if "Error 804" in message:
            yield finding(
                "forward-compat",
                "fail",
                f"CUDA forward-compatibility libraries are used on an unsupported GPU: {message}",
                "remove the cuda-compat package from the image (or LD_LIBRARY_PATH), or upgrade "
                "the host driver",
            )
            return


CHECKS = (
    Check("cvd-empty", "CUDA_VISIBLE_DEVICES is not empty", "fail", cvd_empty, pre.cvd_set),
    Check("cvd-invalid", "CUDA_VISIBLE_DEVICES is valid", "fail/warn", cvd_invalid, pre.cvd_listed),
    Check(
        "device-order", "torch and nvidia-smi number GPUs alike", "warn", device_order, pre.two_gpus
    ),
    Check(
        "fabric-manager",
        "no NVSwitch fabric-manager error",
        "fail",
        fabric_manager,
        pre.all_of(pre.driver_libraries, pre.torch_cuda_build),
    ),
    Check(
        "forward-compat",
        "no CUDA forward-compat mismatch",
        "fail",
        forward_compat,
        pre.all_of(pre.driver_libraries, pre.torch_cuda_build),
    ),
)
