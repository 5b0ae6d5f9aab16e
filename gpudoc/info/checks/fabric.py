"""Doctor checks on the links between the GPUs of one machine: NVLink per link, the NVSwitch
fabric (its registration and the fabric manager), and the NVSwitch driver's SXid errors."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from gpudoc.info import preconditions as pre
from gpudoc.info.checks.base import check, finding
from gpudoc.info.checks.shared import age, label
from gpudoc.info.model import Finding, GpuInfo, InfoReport, Severity, SxidEvent

FABRIC_DOCS = "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/"
NOT_READY = {"not_started": "has not started", "in_progress": "is still in progress"}
START_FM = (
    "start the fabric manager: sudo systemctl enable --now nvidia-fabricmanager (its version "
    "must equal the driver's{driver}); its log is /var/log/fabricmanager.log"
)


def _has_links(gpu: GpuInfo) -> bool:
    return bool(gpu.nvlink_links_active)


def _switched(report: InfoReport) -> bool:
    """An NVSwitch system: NVSwitches on the PCI bus, or GPUs that register with a fabric."""
    fabric = any(g.fabric_state not in (None, "not_supported") for g in report.gpus)
    return fabric or bool(report.host.nvswitches)


def _sxm(report: InfoReport, gpu: GpuInfo) -> bool:
    """NVLink is how this GPU must talk to its peers (SXM, NVSwitch), not an optional bridge."""
    return _switched(report) or "SXM" in (gpu.name or "") or "HBM3" in (gpu.name or "")


def _which(gpus: list[GpuInfo]) -> str:
    if len(gpus) == 1:
        return label(gpus[0])
    return f"{len(gpus)} GPUs ({', '.join(str(g.nvml_index) for g in gpus)})"


def _down(down: list[int], total: int) -> str:
    if len(down) == total:
        return f"all {total} NVLink links down"
    which = ", ".join(str(n) for n in down)
    return f"NVLink {'link' if len(down) == 1 else 'links'} {which} of {total} down"


@check(
    "every NVLink link is up",
    "fail/warn/info",
    pre.gpu_reporting("nvlink_links_active", "no GPU has NVLink", _has_links),
)
def nvlink_down(report: InfoReport) -> Iterator[Finding]:
    linked = [g for g in report.gpus if g.nvlink_links_active]
    any_up = any(any(g.nvlink_links_active or ()) for g in linked)
    for gpu in linked:
        links = gpu.nvlink_links_active or ()
        down = [n for n, up in enumerate(links) if not up]
        if not down or (not any_up and not _sxm(report, gpu)):
            continue  # every link down on PCIe cards alike: no bridge fitted (below)
        severity: Severity = "fail" if _sxm(report, gpu) else "warn"
        yield finding(
            severity,
            f"{label(gpu)}: {_down(down, len(links))}: traffic to its peers is slower or falls "
            "back to PCIe.",
            f"drain the GPU and reset it (sudo nvidia-smi -r -i {gpu.nvml_index}) or reboot; "
            "check nvidia-smi nvlink -s and the fabric manager; links that stay down need the "
            "GPU, bridge or baseboard serviced",
            gpu.nvml_index,
        )
    if not any_up and len(linked) > 1 and not any(_sxm(report, g) for g in linked):
        yield finding(
            "info",
            f"None of the NVLink links of the {len(linked)} GPUs is up: GPU-to-GPU traffic goes "
            "over PCIe.",
            "fit the NVLink bridges between the cards if you want NVLink bandwidth",
        )


def _fabric_applies(report: InfoReport) -> str | None:
    if pre.gpu(report) or _switched(report):
        return pre.gpu(report)
    return "no NVSwitch fabric" if report.sources is None else pre.unswitched(report)


@check("the NVSwitch fabric is ready", "fail", _fabric_applies)
def fabric_not_ready(report: InfoReport) -> Iterator[Finding]:
    version = report.driver.driver_version
    start = START_FM.format(driver=f", {version}" if version else "")
    for state, text in NOT_READY.items():
        waiting = [g for g in report.gpus if g.fabric_state == state]
        if waiting:
            yield finding(
                "fail",
                f"{_which(waiting)}: NVSwitch fabric registration {text}: CUDA fails "
                f"(error 802, 'system not yet initialized') until it completes.",
                start,
                waiting[0].nvml_index if len(waiting) == 1 else None,
            )
    for gpu in report.gpus:
        if gpu.fabric_state == "completed" and gpu.fabric_status not in (None, "Success"):
            yield finding(
                "fail",
                f"{label(gpu)}: its NVSwitch fabric registration failed ({gpu.fabric_status}).",
                f"read /var/log/fabricmanager.log, restart nvidia-fabricmanager and reset the "
                f"GPU (sudo nvidia-smi -r -i {gpu.nvml_index}) or reboot; {FABRIC_DOCS}",
                gpu.nvml_index,
            )
    registers = any(g.fabric_state not in (None, "not_supported") for g in report.gpus)
    if report.host.nvswitches and not registers and report.host.fabric_manager_running is False:
        yield finding(
            "fail",
            f"{len(report.host.nvswitches)} NVSwitches are on the PCI bus but nv-fabricmanager "
            "is not running: CUDA fails (error 802, 'system not yet initialized').",
            start,
        )


def _sxid_applies(report: InfoReport) -> str | None:
    reason = pre.kernel_log_readable(report)
    if reason is None and not _switched(report) and not _sxids(report):
        return pre.unswitched(report)
    return reason


def _sxids(report: InfoReport) -> tuple[SxidEvent, ...]:
    log = report.host.kernel_log
    return log.sxid_events if log else ()


@check("no NVSwitch SXid errors in the kernel log", "fail/info", _sxid_applies)
def sxid_recent(report: InfoReport) -> Iterator[Finding]:
    by_switch: dict[str, list[SxidEvent]] = {}
    for event in _sxids(report):
        by_switch.setdefault(event.switch_pci_bus_id or "unknown", []).append(event)
    uptime = report.host.kernel_log.uptime_seconds if report.host.kernel_log else None
    for switch, events in by_switch.items():
        counts = Counter(e.sxid for e in events)
        codes = ", ".join(f"{c}{f' ×{n}' if n > 1 else ''}" for c, n in sorted(counts.items()))
        fatal = [e for e in events if e.fatal]
        latest = (fatal or events)[-1]
        kind = "fatal " if fatal else "non-fatal "
        when = age(latest.seconds_since_boot, uptime)
        yield finding(
            "fail" if fatal else "info",
            f"NVSwitch at PCI {switch} logged SXid {codes} since boot; the latest {kind}one"
            f"{when}: {latest.message.rstrip('. ') or 'no text'}.",
            _sxid_fix(bool(fatal)),
        )


def _sxid_fix(fatal: bool) -> str:
    if fatal:
        return (
            "a fatal NVSwitch error stops the GPUs behind that switch: drain the node and "
            "reboot it (restarting the fabric manager alone resets nothing); if it returns, "
            f"have the NVSwitch tray or baseboard serviced with sudo nvidia-bug-report.sh; "
            f"{FABRIC_DOCS}"
        )
    return (
        "the fabric corrected these; if they keep coming, check the NVLink error counters "
        "(nvidia-smi nvlink -e) of the links named"
    )
