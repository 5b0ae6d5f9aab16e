"""Doctor checks about GPUs that work but are unwell: slowed down, with failing memory rows,
with errors in the kernel log, or slow to start."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator

from gpudoc.info import preconditions as pre
from gpudoc.info.checks.base import check, finding
from gpudoc.info.checks.shared import age, label
from gpudoc.info.checks.xid_catalogue import XID_DOCS, fix_for, meaning, program_only
from gpudoc.info.model import Finding, GpuInfo, InfoReport, XidEvent

# Clock-event reasons that mean heat or the power supply slows the GPU down now. Left out on
# purpose: gpu_idle, applications_clocks_setting, sync_boost and display_clock_setting are
# settings, not trouble; sw_power_cap is set on an idle GPU and under full load at the board's
# own limit, where drawing the rated power is the design (see `_power_capped`).
SLOWDOWNS = {
    "hw_slowdown": "HW slowdown",
    "hw_thermal_slowdown": "HW thermal slowdown",
    "sw_thermal_slowdown": "SW thermal slowdown",
    "hw_power_brake_slowdown": "HW power brake (asserted by the power supply)",
}
# An enforced power limit below this share of the board's default was lowered by someone.
LOWERED_LIMIT_SHARE = 0.95


def _power_capped(gpu: GpuInfo, reasons: tuple[str, ...]) -> bool:
    """SW power cap is trouble only on a busy GPU held below a limit lowered from the default."""
    limit, default = gpu.power_limit_mw, gpu.power_default_limit_mw
    if "sw_power_cap" not in reasons or "gpu_idle" in reasons or not limit or not default:
        return False
    return limit < LOWERED_LIMIT_SHARE * default


@check(
    "no GPU slowed down by heat or power",
    "warn",
    pre.gpu_reporting("clocks_event_reasons", "no GPU reports clock-event reasons"),
)
def throttling(report: InfoReport) -> Iterator[Finding]:
    for gpu in report.gpus:
        reasons = gpu.clocks_event_reasons or ()
        named = [text for reason, text in SLOWDOWNS.items() if reason in reasons]
        capped = _power_capped(gpu, reasons)
        if not named and not capped:
            continue
        fixes = _slowdown_fixes(reasons)
        if capped:
            watts = (gpu.power_limit_mw or 0) // 1000, (gpu.power_default_limit_mw or 0) // 1000
            named.append(f"power limit lowered to {watts[0]} W of the board's {watts[1]} W")
            fixes.append(
                f"restore the power limit: sudo nvidia-smi -i {gpu.nvml_index} -pl {watts[1]}"
            )
        yield finding(
            "warn",
            f"{label(gpu)} is slowed down now: {', '.join(named)}{_clock_state(gpu)}.",
            "; ".join(fixes),
            gpu.nvml_index,
        )


def _slowdown_fixes(reasons: tuple[str, ...]) -> list[str]:
    thermal = "hw_thermal_slowdown" in reasons or "sw_thermal_slowdown" in reasons
    brake = "hw_power_brake_slowdown" in reasons
    fixes = []
    if thermal:
        fixes.append("check cooling: fans, airflow, inlet temperature, dust")
    if brake:
        fixes.append("check the power supplies: the PSU or chassis asserted the power brake")
    if "hw_slowdown" in reasons and not thermal and not brake:
        fixes.append("check cooling and the power supply")
    return fixes


def _clock_state(gpu: GpuInfo) -> str:
    facts = []
    if gpu.temperature_c is not None:
        facts.append(f"{gpu.temperature_c}°C")
    if gpu.clock_sm_mhz is not None and gpu.clock_sm_max_mhz:
        facts.append(f"SM clock {gpu.clock_sm_mhz} of {gpu.clock_sm_max_mhz} MHz")
    return f" ({', '.join(facts)})" if facts else ""


@check(
    "no memory row remap or page retirement pending or failed",
    "fail/warn",
    pre.memory_repair_reported,
)
def retired_remap(report: InfoReport) -> Iterator[Finding]:
    for gpu in report.gpus:
        reset = f"drain the GPU and reset it (sudo nvidia-smi -r -i {gpu.nvml_index}) or reboot"
        rows = f"{gpu.remapped_rows_uncorrectable} uncorrectable, {gpu.remapped_rows_correctable}"
        if gpu.remapped_rows_failure:
            yield finding(
                "fail",
                f"{label(gpu)}: a memory row could not be remapped ({rows} correctable rows "
                "remapped): its memory can no longer hide bad rows, results may be corrupt.",
                "drain the GPU and replace it: NVIDIA treats a row-remapping failure as a "
                "replacement (RMA) criterion",
                gpu.nvml_index,
            )
        elif gpu.remapped_rows_pending:
            yield finding(
                "warn",
                f"{label(gpu)}: a row remap is pending ({rows} correctable rows remapped): the "
                "bad memory row stays in use until the GPU is reset.",
                reset + " to apply it",
                gpu.nvml_index,
            )
        elif gpu.retired_pages_pending:
            yield finding(
                "warn",
                f"{label(gpu)}: memory pages are waiting to be retired: the bad pages stay in "
                "use until the GPU is reset.",
                reset + " to retire them",
                gpu.nvml_index,
            )


def _indices(gpus: list[GpuInfo]) -> str:
    return ", ".join(str(g.nvml_index) for g in gpus)


@check("no Xid errors in the kernel log", "warn/info", pre.kernel_log_readable)
def xid_recent(report: InfoReport) -> Iterator[Finding]:
    log = report.host.kernel_log
    if log is None:
        return
    by_bus: dict[str, list[XidEvent]] = {}
    for event in log.xid_events:
        by_bus.setdefault(event.pci_bus_id, []).append(event)
    for bus, events in by_bus.items():
        gpu = _gpu_on_bus(report, bus)
        where = label(gpu) if gpu else f"GPU at PCI {bus}"
        counts = Counter(e.xid for e in events)
        codes = ", ".join(f"{xid}{f' ×{n}' if n > 1 else ''}" for xid, n in sorted(counts.items()))
        latest = events[-1]
        # "45 ... caused by previous Xid 149": judge the event by what caused it.
        judged = set(counts) | {int(c) for e in events for c in _CAUSED_BY.findall(e.message)}
        repeated = _repeated_across_processes(events) if program_only(judged) else None
        harmless = program_only(judged) and repeated is None
        yield finding(
            "info" if harmless else "warn",
            f"{where}: the driver logged Xid {codes} since boot; the latest, "
            f"{_describe(latest)}{age(latest.seconds_since_boot, log.uptime_seconds)}: "
            f"{latest.message.rstrip('. ') or 'no text'}." + (f" {repeated}" if repeated else ""),
            (REPEATED_FIX if repeated else _xid_fix(judged, gpu)),
            gpu.nvml_index if gpu else None,
        )


_CAUSED_BY = re.compile(r"caused by previous Xid (\d+)")
# Program faults (Xid 13, 31, 43, ...) from this many different processes on one GPU: NVIDIA's
# catalogue sends repeated faults on the same GPU to hardware diagnostics.
REPEATED_PROCESSES = 3
REPEATED_FIX = (
    "run the GPU's diagnostics (dcgmi diag -r 3, or NVIDIA's field diagnostic) with the GPU "
    "drained, and move the jobs to another GPU meanwhile; if they pass, look for a common kernel"
)


def _repeated_across_processes(events: list[XidEvent]) -> str | None:
    pids = {e.pid for e in events if e.pid}
    if len(pids) < REPEATED_PROCESSES:
        return None
    return (
        f"{len(pids)} different processes hit such faults on this GPU: repeated faults on one "
        "GPU point at the GPU, not at one program."
    )


def _describe(event: XidEvent) -> str:
    """`Xid 43 (GPU stopped processing)`: the meaning, unless the driver's text says it."""
    said = meaning(event.xid)
    if said is None or said.lower() in event.message.lower():
        return f"Xid {event.xid}"
    return f"Xid {event.xid} ({said})"


