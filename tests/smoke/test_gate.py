"""The gate between phases and the lifeline that tells a frozen rank from a dead one: real
TCPStores and real processes on localhost, no torchrun (fast)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from conftest import gpudoc_env, stretch

from gpudoc.smoke import gate
from gpudoc.smoke.jobstore import JobStore
from gpudoc.smoke.launch import LaunchEnv
from gpudoc.smoke.liveness import alive_though_silent, probe, stopped_here


def _free_port() -> int:
    with socket.socket() as probe_socket:
        probe_socket.bind(("127.0.0.1", 0))
        return int(probe_socket.getsockname()[1])


def _stores(world: int, here: int | None = None) -> list[JobStore]:
    """Ranks 0 to ``here`` (all by default) of a job of ``world`` ranks, in this process."""
    port, timeout = _free_port(), timedelta(seconds=stretch(30))
    env = [LaunchEnv(r, r, world, "127.0.0.1", port, "env") for r in range(here or world)]
    first = JobStore(env[0], agent=False, timeout=timeout)  # rank 0 hosts the store
    return [first, *(JobStore(e, agent=False, timeout=timeout) for e in env[1:])]


def _at_gate(
    stores: list[JobStore], ready: list[bool], stall_s: float, timeout_s: float = 60
) -> list[str | None]:
    """Every store's rank waits at one gate, each in a thread of its own."""
    found: list[Any] = [None] * len(stores)

    def one(rank: int) -> None:
        found[rank] = gate.wait(stores[rank], "ddp", ready[rank], stretch(timeout_s), stall_s)

    threads = [threading.Thread(target=one, args=(r,)) for r in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(stretch(120))
    return found


def test_the_gate_opens_for_all_or_for_none() -> None:
    stores = _stores(3)
    assert _at_gate(stores, [True, True, True], stall_s=stretch(30)) == [None, None, None]
    stores = _stores(3)
    said = _at_gate(stores, [True, False, True], stall_s=stretch(30))
    assert said == ["rank 1 could not go on (see its row)"] * 3


def test_a_rank_whose_heartbeat_stops_is_named_before_the_timeout() -> None:
    """Rank 2 never comes and its heartbeat stands still: the others leave after ``stall_s``,
    not after the gate's timeout (60 s stretched), and all read the same decision."""
    stores = _stores(3)
    stores[2].stop_beating()  # as frozen: no heartbeat, and no lifeline posted to say it died
    said = _at_gate(stores[:2], [True, True], stall_s=3.0, timeout_s=600)
    assert said == ["rank 2 did not arrive: no heartbeat for 3 s"] * 2


RANK_2 = """
import sys, time
from datetime import timedelta
from gpudoc.smoke.jobstore import JobStore
from gpudoc.smoke.launch import LaunchEnv
from gpudoc.smoke.liveness import Lifeline
store = JobStore(LaunchEnv(2, 2, 3, "127.0.0.1", int(sys.argv[1]), "env"), False, timedelta(60))
store.post("lifeline", Lifeline("127.0.0.1", int(sys.argv[1])).address())
print("ready", flush=True)
time.sleep(600)
"""


def test_a_rank_whose_process_died_is_named_gone_at_once() -> None:
    """Rank 2 (a process of its own) posted its lifeline, then was killed: its heartbeat stops
    and its port refuses, so the gate does not wait for the heartbeat limit (600 s here)."""
    stores = _stores(3, here=2)
    port = stores[0].env.master_port
    child = subprocess.Popen(
        [sys.executable, "-c", RANK_2, str(port)],
        env=gpudoc_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        child.kill()
        child.wait(stretch(30))
        said = _at_gate(stores, [True, True], stall_s=600, timeout_s=600)
        assert said == ["rank 2 did not arrive: its process is gone (its port refuses)"] * 2
    finally:
        child.kill()


LIFELINE = """
import json, time
from gpudoc.smoke.liveness import Lifeline
line = Lifeline("127.0.0.1", 29500)
print(json.dumps({**line.address(), "node": "1"}), flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals and /proc")
def test_a_frozen_process_answers_on_its_lifeline_a_dead_one_refuses() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", LIFELINE], env=gpudoc_env(), stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        lifeline = json.loads(child.stdout.readline())
        info = {"host": socket.gethostname(), "pid": child.pid}
        assert probe(lifeline) == "alive"
        os.kill(child.pid, signal.SIGSTOP)
        deadline = time.monotonic() + stretch(30)  # a signal is delivered soon, not at once
        while not stopped_here(info) and time.monotonic() < deadline:
            time.sleep(0.05)
        # On its own node, /proc says how it is frozen; from another node, its port says it.
        assert alive_though_silent(info, lifeline, node="1") == "its process is stopped (SIGSTOP?)"
        assert alive_though_silent(info, lifeline, node="0") == (
            "its process is frozen (alive: its port on 127.0.0.1 still answers)"
        )
        assert [probe(lifeline) for _ in range(3)] == ["alive"] * 3
        child.kill()
        child.wait(stretch(30))
        assert probe(lifeline) == "gone"
        assert alive_though_silent(info, lifeline, node="0") is None
        assert probe(None) == "silent"
    finally:
        child.kill()
