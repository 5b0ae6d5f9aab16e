"""Plan the workers, run them, vote on fingerprints, and build the report. Stdlib only.

``vote`` and ``group_key`` work on any list of ``DeviceResult``: ``gpudoc smoke`` uses them on
its workers' results, ``--distributed`` on the results gathered from every rank.
"""

from __future__ import annotations

import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from gpudoc import __version__
from gpudoc.exit_codes import UsageError
from gpudoc.smoke import checks
from gpudoc.smoke.golden import NO_MATCH, Golden
from gpudoc.smoke.model import CheckResult, DeviceResult, SmokeConfig, SmokeReport, Status
from gpudoc.smoke.spawn import OnEvent, WorkerSpec, run_workers

DEVICE_PATTERN = re.compile(r"^(cpu|cuda(:\d+)?)$")
_DRIVER_PATHS = ("/proc/driver/nvidia/gpus", "/dev/nvidia0", "/dev/kfd")
# It exits without tearing torch down (os._exit): ~0.5 s that the run would wait for.
_PROBE = (
    "import os, torch\n"
    "print(torch.cuda.device_count() if torch.cuda.is_available() else 0, flush=True)\n"
    "os._exit(0)"
)


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
    # Under `gpudoc run --emulate-cuda` the child that answers sees the emulated GPUs.
    emulated = os.environ.get("GPUDOC_EMULATE_CUDA") is not None
    return emulated or any(Path(p).exists() for p in _DRIVER_PATHS)


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


Lone = Callable[[DeviceResult], tuple[CheckResult, str]]
"""The cross_device check and agreement cell of a device with no identical peer (``--golden``)."""
_MAJORITY = "bitwise equal to the majority of identical devices"


