"""The job's key-value store: how ranks tell rank 0 what they found, and rank 0 tells them the end.

A TCPStore outlives any collective: torchrun's agent hosts it (``TORCHELASTIC_USE_AGENT_STORE``),
else rank 0 does. Every rank posts ``<phase>/<rank>`` as JSON and counts up ``beat/<rank>`` once a
second from a thread, so rank 0 can tell a dead rank (its count stops) from a hung one (it goes
on). Keys live under ``gpudoc/<restart>/`` so a restarted torchrun job never reads stale ones.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from datetime import timedelta
from typing import Any

import torch.distributed as dist

from gpudoc.smoke.launch import LaunchEnv

BEAT_S = 1.0
ACK_WAIT_S = 10.0  # how long rank 0 stays up (its store may be the job's) for the others to read


class JobStore:
    def __init__(self, env: LaunchEnv, agent: bool, timeout: timedelta) -> None:
        self.env, self.agent, self.timeout = env, agent, timeout
        self.rank, self.world = env.rank, env.world_size
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
        self.store.set(f"{phase}/{self.rank}", json.dumps(payload, allow_nan=False))

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

    def _beat(self, store: Any) -> None:
        while True:
            with contextlib.suppress(Exception):
                store.add(f"beat/{self.rank}", 1)
            time.sleep(BEAT_S)

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

    def verdict(self, timeout: timedelta) -> dict[str, Any]:
        """Other ranks: what rank 0 published (``overall``, ``failed`` ranks); a FAIL that blames
        this rank if nothing comes within ``timeout``."""
        try:
            self.store.wait(["verdict"], timeout)
            verdict: dict[str, Any] = json.loads(self.store.get("verdict"))
            self.store.add("acks", 1)
        except Exception:
            sys.stderr.write(f"gpudoc: rank {self.rank}: no verdict from rank 0; failing\n")
            return {"overall": "FAIL", "failed": [self.rank]}
        return verdict
