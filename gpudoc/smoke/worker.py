"""One device, one process: train, evaluate, compare, fingerprint.

``run_device(config, device)`` is the reusable core (``gpudoc smoke`` runs it in one spawned
process per device; ``--distributed`` runs it on every rank). It never prints and never raises
for a device fault: whatever goes wrong becomes a failed ``DeviceResult``.

``python -m gpudoc.smoke.worker_main`` is the process entry (it calls ``main`` here): a JSON
request on stdin, then JSON lines on stdout (``progress`` and ``inject`` events, and one
``result``) for the parent to read.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch

from gpudoc.jsondata import from_json
from gpudoc.smoke import checks, inject
from gpudoc.smoke.data import Data, load
from gpudoc.smoke.device import configure, inventory
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
"""``progress(phase, done, total)``; phases: data, train A, train B, train C (the re-run, only if
A and B differ), evaluate, throughput."""
EVAL_SUBSET = 256


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
    runs = _training_runs(config, data, device, fault, report, announce)
    first = runs[0]
    report("evaluate", 0, 1)
    heldout = accuracy(predict(first.net, data.test_images, 1000), data.test_labels)
    found = _learning_checks(config, heldout, runs) + _model_checks(first, data, device)
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
        fingerprint=checks.reproducible([r.fingerprint for r in runs]),
        run_fingerprints=tuple(r.fingerprint for r in runs),
        data_sha256=data.sha256,
        throughput=speeds,
        injected_fault=fault.kind if fault else None,
    )


def _training_runs(
    config: SmokeConfig,
    data: Data,
    device: torch.device,
    fault: inject.Fault | None,
    report: Progress,
    announce: Callable[[str, int], None] | None,
) -> list[RunOutcome]:
    """Run A; then B, the same run again (not under --quick); then, only if A and B differ
    bitwise, the automatic re-run C, so that one odd run is told apart from a device that
    never repeats itself (checks.self_consistency judges the three)."""
    noop: Callable[[str, int], None] = lambda kind, step: None  # noqa: E731
    steps = config.recipe.steps
    runs: list[RunOutcome] = []
    for run, name in enumerate(("train A", "train B", "train C")):
        if run == 1 and config.quick:
            break
        if run == 2 and runs[0].fingerprint == runs[1].fingerprint:
            break
        strike = None
        if fault is not None and inject.strikes(fault, run):
            strike = inject.hook(fault, steps // 2, announce or noop, run)
        hook = _hooks(name, steps, report, strike)
        runs.append(train(data, config.recipe, config.seed, device, hook))
    return runs


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
    config: SmokeConfig, heldout: float, runs: list[RunOutcome]
) -> tuple[CheckResult, ...]:
    limits = checks.SYNTHETIC if config.data_root is None else checks.CIFAR
    first = runs[0]
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
        checks.self_consistency([r.fingerprint for r in runs]),
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
        from_json(SmokeConfig, request["config"]),
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
