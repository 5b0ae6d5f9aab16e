"""One device, one process: train, evaluate, compare, fingerprint.

``run_device(config, device)`` is the reusable core (``gpudoc smoke`` runs it in one spawned
process per device; ``--distributed`` runs it on every rank). It never prints and never raises
for a device fault: whatever goes wrong becomes a failed ``DeviceResult``.

``python -m gpudoc.smoke.worker`` is the process entry: a JSON request on stdin, then JSON lines
on stdout (``progress`` and ``inject`` events, and one ``result``) for the parent to read.
"""

from __future__ import annotations

import json
import os
import platform
import re
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch

from gpudoc.smoke import checks, inject
from gpudoc.smoke.data import Data, load
from gpudoc.smoke.model import (
    CheckResult,
    DeviceInfo,
    DeviceResult,
    SmokeConfig,
    Throughput,
    status_of,
)
from gpudoc.smoke.spawn import end_with_parent
from gpudoc.smoke.train import (
    RunOutcome,
    StepHook,
    accuracy,
    predict,
    round_trip,
    throughput,
    train,
)

Progress = Callable[[str, int, int], None]
"""``progress(phase, done, total)``; phases: data, train A, train B, evaluate, throughput."""
EVAL_SUBSET = 256


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


def run_device(
    config: SmokeConfig,
    device: str,
    index: int = 0,
    *,
    torch_device: str | None = None,
    fault: inject.Fault | None = None,
    progress: Progress | None = None,
    announce: Callable[[str, int], None] | None = None,
) -> DeviceResult:
    """Run every check of one device. ``device`` is the label reported; ``torch_device`` the one
    used (they differ when CUDA_VISIBLE_DEVICES narrows a worker to one GPU)."""
    started = time.perf_counter()
    phase = "start"
    info = None

    def report(name: str, done: int, total: int) -> None:
        nonlocal phase
        phase = name  # so that an error names the phase it happened in
        if progress is not None:
            progress(name, done, total)

    try:
        configure(config.cpu_threads)
        target = torch.device(torch_device or device)
        _require(target)
        info = inventory(device, target)
        report("data", 0, 1)
        data = load(config.data_root).to(target)
        result = _checks(config, data, target, info, index, fault, report, announce)
    except Exception as error:  # a device fault must be a failed row, never a crash
        message = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        result = DeviceResult(
            index,
            device,
            "FAIL",
            f"error in {phase}: {message}",
            info,
            (checks.error(phase, message),),
        )
    return replace(result, seconds=round(time.perf_counter() - started, 3))


def _require(device: torch.device) -> None:
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if (device.index or 0) >= count:
            raise RuntimeError(f"device {device} not found ({count} CUDA devices visible)")