def _gpu_on_bus(report: InfoReport, bus: str) -> GpuInfo | None:
    domain, _, rest = bus.partition(":")
    try:
        wanted = f"{int(domain, 16):04x}:{rest}."
    except ValueError:
        return None
    return next((g for g in report.gpus if (g.pci_bus_id or "").startswith(wanted)), None)


def _xid_fix(codes: set[int], gpu: GpuInfo | None) -> str:
    """The fix of the code that needs the most (catalogue in checks/xid_catalogue.py)."""
    reset = f"sudo nvidia-smi -r -i {gpu.nvml_index}" if gpu else "sudo nvidia-smi -r"
    return f"{fix_for(codes, reset)}; every code: {XID_DOCS}"


@check(
    "persistence mode keeps the driver ready",
    "info",
    pre.gpu_reporting("persistence_mode", "no GPU reports persistence mode"),
)
def persistence_off(report: InfoReport) -> Iterator[Finding]:
    # A display server holds the GPU open, which keeps the driver initialised anyway.
    off = [g for g in report.gpus if g.persistence_mode is False and not g.display_active]
    if not off:
        return
    which = label(off[0]) if len(off) == 1 else f"{len(off)} GPUs ({_indices(off)})"
    yield finding(
        "info",
        f"Persistence mode is off on {which}: when no process holds a GPU the driver tears it "
        "down, and the next CUDA start (and nvidia-smi) waits for it to initialise again.",
        "sudo systemctl enable --now nvidia-persistenced (or sudo nvidia-smi -pm 1, which a "
        "reboot undoes)",
        off[0].nvml_index if len(off) == 1 else None,
    )
