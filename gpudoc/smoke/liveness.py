"""Whether a rank's process is gone, frozen or alive, and ending what this process started.

Linux's /proc answers for processes on this host; elsewhere nothing is known (and nothing done).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def kill_children() -> None:
    """SIGKILL this process's children, found in Linux's /proc (elsewhere nothing happens)."""
    me = os.getpid()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if _fields(stat)[1] == str(me):
                os.kill(int(stat.parent.name), signal.SIGKILL)


def stopped_here(info: Mapping[str, Any] | None) -> bool:
    """A rank's process that runs on this host and is stopped (SIGSTOP, a debugger): alive but
    frozen, its heartbeat thread too. From another host a frozen rank looks dead."""
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