def _checks(
    config: SmokeConfig,
    data: Data,
    device: torch.device,
    info: DeviceInfo,
    index: int,
    fault: inject.Fault | None,
    report: Progress,
    announce: Callable[[str, int], None] | None,
) -> DeviceResult:
    recipe = config.recipe
    noop: Callable[[str, int], None] = lambda kind, step: None  # noqa: E731
    strike = inject.hook(fault, recipe.steps // 2, announce or noop) if fault else None
    hook_a = _hooks("train A", recipe.steps, report, strike)
    first = train(data, recipe, config.seed, device, hook_a)
    second = None
    if not config.quick:
        second = train(data, recipe, config.seed, device, _hooks("train B", recipe.steps, report))
    report("evaluate", 0, 1)
    heldout = accuracy(predict(first.net, data.test_images, 1000), data.test_labels)
    found = _learning_checks(config, heldout, first, second) + _model_checks(first, data, device)
    report("throughput", 0, 1)
    speeds = tuple(
        Throughput(size, round(throughput(data, size, config.throughput_seconds, device), 1))
        for size in config.throughput_batch_sizes
    )
    loss_first, loss_last = checks.tenth_means(first.losses) if first.losses else (None, None)
    return DeviceResult(
        index=index,
        device=info.device,
        status=status_of(found),
        reason=_reason(found, fault),
        info=info,
        checks=found,
        loss_first=None if loss_first is None else checks.clean(loss_first),
        loss_last=None if loss_last is None else checks.clean(loss_last),
        heldout_accuracy=heldout,
        lockstep_max_rel_err=_worst_lockstep(first),
        fingerprint=first.fingerprint,
        data_sha256=data.sha256,
        throughput=speeds,
        injected_fault=fault.kind if fault else None,
    )


def _hooks(phase: str, steps: int, report: Progress, strike: StepHook | None = None) -> StepHook:
    every = max(1, steps // 20)

    def hook(step: int, net: Any) -> None:
        if strike is not None:
            strike(step, net)
        if (step + 1) % every == 0 or step + 1 == steps:
            report(phase, step + 1, steps)

    return hook


def _worst_lockstep(run: RunOutcome) -> float | None:
    errors = [max(s.logits_rel_err, s.grads_rel_err) for s in run.lockstep]
    return checks.clean(max(errors)) if errors else None


def _learning_checks(
    config: SmokeConfig, heldout: float, first: RunOutcome, second: RunOutcome | None
) -> tuple[CheckResult, ...]:
    limits = checks.SYNTHETIC if config.data_root is None else checks.CIFAR
    return (
        checks.finite(first.losses, first.params_finite),
        checks.loss_falls(first.losses, limits.loss_ratio),
        checks.heldout_accuracy(heldout, limits.accuracy),
        checks.lockstep(
            "lockstep_logits", [s.logits_rel_err for s in first.lockstep], checks.LOGITS_REL_ERR
        ),
        checks.lockstep(
            "lockstep_grads", [s.grads_rel_err for s in first.lockstep], checks.GRADS_REL_ERR
        ),
        checks.self_consistency(first.fingerprint, second.fingerprint if second else None),
    )


def _model_checks(run: RunOutcome, data: Data, device: torch.device) -> tuple[CheckResult, ...]:
    images = data.test_images[:EVAL_SUBSET]
    small, large = predict(run.net, images, 4), predict(run.net, images, EVAL_SUBSET)
    rel = float((small - large).double().norm() / large.double().norm().clamp_min(1e-30))
    same = bool((small.argmax(1) == large.argmax(1)).all())
    reloaded = predict(round_trip(run.net, device), images, EVAL_SUBSET)
    diff = (reloaded - large).abs().max()
    return (
        checks.eval_on_device(rel, same, str(images.device)),
        checks.save_load(float(diff) if torch.isfinite(diff) else float("nan")),
    )


def _reason(found: tuple[CheckResult, ...], fault: inject.Fault | None) -> str | None:
    failed = [c for c in found if c.verdict == "fail"] or [c for c in found if c.verdict == "warn"]
    if not failed:
        return None
    reason = f"{failed[0].id}: {failed[0].detail or failed[0].value}"
    if len(failed) > 1:
        reason += f" (+{len(failed) - 1} more: {', '.join(c.id for c in failed[1:])})"
    if fault is not None:
        reason += f" [injected fault: {fault.kind}]"
    return reason


def _emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event, allow_nan=False) + "\n")
    sys.stdout.flush()


def main() -> int:
    """Process entry: request on stdin, JSON lines on stdout; exit 0 whenever a result was sent."""
    end_with_parent()
    request = json.load(sys.stdin)
    index = int(request["index"])
    result = run_device(
        SmokeConfig.from_dict(request["config"]),
        request["device"],
        index,
        torch_device=request.get("torch_device"),
        fault=inject.fault_for(index),
        progress=lambda phase, done, total: _emit(
            {"event": "progress", "phase": phase, "done": done, "total": total}
        ),
        announce=lambda kind, step: _emit({"event": "inject", "fault": kind, "step": step}),
    )
    _emit({"event": "result", "result": result.to_dict()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
