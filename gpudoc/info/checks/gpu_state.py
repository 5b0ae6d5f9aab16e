"""Doctor checks on GPUs the driver cannot use as they are: on the PCI bus but not listed by
NVML, waiting for a reset, with ECC off or about to change, or with a corrupted InfoROM."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpudoc.info import preconditions as pre
from gpudoc.info.checks.base import check, finding
from gpudoc.info.checks.shared import label
from gpudoc.info.model import Finding, GpuInfo, InfoReport

# Data-centre GPUs, which ship with ECC on: turning it off is a choice to undo. Workstation and
# GeForce boards either lack ECC or ship with it off.
DATACENTER = re.compile(
    r"\b(Tesla|[PV]100|P40|T4|A2|A10G?|A16|A30|A40|A100|A800|H20|H100|H200|H800|L4|L20|L40S?|"
    r"GH200|GB200|GB300|B100|B200|B300)\b"
)
# NVML_FI_DEV_GET_GPU_RECOVERY_ACTION values that mean: this GPU needs a reset or a reboot.
RESET_ACTIONS = {
    "gpu_reset": "a GPU reset",
    "drain_and_reset": "a drain and reset",
    "bus_reset": "a bus reset",
}
REBOOT_ACTIONS = {"node_reboot", "system_reboot"}


def _pci_comparable(report: InfoReport) -> str | None:
    """NVML and the PCI bus both answered, outside a container (which sees every GPU of the
    host on the PCI bus but only its own through NVML)."""
    reason = pre.nvml(report) or pre.nvidia_on_pci(report)
    if reason is None and report.host.container:
        return "in a container: NVML lists only the GPUs given to it"
    return reason


@check("every NVIDIA GPU on the PCI bus is listed by NVML", "fail/warn/info", _pci_comparable)
def pci_gpu_unlisted(report: InfoReport) -> Iterator[Finding]:
    if _pci_comparable(report) is not None:
        return  # without NVML every GPU is unlisted: other checks say why
    listed = {g.pci_bus_id for g in report.gpus if g.pci_bus_id}
    unlisted = [p for p in report.host.pci_gpus or () if p.bus_id not in listed]
    unaddressed = sum(1 for g in report.gpus if not g.pci_bus_id)  # lost before naming its bus
    if len(unlisted) <= unaddressed:
        return
    for pci in unlisted:
        if pci.driver is None and not pre.says(report, "host.pci_gpus.driver"):
            yield finding(
                "warn",
                f"NVML does not list the GPU at PCI {pci.bus_id} (the report does not say which "
                "driver is bound to it): it failed to initialise, or no driver claims it.",
                "lspci -k -s " + pci.bus_id + " shows the driver; look for 'RmInitAdapter "
                "failed' or Xid 79 in the kernel log, reboot, reseat the GPU or check its power",
            )
        elif pci.driver == "nvidia":
            yield finding(
                "fail",
                f"The GPU at PCI {pci.bus_id} is bound to the nvidia driver but NVML does not "
                "list it: it failed to initialise, and no program can use it.",
                "look for 'RmInitAdapter failed' or Xid 79 in the kernel log (sudo dmesg | grep "
                "NVRM); reboot, and if it stays missing reseat the GPU and check its power "
                "cables, or have it serviced",
            )
        elif pci.driver == "vfio-pci":
            yield finding(
                "info",
                f"The GPU at PCI {pci.bus_id} is bound to vfio-pci: passed through to a virtual "
                "machine, not usable here.",
                "nothing to do if it is meant for a VM; else unbind it from vfio-pci",
            )
        elif pci.driver is None:
            yield finding(
                "warn",
                f"The GPU at PCI {pci.bus_id} has no driver bound: the nvidia module did not "
                "claim it (a GPU newer than the driver, or one that needs the open kernel "
                "module).",
                "install a driver that supports this GPU (the open kernel module for Blackwell "
                "and newer) and reboot",
            )


@check(
    "no GPU waits for a reset",
    "fail/warn",
    pre.all_of(
        pre.gpu,
        pre.gpu_said("whether a GPU waits for a reset", "reset_required", "recovery_action"),
    ),
)
def gpu_needs_reset(report: InfoReport) -> Iterator[Finding]:
    for gpu in report.gpus:
        action = gpu.recovery_action
        if gpu.reset_required or action in RESET_ACTIONS:
            asks = RESET_ACTIONS.get(action or "", "a reset")
            why = (
                "NVML answers 'GPU requires reset'"
                if gpu.reset_required
                else f"the driver asks for {asks}"
            )
            yield finding(
                "fail",
                f"{label(gpu)} needs a reset: {why}; CUDA fails on it until then.",
                "drain the GPU (stop its processes) and reset it: sudo nvidia-smi -r -i "
                f"{gpu.nvml_index}; reboot if the reset fails",
                gpu.nvml_index,
            )
        elif action in REBOOT_ACTIONS:
            yield finding(
                "fail",
                f"{label(gpu)} needs a reboot: the driver's recovery action is {action}.",
                "drain the node and reboot it; if it returns, have the GPU serviced",
                gpu.nvml_index,
            )
        elif action not in (None, "none"):
            yield finding(
                "warn",
                f"{label(gpu)}: the driver's recovery action is {action}.",
                "drain peer-to-peer (NVLink) traffic to this GPU and follow nvidia-smi -q's "
                "'GPU Recovery Action'",
                gpu.nvml_index,
            )


def _datacenter(gpu: GpuInfo) -> bool:
    return bool(gpu.name and DATACENTER.search(gpu.name))


@check(
    "ECC is on and stays on",
    "warn",
    pre.gpu_reporting("ecc_mode_current", "no GPU reports its ECC mode"),
)
def ecc_disabled(report: InfoReport) -> Iterator[Finding]:
    for gpu in report.gpus:
        current, pending = gpu.ecc_mode_current, gpu.ecc_mode_pending
        index = gpu.nvml_index
        if current is not None and pending is not None and current != pending:
            change = "turned on" if pending else "turned off"
            yield finding(
                "warn",
                f"{label(gpu)}: ECC will be {change} at the next GPU reset or reboot; until "
                "then it is " + ("off." if not current else "on."),
                f"reset the GPU (sudo nvidia-smi -r -i {index}) or reboot to apply it, or undo "
                f"the change: sudo nvidia-smi -i {index} -e {int(bool(current))}",
                index,
            )
        elif current is False and _datacenter(gpu):
            yield finding(
                "warn",
                f"{label(gpu)}: ECC is off on a data-centre GPU: memory errors go undetected "
                "and bad rows are not remapped.",
                f"sudo nvidia-smi -i {index} -e 1, then reset the GPU or reboot",
                index,
            )


@check(
    "every GPU's InfoROM is valid",
    "warn",
    pre.gpu_reporting("inforom_valid", "no GPU reports its InfoROM check"),
)
def inforom_corrupt(report: InfoReport) -> Iterator[Finding]:
    for gpu in report.gpus:
        if gpu.inforom_valid is False:
            yield finding(
                "warn",
                f"{label(gpu)}: its InfoROM is corrupted (NVML's validation fails): ECC and "
                "page-retirement records may be lost, and the GPU may fail to initialise.",
                "report it to the vendor or NVIDIA support with the output of sudo "
                "nvidia-bug-report.sh: an InfoROM is reflashed or the board replaced",
                gpu.nvml_index,
            )
