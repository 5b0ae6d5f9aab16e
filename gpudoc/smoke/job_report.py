"""Judge a ``--distributed`` job from what its ranks posted: pure, stdlib only.

``posted[phase][rank]`` is the JSON each rank wrote for ``info``, ``smoke``, ``collectives``,
``ddp`` and ``fault``. A rank missing from a phase that ran is named, never skipped silently.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from gpudoc import __version__
from gpudoc.jsondata import from_json
from gpudoc.smoke.model import (
    CheckResult,
    DeviceResult,
    DistributedReport,
    RankInfo,
    RankResult,
    SmokeConfig,
    Status,
    status_of,
)
from gpudoc.smoke.run import overall, vote

Posted = Mapping[str, Mapping[int, dict[str, Any]]]

# Ranks after 20 DDP steps against one CPU process on the whole global batch: summation-order
# noise is ~1e-8 this early (design notes, 2.2; 9e-9 measured with two gloo ranks); the top
# mantissa bit of one conv1 weight flipped gives 5.5e-5.
DDP_REL_ERR = 1e-5
COLLECTIVES = ("all_reduce", "all_gather", "broadcast")
# Which phase's result a rank must have posted to pass the gate before the next phase.
BEFORE_GATE = {"collectives": "smoke", "ddp": "collectives", "report": "ddp"}
_GATE_RANKS = re.compile(r"ranks? ([\d, ]+) did not arrive")  # gate.py's words


def assemble(
    config: SmokeConfig,
    world: int,
    backend: str,
    posted: Posted,
    ran: tuple[str, ...],
    gate_errors: Mapping[str, str],
    seconds: float,
    strict: bool = False,
    dead: Collection[int] = (),
    frozen: Mapping[int, str] | None = None,
    beats: Mapping[int, float] | None = None,
) -> DistributedReport:
    """``ran``: the gates that passed, so the phases every rank ran; ``gate_errors``: the rest;
    ``dead``: ranks whose heartbeat had stopped when rank 0 looked; ``frozen``: rank -> how it
    is known that its process is alive though its heartbeat stopped (stopped, its port answers):
    hung; ``beats``: seconds since the last heartbeat of those ranks."""
    smokes = [from_json(DeviceResult, posted["smoke"][r]) for r in sorted(posted["smoke"])]
    voted = {result.index: result for result in vote(smokes)}
    stopped = set(posted.get("stopped", {}))
    frozen = frozen or {}
    absent = lost_ranks(world, posted, gate_errors, {*dead, *frozen})
    beats = beats or {}
    ddp_winner = _ddp_majority(posted.get("ddp", {}))
    sharing = _sharing(voted.values())
    rows = []
    for rank in range(world):
        info = posted["info"].get(rank)
        checks = _smoke_checks(voted.get(rank)) + _own_device(rank, sharing)
        if "collectives" in ran:
            checks += _collective_checks(posted.get("collectives", {}).get(rank), bool(absent))
        if "ddp" in ran:
            checks += _ddp_checks(posted.get("ddp", {}).get(rank), ddp_winner, bool(absent))
        how = "stopped" if rank in stopped else "died" if rank in dead else "hung"
        beat = f"no heartbeat for {beats[rank]:.0f} s" if rank in beats else "its heartbeat stopped"
        if rank in frozen:
            how, beat = "frozen", f"{frozen[rank]}, {beat}"
        checks += _arrival_checks(rank, info is not None, absent, how, config.timeout_s, beat)
        ddp = posted.get("ddp", {}).get(rank)
        rows.append(_row(rank, info, voted.get(rank), checks, ddp, posted.get("fault", {}), absent))
    notes = tuple(f"{gate}: {error}" for gate, error in gate_errors.items())
    seconds_busbw = _busbw(posted.get("collectives", {}), world)
    return DistributedReport(
        config=config,
        world_size=world,
        backend=backend,
        ranks=tuple(rows),
        overall=_overall(rows, strict, bool(gate_errors)),
        gpudoc_version=__version__,
        seconds=round(seconds, 3),
        all_reduce_busbw_gb_per_s=seconds_busbw[0],
        bandwidth_bytes=seconds_busbw[1],
        strict=strict,
        notes=notes + _version_skew(posted["info"]),
    )


def _overall(rows: list[RankResult], strict: bool, interrupted: bool) -> Status:
    """The job's verdict; a job that did not run to its end never passes, whoever is named."""
    verdict = overall(rows, strict)  # type: ignore[arg-type]
    return "FAIL" if interrupted and verdict in ("PASS", "WARN") else verdict


