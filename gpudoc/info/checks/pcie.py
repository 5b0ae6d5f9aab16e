"""The doctor check on the PCIe link between host and GPU: narrower than it can be, or slower
than it can be while the GPU is busy."""

from __future__ import annotations

from collections.abc import Iterator

from gpudoc.info import preconditions as pre
from gpudoc.info.checks.base import check, finding
from gpudoc.info.checks.shared import label
from gpudoc.info.model import Finding, GpuInfo, InfoReport

# Busier than this, a GPU has raised its link to full speed (it does within milliseconds).
BUSY_UTILIZATION_PERCENT = 50
PCIE_WIDTHS = frozenset({1, 2, 4, 8, 12, 16, 32})
# Usable rate of one lane (GT/s times encoding efficiency) of each PCIe generation.
LANE_RATES = {
    1: 2.5 * 8 / 10,
    2: 5.0 * 8 / 10,
    3: 8.0 * 128 / 130,
    4: 16.0 * 128 / 130,
    5: 32.0 * 128 / 130,
    6: 64.0 * 242 / 256,
}


@check(
    "every GPU's PCIe link runs at full width, and at full speed when busy",
    "warn",
    pre.gpu_reporting("pcie_link_width_current", "no GPU reports its PCIe link"),
)
def pcie_degraded(report: InfoReport) -> Iterator[Finding]:
    for gpu in report.gpus:
        width, widest = _link(gpu.pcie_link_width_current, gpu.pcie_link_width_max, PCIE_WIDTHS)
        gen, fastest = _link(gpu.pcie_link_gen_current, _gen_max(gpu), frozenset(LANE_RATES))
        narrow = width < widest
        # GPUs drop the link to Gen1 when idle to save power, and back up as soon as work
        # arrives: a low generation is normal on an idle GPU and means trouble only when busy.
        # The width does not change with load, so a narrow link is trouble either way.
        slow = _busy(gpu) and gen < fastest
        if not narrow and not slow:
            continue
        # The width may be unknown (0) while the generation is known: compare generations only.
        lanes = (width, widest) if widest else (1, 1)
        now, best = (f"x{width}", f"x{widest}") if widest else ("", "")
        rates = (1.0, 1.0)
        if slow:
            now, best = f"Gen{gen} {now}".strip(), f"Gen{fastest} {best}".strip()
            rates = (LANE_RATES[gen], LANE_RATES[fastest])
        share = lanes[0] * rates[0] / (lanes[1] * rates[1])
        busy = f" while {gpu.utilization_gpu_percent}% busy" if slow else ""
        yield finding(
            "warn",
            f"{label(gpu)}'s PCIe link runs at {now} of {best}{busy}: {share:.0%} of the "
            "host-device bandwidth, which slows data loading, copies and NCCL over PCIe.",
            _fix(gpu, narrow, slow, widest, fastest),
            gpu.nvml_index,
        )


def _link(now: int | None, most: int | None, real: frozenset[int]) -> tuple[int, int]:
    """(now, most) of a real link; (0, 0), which nothing flags, for values not to be trusted:
    unknown, or odd (SXM and NVLink-only parts may report those)."""
    if now in real and most in real and now is not None and most is not None and now <= most:
        return now, most
    return 0, 0


def _gen_max(gpu: GpuInfo) -> int | None:
    """The most this GPU in this slot can reach: an older slot is a limit, not a fault."""
    most, own = gpu.pcie_link_gen_max, gpu.pcie_link_gen_gpu_max
    return most if most is None or own is None else min(most, own)


def _busy(gpu: GpuInfo) -> bool:
    busy = (gpu.utilization_gpu_percent or 0) >= BUSY_UTILIZATION_PERCENT
    return busy and "gpu_idle" not in (gpu.clocks_event_reasons or ())


def _fix(gpu: GpuInfo, narrow: bool, slow: bool, widest: int, fastest: int) -> str:
    fixes = []
    if narrow:
        fixes.append(
            f"reseat the card in a x{widest} slot, and check risers and the BIOS's PCIe "
            "bifurcation setting for that slot"
        )
    if slow:
        fixes.append(
            f"check the BIOS's PCIe speed setting for the slot (Gen{fastest} or auto), risers "
            "and retimers: a link that trains low under load often has a bad contact"
        )
    return "; ".join(fixes) + f" (the link: nvidia-smi -q -i {gpu.nvml_index} -d PCI)"
