"""Whether a rank's process is gone, frozen or alive, and ending what this process started.

A rank whose heartbeat stopped is either dead or frozen (SIGSTOP, a debugger, a thread stuck
holding the GIL): every thread of it stands still, the heartbeat's too. Two ways tell them apart:

- on the rank's own node, Linux's /proc shows a stopped process (state ``T``);
- from anywhere, its *lifeline*: each rank listens on a TCP port of its own (posted through the
  job store). The kernel, not the process, completes a connection to a listening socket, so a
  frozen process still answers there, while the port of a dead one refuses (its sockets closed
  with it). A host that does not answer at all says nothing either way.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

PROBE_S = 5.0  # a connection the kernel completes takes a round trip: this is for a slow network
Answer = Literal["alive", "gone", "silent"]


def kill_children() -> None:
    """SIGKILL this process's children, found in Linux's /proc (elsewhere nothing happens)."""
    me = os.getpid()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if _fields(stat)[1] == str(me):
                os.kill(int(stat.parent.name), signal.SIGKILL)


def stopped_here(info: Mapping[str, Any] | None) -> bool:
    """A rank's process that runs on this host and is stopped (SIGSTOP, a debugger): alive but
    frozen, its heartbeat thread too. Another host's processes are for ``probe``."""
    if not info or info.get("host") != socket.gethostname() or not info.get("pid"):
        return False
    try:
        state = _fields(Path(f"/proc/{int(info['pid'])}/stat"))[0]
    except (OSError, ValueError, IndexError):
        return False
    return state in ("T", "t")


def _fields(stat: Path) -> list[str]:
    """The fields of /proc/PID/stat after "pid (comm)": state, ppid, ..."""
    return stat.read_text().rsplit(")", 1)[1].split()


class Lifeline:
    """A listening socket that lives and dies with this process, on the interface that reaches
    ``peer`` (the job store's host). Not inherited by children (PEP 446): a device smoke left
    behind by a dead rank does not keep its port open."""

    def __init__(self, peer: str, peer_port: int) -> None:
        family, _, _, _, address = socket.getaddrinfo(peer, peer_port, type=socket.SOCK_DGRAM)[0]
        with socket.socket(family, socket.SOCK_DGRAM) as route:  # sends nothing: picks the route
            route.connect(address)
            self.host = str(route.getsockname()[0])
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        self.socket.bind((self.host, 0))
        self.socket.listen(64)
        self.port = int(self.socket.getsockname()[1])
        threading.Thread(target=self._answer, daemon=True).start()

    def _answer(self) -> None:
        """Accept and close: while this process runs, probes never fill the backlog."""
        with contextlib.suppress(OSError):
            while True:
                self.socket.accept()[0].close()

    def address(self) -> dict[str, Any]:
        return {"host": self.host, "port": self.port}


def probe(address: Mapping[str, Any] | None, timeout: float = PROBE_S) -> Answer:
    """``alive``: the process holds its lifeline (it exists, whatever its heartbeat says);
    ``gone``: the port refuses, the process is dead; ``silent``: no answer (host down, no
    address posted, a firewall)."""
    if not address:
        return "silent"
    try:
        with socket.create_connection((address["host"], int(address["port"])), timeout=timeout):
            return "alive"
    except ConnectionRefusedError:
        return "gone"
    except (OSError, ValueError, KeyError, TypeError):
        return "silent"


def alive_though_silent(
    info: Mapping[str, Any] | None, lifeline: Mapping[str, Any] | None, node: str | None
) -> str | None:
    """How a rank whose heartbeat stopped is known to be alive (frozen, hung), or None when it
    is dead or cannot be told. ``node`` is this rank's node as its launcher numbers them: /proc
    is asked only about a rank on the same node, the lifeline about any."""
    same_node = lifeline is not None and lifeline.get("node") == node
    if same_node and stopped_here(info):
        return "its process is stopped (SIGSTOP?)"
    if probe(lifeline) == "alive":
        where = lifeline.get("host") if lifeline else None
        return f"its process is frozen (alive: its port on {where} still answers)"
    return None