def vote(results: Sequence[DeviceResult], lone: Lone | None = None) -> list[DeviceResult]:
    """Add the ``cross_device`` check: each group of identical devices votes on its fingerprint.

    A device outside a strict majority is an SDC suspect (FAIL), and so is one in it whose odd
    run (A, B or the re-run C) differs, unless every member's runs differ alike (WARN: the
    stack); without a majority every member FAILs, the disagreement named (identical devices
    must compute identical bits: one is wrong, and nothing shows which); a device alone is
    judged by ``lone`` (the golden report) or is not cross-checked; a device that failed its
    own checks does not vote.
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
        alike = _odd_alike(members)
        for member in members:
            if alike is not None:
                check, agreement = alike, f"{len(members)} alike"
            else:
                check, agreement = _verdict(member, members, winner, votes, lone)
            voted[member.index] = _judged(member, check, agreement)
    return [voted.get(r.index, r) for r in results]


def _verdict(
    member: DeviceResult,
    group: Sequence[DeviceResult],
    winner: str | None,
    votes: int,
    lone: Lone | None,
) -> tuple[CheckResult, str]:
    size = len(group)
    if size == 1:
        if lone is not None:
            check, agreement = lone(member)
        else:
            detail = "no identical device"
            check, agreement = CheckResult("cross_device", "skip", None, _MAJORITY, detail), "alone"
        if _one_off(member) and check.verdict == "skip":
            check = _unproven_one_off(member)
            agreement = f"run {check.value} differs"
        return check, agreement
    if votes * 2 <= size:
        return _split(member, group), f"no majority of {size}"
    assert member.fingerprint is not None and winner is not None  # grouped: it has one
    whom = f"{votes} of {size} identical devices"
    if member.fingerprint == winner:  # it is one of the votes: name the others
        peers, others = votes - 1, size - 1
        whom = f"{'its' if peers == others else f'{peers} of its'} {others} identical peer"
        whom += "s" if others > 1 else ""
    check = checks.cross_device(
        member.fingerprint, member.run_fingerprints, winner, whom, _MAJORITY
    )
    if check.verdict == "pass":
        return check, f"{votes}/{size}"
    if check.value is False:
        return check, f"differs ({votes}/{size})"
    return check, f"run {check.value} differs"


def _split(member: DeviceResult, group: Sequence[DeviceResult]) -> CheckResult:
    """No majority: ``member`` and the peers whose bits differ from its own, each named."""
    fingerprint = member.fingerprint or ""
    others = [p for p in group if p.fingerprint != fingerprint]
    named = ", ".join(f"{p.index} ({p.device}) {(p.fingerprint or '')[:12]}" for p in others)
    detail = (
        f"SDC suspect: no majority among {len(group)} identical devices; {fingerprint[:12]} "
        f"here, differs bitwise from device {named}: one of them computes wrong bits"
    )
    return CheckResult("cross_device", "fail", False, _MAJORITY, detail)


def _odd_alike(members: Sequence[DeviceResult]) -> CheckResult | None:
    """Two or more identical devices whose runs differ in the very same way (every run's bits
    equal across them): that is the stack (a first run unlike the rest, say), not one device."""
    patterns = {m.run_fingerprints for m in members}
    if len(members) < 2 or len(patterns) != 1:
        return None
    (runs,) = patterns
    if len(set(runs)) < 2:  # every run alike (or no runs recorded): nothing odd
        return None
    odd = checks.odd_runs(runs, checks.reproducible(runs))
    detail = (
        f"run {odd} differs alike on all {len(members)} identical devices: the stack's runs "
        "differ, not one device (nondeterminism, not an SDC)"
    )
    return CheckResult("cross_device", "warn", odd, _MAJORITY, detail)


def _one_off(member: DeviceResult) -> bool:
    """Runs A and B differed and the re-run C repeated one of them (self_consistency's WARN)."""
    return any(c.id == "self_consistency" and c.verdict == "warn" for c in member.checks)


def _unproven_one_off(member: DeviceResult) -> CheckResult:
    """A lone device's one-off odd run, when nothing (no peer, no golden device) shows whether
    its stack repeats itself: a FAIL. gpudoc's deterministic settings promise bitwise equal runs,
    so a run that differs is a fault until a peer or ``--golden`` shows otherwise."""
    odd = checks.odd_runs(member.run_fingerprints, member.fingerprint or "")
    detail = (
        f"run {odd} differs once and no identical device or golden run shows the stack repeats "
        "itself: deterministic settings promise equal runs, so it counts as a fault"
    )
    return CheckResult("cross_device", "fail", odd, _MAJORITY, detail)


def _judged(member: DeviceResult, check: CheckResult, agreement: str) -> DeviceResult:
    """``member`` with its cross_device check; a failed one leads the reason."""
    judged = replace(member.with_check(check), agreement=agreement)
    if check.verdict != "fail":
        return judged
    reason = f"cross_device: {check.detail}"
    others = [c.id for c in member.checks if c.verdict in ("fail", "warn")]
    if others:
        reason += f" (+{len(others)} more: {', '.join(others)})"
    if member.injected_fault:
        reason += f" [injected fault: {member.injected_fault}]"
    return replace(judged, reason=reason)


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
    golden: Golden | None = None,
) -> SmokeReport:
    """The whole run. Raises NoDeviceError (exit 2) when none of the devices exists."""
    started = time.monotonic()
    started_utc = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    needs_cuda = devices is None or any(d != "cpu" for d in devices)
    specs, missing = plan(devices, cuda_device_count() if needs_cuda else 0)
    if not specs:
        raise NoDeviceError(f"no device matched: {', '.join(missing)} not found")
    check_fault_targets(len(specs), "worker")
    cpu = [s for s in specs if s.device == "cpu"]
    if cpu:
        config = replace(config, cpu_threads=int(cpu[0].env["OMP_NUM_THREADS"]))
    results = run_workers(config, specs, config.timeout_s, on_event, serial=serial)
    results = with_speedups(slow_peers(vote(results, golden.judge(config) if golden else None)))
    notes = tuple(f"{d}: not found" for d in missing) + _golden_notes(golden, results)
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
        host=platform.node() or None,
        started_utc=started_utc,
        golden=golden.ref if golden else None,
    )


def check_fault_targets(count: int, what: str) -> None:
    """A fault injected for a worker (or rank) that this run does not have is a usage error:
    silently injecting nothing would make a test of the checks pass without testing them."""
    from gpudoc.smoke import inject

    absent = sorted({f.index for f in inject.from_env() if f.index >= count})
    if absent:
        listed = ", ".join(map(str, absent))
        raise UsageError(
            f"{inject.ENV}: no {what} {listed}: this run has {count} {what}"
            f"{'s' if count != 1 else ''} (0..{count - 1})"
        )


def _golden_notes(golden: Golden | None, results: Sequence[DeviceResult]) -> tuple[str, ...]:
    """Which golden report was used, and for which devices (only those without a peer here)."""
    if golden is None:
        return ()
    where = ", ".join(v for v in (golden.ref.host, golden.ref.started_utc) if v)
    compared = [r.device for r in results if (r.agreement or "").endswith("golden")]
    unmatched = [r.device for r in results if r.agreement == "alone"]
    note = f"golden {golden.ref.path}{f' ({where})' if where else ''}: "
    note += f"compared {', '.join(compared)}" if compared else "no device compared"
    if unmatched:
        note += f"; {', '.join(unmatched)}: {NO_MATCH}"
    return (note,)


def _missing(index: int, device: str) -> DeviceResult:
    check = CheckResult("completed", "fail", False, True, f"{device} not found")
    return DeviceResult(index, device, "FAIL", f"device {device} not found", checks=(check,))