def lost_ranks(
    world: int, posted: Posted, gate_errors: Mapping[str, str], dead: Collection[int] = ()
) -> dict[int, str]:
    """Rank -> the phase it never reached: from the failed gates' messages, missing posts and
    stopped heartbeats."""
    lost: dict[int, str] = {r: "init" for r in range(world) if r not in posted["info"]}
    for gate, error in gate_errors.items():
        named = _GATE_RANKS.search(error)
        ranks = {int(r) for r in named.group(1).replace(",", " ").split()} if named else set()
        before = BEFORE_GATE.get(gate)
        if before is not None:
            ranks |= {r for r in range(world) if r not in posted.get(before, {})}
            ranks |= set(dead)
        for rank in ranks:
            lost.setdefault(rank, gate)
    for rank in dead:  # died after the last gate, or the launcher stopped the job first
        lost.setdefault(rank, "the end")
    return lost


def _smoke_checks(result: DeviceResult | None) -> tuple[CheckResult, ...]:
    if result is None:
        return (CheckResult("smoke", "fail", None, "PASS", "no result from its device smoke"),)
    verdict = {"PASS": "pass", "WARN": "warn"}.get(result.status, "fail")
    worst = [c for c in result.checks if c.verdict == verdict and verdict != "pass"]
    detail = result.reason or (f"{worst[0].id}: {worst[0].detail}" if worst else None)
    return (CheckResult("smoke", verdict, result.status, "PASS", detail),)  # type: ignore[arg-type]


def _interrupted(check_id: str, payload: dict[str, Any] | None, lost: bool) -> CheckResult:
    """No result: a fault of this rank, unless a lost peer broke the collective under it."""
    detail = payload["error"] if payload else "no result"
    if lost and payload is not None:
        return CheckResult(check_id, "skip", None, None, f"interrupted by a lost rank: {detail}")
    return CheckResult(check_id, "fail", None, None, detail)


def _sharing(smokes: Iterable[DeviceResult]) -> dict[int, list[int]]:
    """Rank -> the other ranks that ran on the same GPU (same UUID): a wrong rank-to-GPU map."""
    by_uuid: dict[str, list[int]] = {}
    for result in smokes:
        if result.info is not None and result.info.uuid:
            by_uuid.setdefault(result.info.uuid, []).append(result.index)
    return {r: [o for o in ranks if o != r] for ranks in by_uuid.values() for r in ranks}


def _own_device(rank: int, sharing: Mapping[int, list[int]]) -> tuple[CheckResult, ...]:
    others = sharing.get(rank)
    if not others:
        return ()
    detail = f"shares its GPU with rank {', '.join(map(str, others))}: one GPU per rank"
    return (CheckResult("own_device", "fail", False, True, detail),)


def _collective_checks(payload: dict[str, Any] | None, lost: bool) -> tuple[CheckResult, ...]:
    if payload is None or "error" in payload:
        return (_interrupted("collectives", payload, lost),)
    found = []
    for name in COLLECTIVES:
        wrong = int(payload[f"{name}_wrong"])
        detail = f"wrong elements: {wrong}" if wrong else None
        if name == "all_gather" and payload["all_gather_wrong_from"]:
            sources = ", ".join(sorted(payload["all_gather_wrong_from"], key=int))
            detail = f"wrong elements: {wrong}, in the parts from rank {sources}"
        found.append(CheckResult(name, "pass" if wrong == 0 else "fail", wrong, 0, detail))
    return tuple(found)


def _ddp_majority(payloads: Mapping[int, dict[str, Any]]) -> str | None:
    """The fingerprint every rank should have: the most common among the ranks that match the
    single-process reference (which breaks a tie of two), else among all."""
    good = [p for p in payloads.values() if "fingerprint" in p]
    trusted = [p for p in good if _near_reference(p)] or good
    counts = Counter(p["fingerprint"] for p in trusted)
    if not counts:
        return None
    (winner, votes), *rest = counts.most_common()
    return None if rest and rest[0][1] == votes else str(winner)


def _near_reference(payload: dict[str, Any]) -> bool:
    err = payload.get("rel_err_vs_reference")
    return err is not None and err <= DDP_REL_ERR


