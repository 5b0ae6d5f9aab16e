"""The gate before each phase of a ``--distributed`` job, kept in the job store.

Every rank posts its arrival (and whether it can go on); the gate opens when all have arrived.
A rank that is missing is waited for while its heartbeat goes on (a slow device smoke, up to
the phase's timeout), but not once its heartbeat has stood still for ``stall_s`` (frozen or
gone), nor once it has stood still for a few seconds and its lifeline port refuses (its
process is dead, as a barrier of collectives would find from its closed sockets). One decision
per gate, the first proposed (``compare_set``), so every rank takes the same way, even when a
rank gives up just as the last one arrives. Unlike a barrier of collectives, a rank frozen with
its sockets open cannot hold the others until the timeout.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from gpudoc.smoke.jobstore import BEAT_S, JobStore
from gpudoc.smoke.liveness import probe

POLL_S = 0.5
# A heartbeat still this long: ask the rank's lifeline whether it died (a live one answers; a
# probe costs a connection, so a beating rank is not asked at every poll).
GONE_AFTER_S = 1.5 * BEAT_S
STOPPING_S = 5.0  # the launcher is stopping the job: only long enough to name who is missing
GO = "go"


def wait(
    store: JobStore,
    phase: str,
    ready: bool,
    timeout_s: float,
    stall_s: float,
    stopping: Callable[[], bool] = lambda: False,
) -> str | None:
    """Wait at ``phase``'s gate: None when every rank arrived ready; else why not, in one line
    that names the ranks ("rank 1 did not arrive: ...", which ``job_report`` reads)."""
    store.post(f"gate_{phase}", {"ready": ready})
    key = f"gate_{phase}/decision"
    deadline = time.monotonic() + timeout_s
    watch = _Stalls(store, stall_s)
    while not store.has(key):
        if stopping():
            deadline = min(deadline, time.monotonic() + STOPPING_S)
            timeout_s = min(timeout_s, STOPPING_S)
        arrived = {r: bool(p["ready"]) for r, p in store.collect(f"gate_{phase}", 0.0).items()}
        missing = [r for r in range(store.world) if r not in arrived]
        proposal = _propose(arrived, missing, watch, deadline, timeout_s)
        if proposal is not None:
            store.decide(key, proposal)
            break
        time.sleep(POLL_S)
    decision = store.read(key)
    return None if decision == GO else decision


def _propose(
    arrived: dict[int, bool], missing: list[int], watch: _Stalls, deadline: float, timeout_s: float
) -> str | None:
    if not missing:
        unready = [r for r, ok in sorted(arrived.items()) if not ok]
        return GO if not unready else f"{_ranks(unready)} could not go on (see its row)"
    gone, stalled = watch.lost(missing)
    if gone:
        return f"{_ranks(gone)} did not arrive: its process is gone (its port refuses)"
    if stalled:
        return f"{_ranks(stalled)} did not arrive: no heartbeat for {watch.stall_s:.0f} s"
    if time.monotonic() > deadline:
        return f"{_ranks(missing)} did not arrive within {timeout_s:.0f} s"
    return None


class _Stalls:
    """When each rank's heartbeat count last moved, as seen from here (no clock is shared)."""

    def __init__(self, store: JobStore, stall_s: float) -> None:
        self.store, self.stall_s = store, stall_s
        self.seen: dict[int, tuple[int, float]] = {}
        self.probed: set[int] = set()  # asked once per stall: a silent host costs a probe's wait

    def lost(self, ranks: Iterable[int]) -> tuple[list[int], list[int]]:
        """The ranks whose process is gone, and those whose heartbeat stood still too long."""
        now = time.monotonic()
        gone, stalled = [], []
        for rank in ranks:
            count = self.store.beats(rank)
            last, since = self.seen.get(rank, (None, now))
            if count != last:
                self.seen[rank] = (count, now)
                self.probed.discard(rank)
            elif now - since >= self.stall_s:
                stalled.append(rank)
            elif now - since >= GONE_AFTER_S and rank not in self.probed:
                self.probed.add(rank)
                if probe(self.store.collect("lifeline", 0.0).get(rank)) == "gone":
                    gone.append(rank)
        return gone, stalled


def _ranks(ranks: list[int]) -> str:
    return ("ranks " if len(ranks) > 1 else "rank ") + ", ".join(map(str, ranks))
