"""Doctor checks on the links out of a GPU and out of the machine: PCIe errors (replays and
AER), InfiniBand / RoCE ports, and GPUDirect RDMA (nvidia_peermem) between them."""

from __future__ import annotations

from collections.abc import Iterator

from gpudoc.info import preconditions as pre
from gpudoc.info.checks.base import check, finding
from gpudoc.info.checks.shared import label
from gpudoc.info.model import Finding, GpuInfo, InfinibandPort, InfoReport, Severity

# A few replays or corrected errors over a driver's lifetime are link noise; this many mean a
# marginal link (slot, riser, cable) that retransmits under load.
NOISY_COUNT = 100
PCIE_FIX = (
    "reseat the GPU and check its riser and cables; update the system BIOS; if the counts keep "
    "rising, the GPU or the slot needs service"
)
PEER_MEMORY_MODULES = ("nvidia_peermem", "nv_peer_mem")  # the second: Mellanox's older one
# Port states where the cable is fine but no subnet manager configured the port.
NO_SUBNET_MANAGER = ("INIT", "ARMED")


def _pcie_counted(gpu: GpuInfo) -> bool:
    counts = (gpu.pcie_replay_count, gpu.pcie_aer_correctable_count, gpu.pcie_aer_fatal_count)
    return any(c is not None for c in counts)


def _pcie_applies(report: InfoReport) -> str | None:
    reason = pre.gpu(report)
    if reason is None and not any(_pcie_counted(g) for g in report.gpus):
        if report.sources is not None:
            return "the report does not say the GPUs' PCIe error counts"
        return "no GPU reports PCIe error counts"
    return reason


@check("no PCIe errors between host and GPU", "fail/warn/info", _pcie_applies)
def pcie_errors(report: InfoReport) -> Iterator[Finding]:
    for gpu in report.gpus:
        fatal, nonfatal = gpu.pcie_aer_fatal_count or 0, gpu.pcie_aer_nonfatal_count or 0
        replays, corrected = gpu.pcie_replay_count or 0, gpu.pcie_aer_correctable_count or 0
        counts = [
            f"{n} {what}"
            for n, what in (
                (fatal, "fatal"),
                (nonfatal, "uncorrectable non-fatal"),
                (corrected, "correctable"),
                (replays, "replays"),
            )
            if n
        ]
        if not counts:
            continue
        if fatal:
            severity: Severity = "fail"
        elif nonfatal or max(replays, corrected) >= NOISY_COUNT:
            severity = "warn"
        else:
            severity = "info"
        yield finding(
            severity,
            f"{label(gpu)}: PCIe errors since the driver loaded: {', '.join(counts)}.",
            PCIE_FIX if severity != "info" else "nothing yet; watch whether the counts rise",
            gpu.nvml_index,
        )


def _ports_known(report: InfoReport) -> str | None:
    ports = report.host.infiniband_ports
    if ports is None:
        return (
            "RDMA ports unknown"
            if report.sources is None
            else "the report does not say the RDMA ports"
        )
    return None if ports else "no InfiniBand or RoCE adapter"


def _name(port: InfinibandPort) -> str:
    return f"{port.device} port {port.port}"


@check("every InfiniBand / RoCE port is up at full rate", "warn", _ports_known)
def infiniband_down(report: InfoReport) -> Iterator[Finding]:
    ports = report.host.infiniband_ports or ()
    for port in ports:
        if port.state in NO_SUBNET_MANAGER:
            yield finding(
                "warn",
                f"{_name(port)} is {port.state}: the link is up but no subnet manager has "
                "configured it.",
                "start a subnet manager (sudo systemctl start opensm) or check the fabric's",
            )
        elif port.state != "ACTIVE" and port.physical_state != "Disabled":
            physical = f" (physical state {port.physical_state})" if port.physical_state else ""
            yield finding(
                "warn",
                f"{_name(port)} is {port.state or 'in an unknown state'}{physical}: no traffic "
                "goes through it.",
                f"check the cable and the switch port (ibstat {port.device} {port.port}); "
                "'Polling' means no peer answers",
            )
    yield from _slow_ports([p for p in ports if p.state == "ACTIVE" and p.rate_gbps])


def _slow_ports(active: list[InfinibandPort]) -> Iterator[Finding]:
    for layer in {p.link_layer for p in active}:
        peers = [p for p in active if p.link_layer == layer]
        fastest = max(p.rate_gbps or 0 for p in peers)
        for port in peers:
            if (port.rate_gbps or 0) < fastest:
                yield finding(
                    "warn",
                    f"{_name(port)} runs at {port.rate_gbps:g} Gb/s while its peers run at "
                    f"{fastest:g} Gb/s.",
                    f"check the cable and the switch port (ibstat {port.device} {port.port}): a "
                    "damaged cable or a port that trained to fewer lanes cuts bandwidth",
                )


def _peermem_applies(report: InfoReport) -> str | None:
    reason = pre.gpu(report) or _ports_known(report)
    if reason is None and not any(p.state == "ACTIVE" for p in report.host.infiniband_ports or ()):
        return "no active InfiniBand or RoCE port"
    if reason is None and report.host.kernel_modules is None:
        return "loaded kernel modules unknown"
    return reason


@check("GPUDirect RDMA available (nvidia_peermem)", "warn", _peermem_applies)
def peermem_missing(report: InfoReport) -> Iterator[Finding]:
    modules = report.host.kernel_modules
    active = any(p.state == "ACTIVE" for p in report.host.infiniband_ports or ())
    if not active or not report.gpus or modules is None:
        return
    if any(m in modules for m in PEER_MEMORY_MODULES):
        return
    yield finding(
        "warn",
        "InfiniBand / RoCE ports and NVIDIA GPUs are here but nvidia_peermem is not loaded: "
        "unless NCCL uses DMA-BUF, it has no GPUDirect RDMA and stages every transfer between "
        "nodes through host memory.",
        "sudo modprobe nvidia_peermem, and list it in /etc/modules-load.d/ to keep it (or, with "
        "the open kernel module on Linux 5.12+, check that NCCL_DMABUF_ENABLE is not 0)",
    )