def _ddp_checks(
    payload: dict[str, Any] | None, winner: str | None, lost: bool
) -> tuple[CheckResult, ...]:
    if payload is None or "error" in payload:
        return (_interrupted("ddp", payload, lost),)
    same = winner is not None and payload["fingerprint"] == winner
    detail = None if same else "weights differ from the other ranks' after the DDP steps"
    if winner is None:
        detail = "the ranks' weights disagree and no fingerprint has a majority"
    identical = CheckResult("ddp_identical", "pass" if same else "fail", same, "bitwise", detail)
    err = payload["rel_err_vs_reference"]
    if not payload["finite"]:
        near = CheckResult("ddp_vs_single", "fail", err, DDP_REL_ERR, "non-finite weights")
    elif err is None:
        detail = "job too large for the single-process reference"
        near = CheckResult("ddp_vs_single", "skip", None, DDP_REL_ERR, detail)
    else:
        ok = payload["finite"] and err <= DDP_REL_ERR
        detail = "relative L2 error of the weights against one process on the global batch"
        near = CheckResult("ddp_vs_single", "pass" if ok else "fail", err, DDP_REL_ERR, detail)
    return identical, near


def _arrival_checks(
    rank: int,
    joined: bool,
    absent: Mapping[int, str],
    how: str,
    timeout_s: float,
    beat: str = "its heartbeat stopped",
) -> tuple[CheckResult, ...]:
    if rank not in absent:
        return ()
    phase = absent[rank]
    if how == "stopped":  # a bystander: the launcher stopped it because another rank failed
        detail = f"stopped by the launcher (SIGTERM) before {phase}, after another rank failed"
        return (CheckResult("arrived", "skip", False, True, detail),)
    if not joined:
        detail = f"never joined the job within {timeout_s:.0f} s"
    elif how == "died":
        detail = f"its process died before {phase} ({beat})"
    elif how == "frozen":
        detail = f"hung before {phase}: {beat}"
    else:
        detail = f"did not reach {phase} within {timeout_s:.0f} s: hung (its heartbeat goes on)"
    return (CheckResult("arrived", "fail", False, True, detail),)


def _row(
    rank: int,
    info: dict[str, Any] | None,
    smoke: DeviceResult | None,
    checks: tuple[CheckResult, ...],
    ddp: dict[str, Any] | None,
    faults: Mapping[int, dict[str, Any]],
    absent: Mapping[int, str],
) -> RankResult:
    arrived = next((c for c in checks if c.id == "arrived" and c.verdict == "fail"), None)
    status: Status = status_of(checks)
    hung = smoke is not None and smoke.status == "HUNG"
    if hung or (arrived is not None and "hung" in (arrived.detail or "")):
        status = "HUNG"
    failed = [c for c in checks if c.id == "arrived"]  # a lost rank: that comes first
    failed += [c for c in checks if c.verdict == "fail" and c not in failed]
    failed = failed or [c for c in checks if c.verdict == "warn"]
    reason = None
    if failed:
        reason = f"{failed[0].id}: {failed[0].detail or failed[0].value}"
        if len(failed) > 1:
            reason += f" (+{len(failed) - 1} more: {', '.join(c.id for c in failed[1:])})"
        fault = faults.get(rank)
        if fault is None and smoke is not None and smoke.injected_fault:
            fault = {"kind": smoke.injected_fault, "phase": "smoke"}
        if fault is not None and "injected" not in reason:
            reason += f" [injected fault: {fault['kind']}@{fault['phase']}]"
    return RankResult(
        info=RankInfo(**info) if info is not None else RankInfo(rank),
        status=status,
        reason=reason,
        smoke=smoke,
        checks=checks,
        ddp_fingerprint=ddp.get("fingerprint") if ddp else None,
        seconds=smoke.seconds if smoke else None,
    )


def _busbw(payloads: Mapping[int, dict[str, Any]], world: int) -> tuple[float | None, int | None]:
    """nccl-tests' bus bandwidth of all_reduce, algbw * 2(n-1)/n, timed by the slowest rank."""
    times = [p.get("bandwidth_seconds") for p in payloads.values() if "error" not in p]
    if world < 2 or not times or None in times or len(times) < world:
        return None, None
    size = int(next(iter(payloads.values()))["bandwidth_bytes"])
    algbw = size / max(t for t in times if t is not None) / 1e9
    return round(algbw * 2 * (world - 1) / world, 3), size


def _version_skew(infos: Mapping[int, dict[str, Any]]) -> tuple[str, ...]:
    notes = []
    for field in ("gpudoc_version", "torch_version", "python_version"):
        values = Counter(str(i.get(field)) for i in infos.values())
        if len(values) > 1:
            spread = ", ".join(f"{v} on {n} ranks" for v, n in values.most_common())
            notes.append(f"version skew: {field} is {spread}")
    return tuple(notes)
