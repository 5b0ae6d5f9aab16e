"""What each Xid code means and what to do about it, after NVIDIA's Xid catalogue
(docs.nvidia.com/deploy/xid-errors: its "Resolution Bucket (Immediate Action)" column), in the
words of someone who trains on the GPU. One table, so a code is explained once.

`fix_for` picks, among the codes one GPU logged, the one needing the strongest action and gives
its fix: restarting the program does not help a GPU that fell off the bus, and a reboot is
wasted on an illegal memory access.
"""

from __future__ import annotations

from dataclasses import dataclass

XID_DOCS = "https://docs.nvidia.com/deploy/xid-errors/"


@dataclass(frozen=True)
class Action:
    rank: int  # the stronger action wins when one GPU logged several codes
    fix: str  # "{reset}" becomes the reset command for the GPU


IGNORE = Action(0, "nothing to do: the hardware corrected it; act only if the count keeps rising")
APP = Action(
    1,
    "a program's fault, not the GPU's (usually an illegal memory access or a killed process): "
    "restart the application; rerun it with CUDA_LAUNCH_BLOCKING=1 or compute-sanitizer to find "
    "the kernel",
)
APP_ECC = Action(
    2,
    "a contained memory error killed only the process using that memory: restart the "
    "application; reset the GPU when it is idle ({reset}) to remap the row",
)
RESET = Action(3, "drain the GPU and reset it ({reset}), or reboot; report it if it returns")
GSP = Action(
    4,
    "the GPU's firmware (GSP) stopped answering: drain the GPU and reset it ({reset}) or reboot; "
    "if it returns, update the driver, or disable GSP firmware "
    "(NVreg_EnableGpuFirmware=0, closed kernel module only)",
)
NVLINK = Action(
    5,
    "an NVLink error: drain the GPU and reset it ({reset}), then check the links (nvidia-smi "
    "nvlink -s) and the fabric manager; if links stay down, reseat or service the GPU or "
    "NVSwitch tray",
)
RECOVERY = Action(
    6,
    "the driver changed this GPU's recovery action: do what nvidia-smi -q shows under "
    "'GPU Recovery Action' (reset the GPU, drain peer-to-peer traffic, or reboot)",
)
REBOOT = Action(
    7,
    "the GPU no longer answers on PCIe: drain the node and reboot it (a GPU reset cannot reach "
    "it); if it returns, check the PCIe slot or riser, power cables, cooling, and ask for the "
    "GPU to be replaced",
)
REPLACE = Action(
    8,
    "memory the GPU can no longer repair: drain the GPU, reset it ({reset}) and, if the failure "
    "returns, replace it (NVIDIA's RMA criterion)",
)

# code: (meaning, action). Codes absent here get RESET with a pointer to the catalogue.
XID_CATALOGUE: dict[int, tuple[str, Action]] = {
    8: ("GPU stopped processing", APP),
    13: ("graphics engine exception", APP),
    31: ("GPU memory page fault", APP),
    32: ("invalid or corrupted push buffer stream", RESET),
    38: ("driver firmware error", RESET),
    43: ("GPU stopped processing", APP),
    44: ("graphics engine fault during context switch", RESET),
    45: ("preemptive cleanup, due to previous errors", APP),
    48: ("double-bit ECC error", RESET),
    61: ("internal micro-controller breakpoint", RESET),
    62: ("internal micro-controller halt", RESET),
    63: ("row remapping / page retirement event", APP_ECC),
    64: ("row remapping / page retirement failure", REPLACE),
    68: ("video decoder exception", APP),
    69: ("graphics engine class error", APP),
    74: ("NVLink error", NVLINK),
    79: ("GPU has fallen off the bus", REBOOT),
    92: ("high single-bit ECC error rate", IGNORE),
    94: ("contained ECC error", APP_ECC),
    95: ("uncontained ECC error", RESET),
    109: ("context switch timeout", APP),
    119: ("GSP RPC timeout", GSP),
    120: ("GSP error", GSP),
    121: ("C2C link corrected error", IGNORE),
    140: ("unrecovered ECC error", RESET),
    143: ("GPU initialisation failure", REBOOT),
    144: ("NVLink SAW error", NVLINK),
    145: ("NVLink RLW error", NVLINK),
    146: ("NVLink TLW error", NVLINK),
    147: ("NVLink TREX error", NVLINK),
    148: ("NVLink NVLPW control error", NVLINK),
    149: ("NVLink NETIR error", NVLINK),
    150: ("NVLink MSE error", NVLINK),
    154: ("GPU recovery action changed", RECOVERY),
    155: ("NVLink software-defined error", NVLINK),
    156: ("resource retirement event", APP_ECC),
    157: ("resource retirement failure", REPLACE),
}


def meaning(xid: int) -> str | None:
    entry = XID_CATALOGUE.get(xid)
    return entry[0] if entry else None


def program_only(codes: set[int]) -> bool:
    """Every code is a program's fault or a corrected event: nothing is wrong with the GPU."""
    return all(XID_CATALOGUE.get(c, ("", RESET))[1].rank <= APP.rank for c in codes)


def fix_for(codes: set[int], reset: str) -> str:
    """The fix of the code needing the strongest action, naming that code."""

    def action(code: int) -> Action:
        return XID_CATALOGUE.get(code, ("", RESET))[1]

    strongest = max(sorted(codes), key=lambda c: action(c).rank)
    text = action(strongest).fix.format(reset=reset)
    known = "" if strongest in XID_CATALOGUE else f"unknown to gpudoc, see {XID_DOCS}; "
    return f"Xid {strongest}: {known}{text}"
