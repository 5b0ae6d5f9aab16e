"""`ibstat`: each RDMA adapter ("CA 'mlx5_0'") and its ports' state, physical state, rate and
link layer, in the live path's terms (state "ACTIVE", physical state "LinkUp", rate in Gb/s)."""

from __future__ import annotations

import dataclasses
import re

from gpudoc.info.model import InfinibandPort
from gpudoc.info.reports.facts import Facts
from gpudoc.info.reports.values import number

FORMAT = "ibstat"
_ADAPTER = re.compile(r"^\s*CA '([^']+)'\s*$")
_PORT = re.compile(r"^\s*Port (\d+):\s*$")
_FIELD = re.compile(r"^\s*(State|Physical state|Rate|Link layer):\s*(.+?)\s*$")
# ibstat's words for the port states /sys/class/infiniband/*/ports/*/state spells in capitals.
_STATES = {"active": "ACTIVE", "down": "DOWN", "initializing": "INIT", "init": "INIT"}


def looks_like(text: str) -> bool:
    return any(_ADAPTER.match(line) for line in text.splitlines()) and bool(
        re.search(r"^\s*Port \d+:\s*$", text, re.MULTILINE)
    )


def parse(text: str) -> Facts:
    facts = Facts(FORMAT)
    ports: list[InfinibandPort] = []
    adapter: str | None = None
    for line in text.splitlines():
        if found := _ADAPTER.match(line):
            adapter = found.group(1)
        elif (port := _PORT.match(line)) and adapter is not None:
            ports.append(InfinibandPort(adapter, int(port.group(1)), None, None, None, None))
        elif (field := _FIELD.match(line)) and ports:
            ports[-1] = _with(ports[-1], field.group(1), field.group(2))
    facts.host["infiniband_ports"] = tuple(ports)
    return facts


def _with(port: InfinibandPort, name: str, value: str) -> InfinibandPort:
    if name == "State":
        return dataclasses.replace(port, state=_STATES.get(value.lower(), value.upper()))
    if name == "Rate":
        return dataclasses.replace(port, rate_gbps=number(value))
    if name == "Physical state":
        return dataclasses.replace(port, physical_state=value)
    return dataclasses.replace(port, link_layer=value)
