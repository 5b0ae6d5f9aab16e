"""A child process started now and answered later, within a deadline from its start.

The torch probe, `nvcc --version` and `journalctl -k` run while NVML and the host are read, so
their wall time overlaps; each is waited for at most until its deadline, then killed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

MIN_WAIT_S = 0.05


@dataclass(frozen=True)
class Answer:
    returncode: int
    out: str
    err: str


Waiter = Callable[[], Answer | None]
"""``wait()``: the child's answer, or None when it had not finished by its deadline."""


def start_child(argv: Sequence[str], timeout_s: float) -> Waiter:
    """Start ``argv`` now (OSError if it cannot start); ``wait()`` later. Output is text, with
    undecodable bytes replaced."""
    import subprocess  # here, not at the top: the --no-torch path often starts no child

    deadline = time.monotonic() + timeout_s
    process = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
    )

    def wait() -> Answer | None:
        try:
            # Never a zero timeout: communicate() would give up on a child that has already
            # finished, before reading what it wrote.
            out, err = process.communicate(timeout=max(MIN_WAIT_S, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            return None
        except BaseException:  # Ctrl-C or SIGTERM while waiting: the probe goes too
            process.kill()
            raise
        return Answer(process.returncode, out, err)

    return wait
