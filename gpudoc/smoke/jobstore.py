"""The job's key-value store: how ranks tell rank 0 what they found, and rank 0 tells them the end.

A TCPStore outlives any collective: torchrun's agent hosts it (``TORCHELASTIC_USE_AGENT_STORE``),
else rank 0 does. Every rank posts ``<phase>/<rank>`` as JSON and counts up ``beat/<rank>`` once a
second from a thread, so rank 0 can tell a dead rank (its count stops) from a hung one (it goes
on), and when (``beat_at/<rank>``, wall-clock seconds). A rank whose own beats fail for
``LOST_AFTER_S`` has lost the store (torchrun, or rank 0 hosting it, is gone): ``on_lost`` is
called. Keys live under ``gpudoc/<restart>/`` so a restarted torchrun job never reads stale ones.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch.distributed as dist

from gpudoc.smoke.launch import LaunchEnv

BEAT_S = 1.0
ACK_WAIT_S = 10.0  # how long rank 0 stays up (its store may be the job's) for the others to read
LOST_AFTER_S = 3.0  # beats failing this long: the store is gone, not slow for a moment
VERDICT_POLL_S = 5.0  # how often a rank waiting for the verdict looks whether rank 0 still beats
OnLost = Callable[[BaseException], None]


class JobStore:
    def __init__(
        self, env: LaunchEnv, agent: bool, timeout: timedelta, on_lost: OnLost | None = None
    ) -> None:
        self.env, self.agent, self.timeout = env, agent, timeout
        self.rank, self.world = env.rank, env.world_size
        self.on_lost = on_lost
        self.beating = True
        self.store = self._connect(host=self.rank == 0)
        beat_store = self._connect(host=False)  # its own connection: never waits behind a get
        threading.Thread(target=self._beat, args=(beat_store,), daemon=True).start()

    def _connect(self, host: bool) -> Any:
        store = dist.TCPStore(
            self.env.master_addr,
            self.env.master_port,
            None,
            is_master=host and not self.agent,
            timeout=self.timeout,
            wait_for_workers=False,
        )
        return dist.PrefixStore(f"gpudoc/{self.env.attempt}", store)

    def post(self, phase: str, payload: dict[str, Any]) -> None:
        try:
            self.store.set(f"{phase}/{self.rank}", json.dumps(payload, allow_nan=False))
        except Exception as error:  # the store's host is gone: no one would read it anyway
            self._lost(error)
            raise

    def _lost(self, error: BaseException) -> None:
        if self.on_lost is not None and self.beating:
            self.beating = False
            self.on_lost(error)

    def collect(self, phase: str, deadline: float) -> dict[int, dict[str, Any]]:
        """What every rank posted for ``phase``, waiting until ``deadline`` for stragglers."""
        keys = [f"{phase}/{r}" for r in range(self.world)]
        while not self.store.check(keys) and time.monotonic() < deadline:
            time.sleep(0.2)
        return {
            r: json.loads(self.store.get(key))
            for r, key in enumerate(keys)
            if self.store.check([key])
        }

    def posted(self, phase: str, rank: int) -> dict[str, Any] | None:
        """What ``rank`` posted for ``phase``, if it did, on a connection of its own: safe from a
        signal handler that interrupted this rank's main connection."""
        with contextlib.suppress(Exception):
            store, key = self._connect(host=False), f"{phase}/{rank}"
            if store.check([key]):
                found: dict[str, Any] = json.loads(store.get(key))
                return found
        return None

    def has(self, key: str) -> bool:
        return bool(self.store.check([key]))

    def read(self, key: str) -> str:
        return bytes(self.store.get(key)).decode()

    def decide(self, key: str, proposal: str) -> str:
        """``proposal`` unless a decision was taken already: the first one stands, for all."""
        return bytes(self.store.compare_set(key, "", proposal)).decode()

    def beats(self, rank: int) -> int:
        """``rank``'s heartbeat count so far."""
        return int(self.store.add(f"beat/{rank}", 0))

    def _beat(self, store: Any) -> None:
        failing_since: float | None = None
        while self.beating:
            try:
                store.add(f"beat/{self.rank}", 1)
                store.set(f"beat_at/{self.rank}", f"{time.time():.3f}")
                failing_since = None
            except Exception as error:
                failing_since = failing_since or time.monotonic()
                if time.monotonic() - failing_since >= LOST_AFTER_S:
                    self._lost(error)
                    return
            time.sleep(BEAT_S)

    def stop_beating(self) -> None:
        """The job is over for this rank: the store's host may go at any moment now."""
        self.beating = False

    def stopped_beating(self, rank: int) -> bool:
        """Whether ``rank``'s heartbeat stands still (~2.5 s to tell), on a connection of its
        own: safe from a signal handler that interrupted this rank's main connection."""
        try:
            probe = self._connect(host=False)
            first = probe.add(f"beat/{rank}", 0)
            time.sleep(BEAT_S * 2.5)
            return bool(probe.add(f"beat/{rank}", 0) == first)
        except Exception:
            return False

    def describe_beat(self, rank: int) -> str:
        age = self.since_beat(rank)
        return "its heartbeat stopped" + (f", last {age:.0f} s ago" if age is not None else "")

    def since_beat(self, rank: int) -> float | None:
        """Seconds since ``rank``'s last heartbeat (None if it never beat or the store is gone)."""
        with contextlib.suppress(Exception):
            if self.store.check([f"beat_at/{rank}"]):
                return max(0.0, time.time() - float(self.store.get(f"beat_at/{rank}")))
        return None

    def dead(self) -> set[int]:
        """Ranks whose heartbeat has stopped: their process is gone (~2.5 s to find out)."""
        first = [self.store.add(f"beat/{r}", 0) for r in range(self.world)]
        time.sleep(BEAT_S * 2.5)
        return {r for r in range(self.world) if self.store.add(f"beat/{r}", 0) == first[r]}

    def publish(self, verdict: dict[str, Any], readers: int) -> None:
        """Rank 0: the job's verdict, then wait (a little) until ``readers`` ranks have read it."""
        self.store.set("verdict", json.dumps(verdict))
        deadline = time.monotonic() + ACK_WAIT_S
        while self.store.add("acks", 0) < readers and time.monotonic() < deadline:
            time.sleep(0.1)

    def verdict(self, timeout: timedelta, hung: Callable[[int], str | None]) -> dict[str, Any]:
        """Other ranks: what rank 0 published (``overall``, ``failed`` ranks); a FAIL that blames
        this rank if nothing comes within ``timeout``. ``hung(rank)``: how a rank whose heartbeat
        stopped is known to be alive (liveness.py), else None."""
        deadline = time.monotonic() + timeout.total_seconds()
        try:
            beats, looked = self.beats(0), time.monotonic()
            while not self.store.check(["verdict"]):
                if time.monotonic() > deadline:
                    raise TimeoutError
                time.sleep(0.2)  # the verdict is read as soon as it is there: rank 0 waits for it
                if time.monotonic() - looked < VERDICT_POLL_S:
                    continue
                if self.beats(0) == beats and not self.store.check(["verdict"]):
                    return self._rank_0_lost(hung(0))
                beats, looked = self.beats(0), time.monotonic()
            verdict: dict[str, Any] = json.loads(self.store.get("verdict"))
            self.store.add("acks", 1)
        except Exception:
            sys.stderr.write(f"gpudoc: rank {self.rank}: no verdict from rank 0; failing\n")
            return {"overall": "FAIL", "failed": [self.rank]}
        return verdict

    def _rank_0_lost(self, alive: str | None) -> dict[str, Any]:
        sys.stderr.write(
            f"gpudoc: rank {self.rank}: {self.rank_0_state(alive)}: no job report; failing\n"
        )
        return {"overall": "FAIL", "failed": [0], "lost": [0]}

    def rank_0_state(self, alive: str | None) -> str:
        """Rank 0, whose heartbeat stopped, as rank 0's report names any such rank: HUNG when
        its process is known to be alive (``alive`` says how), else lost."""
        if alive is None:
            return f"rank 0 is lost ({self.describe_beat(0)})"
        age = self.since_beat(0)
        beat = f"no heartbeat for {age:.0f} s" if age is not None else "its heartbeat stopped"
        return f"rank 0 is HUNG ({alive}, {beat})"
