"""Plan the workers, run them, vote on fingerprints, and build the report. Stdlib only.

``vote`` and ``group_key`` work on any list of ``DeviceResult``: ``gpudoc smoke`` uses them on
its workers' results, ``--distributed`` on the results gathered from every rank.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from gpudoc import __version__
from gpudoc.exit_codes import UsageError
from gpudoc.smoke.model import CheckResult, DeviceResult, SmokeConfig, SmokeReport, Status
from gpudoc.smoke.spawn import OnEvent, WorkerSpec, run_workers

DEVICE_PATTERN = re.compile(r"^(cpu|cuda(:\d+)?)$")
_DRIVER_PATHS = ("/proc/driver/nvidia/gpus", "/dev/nvidia0", "/dev/kfd")
_PROBE = "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)"


class NoDeviceError(UsageError):
    """None of the requested devices exists: no verdict possible (exit 2)."""


def cuda_device_count() -> int:
    """Visible CUDA devices, asked of a child process so this one never touches CUDA.

    Without an NVIDIA (or ROCm) driver there is nothing to ask, and the ~2 s torch import is saved.
    """
    if not _has_driver():
        return 0
    try:
        probe = subprocess.run(
            [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120
        )
        return int(probe.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, IndexError, OSError):
        return 0


def _has_driver() -> bool:
    return any(Path(p).exists() for p in _DRIVER_PATHS)


def parse_devices(requested: Sequence[str]) -> list[str]:
    """Normalise ``--device`` values (``cuda`` means ``cuda:0``, as in torch); UsageError if bad."""
    devices = []
    for name in requested:
        name = name.strip().lower()
        if not DEVICE_PATTERN.match(name):
            raise UsageError(f"--device {name!r}: expected cpu, cuda or cuda:N")
        devices.append("cuda:0" if name == "cuda" else name)
    return devices


def plan(devices: Sequence[str] | None, cuda_count: int) -> tuple[list[WorkerSpec], list[str]]:
    """Worker specs for the devices that exist, and the requested devices that do not.

    ``devices=None`` means every device: the CPU and each visible CUDA device.
    """
    if devices is None:
        devices = ["cpu", *(f"cuda:{i}" for i in range(cuda_count))]
    present = [d for d in devices if d == "cpu" or int(d.split(":")[1]) < cuda_count]
    missing = [d for d in devices if d not in present]
    n_cpu = sum(1 for d in present if d == "cpu")
    threads = cpu_threads(n_cpu, len(present) - n_cpu)
    specs = []
    for index, device in enumerate(present):
        env = {"OMP_NUM_THREADS": str(threads)}
        torch_device = device
        if device != "cpu":
            env["CUDA_VISIBLE_DEVICES"] = _visible(int(device.split(":")[1]))
            torch_device = "cuda:0"
        specs.append(WorkerSpec(index, device, torch_device, env))
    return specs, missing


def cpu_threads(n_cpu: int, n_gpu: int, cores: int | None = None) -> int:
    """Threads per CPU worker: a core for the parent and one per GPU worker's host side, at most
    4 (more than that only adds contention for a network this small)."""
    cores = cores or os.cpu_count() or 1
    return max(1, min(4, (cores - 1 - n_gpu) // max(1, n_cpu)))


def _visible(index: int) -> str:
    """The CUDA_VISIBLE_DEVICES entry for device ``index`` as this process sees it."""
    current = os.environ.get("CUDA_VISIBLE_DEVICES")
    if not current:
        return str(index)
    entries = [e.strip() for e in current.split(",")]
    return entries[index] if index < len(entries) else str(index)


def group_key(result: DeviceResult) -> tuple[object, ...] | None:
    """Devices with equal keys must compute bitwise equal results; None if it did not finish."""
    if result.info is None or result.fingerprint is None:
        return None
    return (*result.info.identity(), result.data_sha256)


def vote(results: Sequence[DeviceResult]) -> list[DeviceResult]:
    """Add the ``cross_device`` check: each group of identical devices votes on its fingerprint.

    A device outside a strict majority is an SDC suspect (FAIL); without a majority every member
    gets a WARN (the stack itself is not deterministic); a device alone is not cross-checked;
    a device that failed its own checks does not vote.
    """
    groups: dict[tuple[object, ...], list[DeviceResult]] = defaultdict(list)
    voted = {}
    for result in results:
        key = group_key(result)
        if result.status in ("FAIL", "HUNG"):  # already failed: its vote would only add noise
            check = CheckResult("cross_device", "skip", None, None, "failed its own checks")
            voted[result.index] = result.with_check(check)
        elif key is not None:
            groups[key].append(result)
    for members in groups.values():
        counts = Counter(m.fingerprint for m in members)
        winner, votes = counts.most_common(1)[0]
        for member in members:
            voted[member.index] = _verdict(member, len(members), winner, votes)
    return [voted.get(r.index, r) for r in results]


def _verdict(member: DeviceResult, size: int, winner: str | None, votes: int) -> DeviceResult:
    threshold = "bitwise equal to the majority of identical devices"
    if size == 1:
        check = CheckResult("cross_device", "skip", None, threshold, "no identical device")
        return replace(member.with_check(check), agreement="alone")
    if votes * 2 <= size:
        detail = f"no majority among {size} identical devices"
        check = CheckResult("cross_device", "warn", False, threshold, detail)
        return replace(member.with_check(check), agreement=f"no majority of {size}")
    if member.fingerprint == winner:
        check = CheckResult("cross_device", "pass", True, threshold, f"{votes} of {size} agree")
        return replace(member.with_check(check), agreement=f"{votes}/{size}")
    detail = f"SDC suspect: differs from {votes} of {size} identical devices"
    check = CheckResult("cross_device", "fail", False, threshold, detail)
    reason = member.reason or f"cross_device: {detail}"
    if member.injected_fault and "injected" not in reason:
        reason += f" [injected fault: {member.injected_fault}]"
    return replace(member.with_check(check), agreement=f"differs ({votes}/{size})", reason=reason)


SLOW_FRACTION = 0.7


def slow_peers(results: Sequence[DeviceResult]) -> list[DeviceResult]:
    """WARN a GPU slower than 0.7x the median of its identical peers at the largest batch.

    CPU workers are left out: in parallel they share the same cores, so their speeds are not
    independent measurements.
    """
    groups: dict[tuple[object, ...], list[DeviceResult]] = defaultdict(list)
    for result in results:
        key = group_key(result)
        if key is not None and result.info and result.info.kind == "cuda" and result.throughput:
            groups[key].append(result)
    checked = {}
    for members in (m for m in groups.values() if len(m) >= 2):
        median = statistics.median(m.throughput[-1].images_per_s for m in members)
        for member in members:
            ratio = round(member.throughput[-1].images_per_s / median, 3) if median else 1.0
            ok = ratio >= SLOW_FRACTION
            detail = f"{ratio:.2f}x the median of {len(members)} identical devices"
            check = CheckResult("throughput_peers", "pass" if ok else "warn", ratio, SLOW_FRACTION)
            updated = member.with_check(replace(check, detail=detail))
            if not ok and updated.reason is None:
                updated = replace(updated, reason=f"throughput_peers: slow device, {detail}")
            checked[member.index] = updated
    return [checked.get(r.index, r) for r in results]


def with_speedups(results: Sequence[DeviceResult]) -> list[DeviceResult]:
    """Speed-up of each device over the CPU worker at the same batch size (if a CPU ran)."""
    cpu = next((r for r in results if r.device == "cpu" and r.throughput), None)
    if cpu is None:
        return list(results)
    base = {t.batch_size: t.images_per_s for t in cpu.throughput}
    out = []
    for result in results:
        speeds = tuple(
            replace(t, speedup_vs_cpu=round(t.images_per_s / base[t.batch_size], 2))
            if base.get(t.batch_size)
            else t
            for t in result.throughput
        )
        out.append(replace(result, throughput=speeds))
    return out


def overall(results: Sequence[DeviceResult], strict: bool = False) -> Status:
    statuses = {r.status for r in results}
    if "HUNG" in statuses:
        return "HUNG"
    if "FAIL" in statuses:
        return "FAIL"
    if "WARN" in statuses:
        return "FAIL" if strict else "WARN"
    return "PASS"


def smoke(
    config: SmokeConfig,
    devices: Sequence[str] | None,
    on_event: OnEvent,
    serial: bool = False,
    strict: bool = False,
) -> SmokeReport:
    """The whole run. Raises NoDeviceError (exit 2) when none of the devices exists."""
    started = time.monotonic()
    needs_cuda = devices is None or any(d != "cpu" for d in devices)
    specs, missing = plan(devices, cuda_device_count() if needs_cuda else 0)
    if not specs:
        raise NoDeviceError(f"no device matched: {', '.join(missing)} not found")
    cpu = [s for s in specs if s.device == "cpu"]
    if cpu:
        config = replace(config, cpu_threads=int(cpu[0].env["OMP_NUM_THREADS"]))
    results = run_workers(config, specs, config.timeout_s, on_event, serial=serial)
    results = with_speedups(slow_peers(vote(results)))
    notes = tuple(f"{d}: not found" for d in missing)
    if devices is None and not any(s.device != "cpu" for s in specs) and _has_driver():
        notes += ("an NVIDIA driver is present but torch sees no CUDA device: see gpudoc info",)
    results += [_missing(len(results) + i, d) for i, d in enumerate(missing)]
    return SmokeReport(
        config=config,
        results=tuple(results),
        overall=overall(results, strict),
        gpudoc_version=__version__,
        seconds=round(time.monotonic() - started, 3),
        strict=strict,
        notes=notes,
    )


def _missing(index: int, device: str) -> DeviceResult:
    check = CheckResult("completed", "fail", False, True, f"{device} not found")
    return DeviceResult(index, device, "FAIL", f"device {device} not found", checks=(check,))
