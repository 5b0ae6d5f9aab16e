"""The kernel log's `NVRM: Xid` lines, the driver's own record of GPU errors since boot, and the
NVSwitch driver's `SXid` lines.

Read from /dev/kmsg (what `dmesg` reads) without a subprocess. When this user may not read it
(kernel.dmesg_restrict=1, the default on Ubuntu and Debian, and `dmesg` fails alike), ask
`journalctl -k` under a deadline. Unreadable is an answer (`unreadable_reason`), never an error
and never a hang.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from gpudoc.info.child import start_child
from gpudoc.info.model import KernelLog, SxidEvent, XidEvent

LogStarter = Callable[[], Callable[[], KernelLog]]
KMSG = "dev/kmsg"
# A kernel ring buffer holds 128 KiB to a few MiB; never read more than this.
MAX_BYTES = 8 * 1024 * 1024
MAX_EVENTS = 100  # a flapping GPU can log thousands: keep the latest
JOURNAL = ("journalctl", "-k", "-b", "-o", "short-monotonic", "--no-pager", "-q", "--grep")
# Phrases journalctl prints when it cannot show the kernel's messages (rc is 1 either way).
_JOURNAL_DENIED = ("not seeing messages", "No journal files", "without pattern matching")

# `NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.`; pid and
# name are absent on older drivers and for some codes, `'<unknown>'` when no process is to blame;
# MIG adds `GPU-I:01 GPU-CI:00` inside the parentheses.
_XID = re.compile(
    r"NVRM: Xid \(PCI:(?P<bus>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})[^)]*\): "
    r"(?P<xid>\d+)(?:, pid=(?P<pid>[^,]*))?(?:, name=(?P<name>[^,]*))?(?:, (?P<message>.*))?$"
)
# `nvidia-nvswitch3: SXid (PCI:0000:c1:00.0): 12028, Non-fatal, Link 33 egress non-posted PRIV
# error (First)`; the same event goes on in lines "<code>, Severity 1 Engine instance ..." and
# "<code>, Data {0x...}", which are not events of their own.
_SXID = re.compile(r"SXid \(PCI:(?P<bus>[0-9a-fA-F:.]+)\): (?P<sxid>\d+), (?P<rest>.*)$")
_SXID_CONTINUED = ("Data {", "Severity ")
_SXID_LINK = re.compile(r"\bLink (\d+)\b")
JOURNAL_PATTERN = "NVRM: Xid|SXid"  # journalctl --grep takes a regular expression
# /dev/kmsg records: "priority,sequence,microseconds,flags;text".
_KMSG_TIME = re.compile(r"^\d+,\d+,(\d+),[^;]*;")
# dmesg, `journalctl -o short-monotonic` and syslog put "[ seconds]" before the text.
_BRACKET_TIME = re.compile(r"\[\s*(\d+\.\d+)\][^\[]*(?:NVRM: Xid|SXid)")


def parse_xid_line(line: str) -> XidEvent | None:
    match = _XID.search(line.rstrip())
    if match is None:
        return None
    pid, name = match.group("pid"), match.group("name")
    return XidEvent(
        xid=int(match.group("xid")),
        pci_bus_id=match.group("bus").lower(),
        pid=int(pid) if pid and pid.isdigit() else None,
        process_name=name if name and not name.startswith("<") else None,
        message=(match.group("message") or "").strip(),
        seconds_since_boot=_timestamp(line),
    )


def parse_sxid_line(line: str) -> SxidEvent | None:
    match = _SXID.search(line.rstrip())
    if match is None or match.group("rest").startswith(_SXID_CONTINUED):
        return None
    severity, _, text = match.group("rest").partition(", ")
    fatal = {"fatal": True, "non-fatal": False}.get(severity.lower())
    link = _SXID_LINK.search(match.group("rest"))
    return SxidEvent(
        sxid=int(match.group("sxid")),
        switch_pci_bus_id=match.group("bus").lower(),
        fatal=fatal,
        link=int(link.group(1)) if link else None,
        message=(text if fatal is not None else match.group("rest")).strip(),
        seconds_since_boot=_timestamp(line),
    )


# "NVRM: The NVIDIA GPU 0000:b3:00.0" / "NVRM: (PCI ID: 10de:26b5) installed in this system has" /
# "NVRM: fallen off the bus and is not responding to commands.": the driver found the GPU gone
# when it loaded, and logs no Xid line for it; gpud and NVSentinel read it as Xid 79.
_GONE_AT_PROBE = re.compile(
    r"NVRM: The NVIDIA GPU ([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})"
)
FALLEN_AT_PROBE = (
    "GPU has fallen off the bus (the driver's message as it loaded, without an Xid line)"
)


def _fallen_at_probe(lines: list[str], logged: set[str]) -> list[XidEvent]:
    """Xid 79 events for GPUs the driver found fallen off the bus as it loaded."""
    found = []
    for position, line in enumerate(lines):
        gone = _GONE_AT_PROBE.search(line)
        following = " ".join(lines[position : position + 3])
        if gone is None or "fallen off the bus" not in following:
            continue
        bus = gone.group(1).lower()
        if bus not in logged:
            logged.add(bus)
            found.append(XidEvent(79, bus, None, None, FALLEN_AT_PROBE, _timestamp(line)))
    return found


def _timestamp(line: str) -> float | None:
    if kmsg := _KMSG_TIME.match(line):
        return int(kmsg.group(1)) / 1e6
    bracket = _BRACKET_TIME.search(line)
    return float(bracket.group(1)) if bracket else None


def parse_kernel_log(source: str, lines: Iterable[str], uptime_s: float | None) -> KernelLog:
    lines = list(lines)
    events = [e for line in lines if "NVRM: Xid" in line and (e := parse_xid_line(line))]
    events += _fallen_at_probe(lines, {e.pci_bus_id for e in events if e.xid == 79})
    switch = [s for line in lines if "SXid" in line and (s := parse_sxid_line(line))]
    return KernelLog(
        source, None, uptime_s, tuple(events[-MAX_EVENTS:]), tuple(switch[-MAX_EVENTS:])
    )


def read_uptime(root: str = "/") -> float | None:
    """Seconds since boot, to date the log's timestamps (which count from boot too)."""
    try:
        return float((Path(root) / "proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def read_kmsg(path: str) -> list[str]:
    """Every record in the kernel's buffer; raises OSError when this user may not read it."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    chunks: list[bytes] = []
    size = 0
    try:
        while size < MAX_BYTES:
            try:
                chunk = os.read(fd, 16384)  # one record per read; a record is at most 8 KiB
            except BlockingIOError:
                break  # the end of the buffer: no newer record yet
            except BrokenPipeError:
                continue  # a record was overwritten while reading: go on with the next
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    # Lines starting with a space continue a record (key=value metadata): never Xid text.
    text = b"".join(chunks).decode(errors="replace")
    return [line for line in text.splitlines() if not line.startswith(" ")]


def start_kernel_log(root: str = "/", timeout_s: float = 1.0) -> Callable[[], KernelLog]:
    """Read now when /dev/kmsg is readable; otherwise start journalctl and wait for it later,
    at most `timeout_s` from now."""
    uptime = read_uptime(root)
    try:
        lines = read_kmsg(str(Path(root) / KMSG))
    except OSError as error:
        denied = f"/dev/kmsg: {error.strerror or error}"
    else:
        log = parse_kernel_log("/dev/kmsg", lines, uptime)
        return lambda: log
    return _start_journal(denied, uptime, timeout_s)


def _start_journal(denied: str, uptime: float | None, timeout_s: float) -> Callable[[], KernelLog]:
    try:
        waiter = start_child([*JOURNAL, JOURNAL_PATTERN], timeout_s)
    except OSError as error:
        reason = f"{denied}; journalctl: {error.strerror or error}"
        return lambda: KernelLog(None, reason, uptime)

    def wait() -> KernelLog:
        answer = waiter()
        if answer is None:
            reason = f"{denied}; journalctl -k did not answer within {timeout_s:g} s"
            return KernelLog(None, reason, uptime)
        problem = journal_problem(answer.returncode, answer.err)
        if problem is not None:
            return KernelLog(None, f"{denied}; journalctl -k: {problem}", uptime)
        return parse_kernel_log("journalctl -k", answer.out.splitlines(), uptime)

    return wait


def journal_problem(returncode: int, stderr: str) -> str | None:
    """Why journalctl's answer is not the kernel log, or None (1 alone means: no match)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    denied = [line for line in lines if any(p in line for p in _JOURNAL_DENIED)]
    if denied:
        return denied[0]
    if returncode not in (0, 1):
        return lines[0] if lines else f"exit status {returncode}"
    return None
