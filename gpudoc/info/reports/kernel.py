"""Kernel logs (dmesg, journalctl -k, /var/log/syslog): `NVRM: Xid` and NVSwitch `SXid` lines,
read by the live path's own parser (gpudoc/info/kernel_log.py), and the driver's version as it
loads."""

from __future__ import annotations

import re

from gpudoc.info.kernel_log import parse_kernel_log
from gpudoc.info.reports.facts import Facts

FORMAT = "kernel log"
_DMESG_TIME = re.compile(r"^\s*\[\s*\d+\.\d+\]")
_NVIDIA = re.compile(r"NVRM: |nvidia-nvswitch\d*: |\bSXid \(PCI:")
# "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 ..." (also "Open Kernel
# Module", "UNIX Open Kernel Module for aarch64").
_MODULE = re.compile(
    r"NVRM: loading NVIDIA UNIX .*?Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)"
)


def looks_like(text: str) -> bool:
    lines = text.splitlines()
    if any(_NVIDIA.search(line) for line in lines):
        return True
    return sum(1 for line in lines if _DMESG_TIME.match(line)) >= 3


def parse(text: str) -> Facts:
    facts = Facts(FORMAT)
    lines = text.splitlines()
    log = parse_kernel_log(FORMAT, lines, None)  # the live path's parser; no uptime: no ages
    facts.xid_events = list(log.xid_events)
    facts.sxid_events = list(log.sxid_events)
    modules = [m.group(1) for line in lines if (m := _MODULE.search(line))]
    if modules:
        facts.driver["kernel_module_version"] = modules[-1]  # the latest load: after a reboot
    return facts
