"""A torchrun job that loses a part of itself: a frozen rank (on this node or another), rank 0,
torchrun itself.

Real torchrun, two CPU ranks, --quick; signals sent once the ranks run their device smokes.
The module's jobs run side by side in the background (background.py), each driven by its own
scene; waits are generous (a loaded 2-core machine), never measured. A frozen rank is found by its
heartbeat standing still for --heartbeat-timeout, not by the job's --timeout running out.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from background import Runs, Scene, started
from conftest import gpudoc_env, stretch
from test_distributed_runs import SMOKE, TORCHRUN, free_port

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc"),
]
PATIENCE_S = 400.0
# The only rank whose heartbeat anyone watches in these tests is the frozen one: a low limit
# cannot misjudge a live rank slowed down by load, and keeps each test short.
STALL = ("--heartbeat-timeout", "5")
DEVICE_TIMEOUT_S = round(stretch(200))  # a hang guard for device smokes of jobs side by side


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _ranks(torchrun: int) -> dict[int, int]:
    """rank -> pid of the gpudoc processes torchrun started."""
    ranks = {}
    for pid in _children(torchrun):
        with contextlib.suppress(OSError):
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            # a child seen between fork and exec has no RANK yet: the caller asks again
            rank = next((v[5:] for v in environ if v.startswith(b"RANK=")), None)
            if rank is not None:
                ranks[int(rank)] = pid
    return ranks


def _until(ready: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not ready():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.2)


class Job:
    """torchrun in a session of its own; every process it led to is killed at the end."""

    def __init__(
        self, *args: str, inject: str = "", torchrun: tuple[str, ...] = (), ranks: int = 2
    ) -> None:
        self.ranks = ranks
        self.process = subprocess.Popen(
            [*(torchrun or TORCHRUN), *SMOKE, "--timeout", str(DEVICE_TIMEOUT_S), *args],
            env=gpudoc_env(GPUDOC_SMOKE_INJECT=inject),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.seen: set[int] = set()

    def smoking(self) -> dict[int, int]:
        """Once its ranks run their device smoke (each has its worker child): rank -> pid."""
        ranks: dict[int, int] = {}

        def ready() -> bool:
            assert self.process.poll() is None, self.process.communicate()
            ranks.update(_ranks(self.process.pid))
            workers = [w for pid in ranks.values() for w in _children(pid)]
            self.seen |= {*ranks.values(), *workers}
            return len(ranks) == self.ranks and len(workers) >= self.ranks

        _until(ready, "the ranks in their device smoke")
        return ranks

    def end(self) -> tuple[str, str]:
        out, err = self.process.communicate(timeout=PATIENCE_S)
        _until(lambda: not any(_alive(pid) for pid in self.seen), "every process gone")
        return out, err

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        for pid in self.seen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.communicate(timeout=60)


def _report(path: Path) -> dict[str, Any]:
    """Rank 0's --json report, once written (the job itself may go on: a frozen rank stays)."""
    report: dict[str, Any] = {}

    def written() -> bool:
        with contextlib.suppress(OSError, ValueError):
            report.update(json.loads(path.read_text()))
        return bool(report)

    _until(written, "rank 0's report")
    return report


def _stopped(out: Path) -> dict[str, Any]:
    """Rank 1 of two SIGSTOPped in its device smoke: rank 0's report."""
    job = Job(*STALL, "--json", str(out))
    try:
        ranks = job.smoking()
        os.kill(ranks[1], signal.SIGSTOP)
        return _report(out)
    finally:
        job.close()


def _frozen_elsewhere(out: Path) -> dict[str, Any]:
    """Two "nodes": two torchrun agents on this host (--nnodes 2, --node-rank 0 and 1, static
    rendezvous), one rank each; node 1's rank SIGSTOPped in its device smoke: rank 0's report."""
    rendezvous = ["--nnodes", "2", "--nproc-per-node", "1", "--master-addr", "127.0.0.1"]
    rendezvous += ["--master-port", str(free_port())]
    launch = (*TORCHRUN[:3], *rendezvous)
    node_0 = Job(*STALL, "--json", str(out), torchrun=(*launch, "--node-rank", "0"), ranks=1)
    node_1 = Job(*STALL, torchrun=(*launch, "--node-rank", "1"), ranks=1)
    try:
        assert set(node_0.smoking()) == {0}
        (frozen,) = node_1.smoking().values()
        os.kill(frozen, signal.SIGSTOP)
        return _report(out)
    finally:
        node_1.close()
        node_0.close()


def _torchrun_killed() -> str:
    """torchrun SIGKILLed while its two ranks run their device smokes: their stderr, once every
    process it led to is gone."""
    job = Job()
    try:
        job.smoking()
        os.kill(job.process.pid, signal.SIGKILL)
        return job.end()[1]
    finally:
        job.close()


def _rank_0_lost() -> tuple[int | None, str]:
    job = Job(inject="crash:rank=0@collectives")
    try:
        _, err = job.end()
        return job.process.returncode, err
    finally:
        job.close()


@pytest.fixture(scope="module")
def scenes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Runs]:
    """Every test's job, side by side in the background; each test asserts on its own."""
    out = tmp_path_factory.mktemp("reports")
    table: dict[str, Scene] = {
        "test_a_stopped_rank_is_hung_with_its_last_heartbeat": lambda: _stopped(out / "a.json"),
        "test_a_rank_frozen_on_another_node_is_hung_not_dead": lambda: _frozen_elsewhere(
            out / "b.json"
        ),
        "test_torchrun_killed_each_rank_says_so_and_nothing_is_left": _torchrun_killed,
        "test_rank_0_lost_the_other_rank_names_it_with_its_own_result": _rank_0_lost,
    }
    with started(request, lambda: dict(table)) as background:
        yield background


def test_a_stopped_rank_is_hung_with_its_last_heartbeat(scenes: Runs) -> None:
    report = scenes["test_a_stopped_rank_is_hung_with_its_last_heartbeat"]
    row = next(r for r in report["ranks"] if r["info"]["rank"] == 1)
    assert row["status"] == "HUNG", row
    assert "its process is stopped (SIGSTOP?), no heartbeat for " in row["reason"]
    assert "died" not in row["reason"]
    assert "rank 1 did not arrive: no heartbeat for 5 s" in " ".join(report["notes"])


def test_a_rank_frozen_on_another_node_is_hung_not_dead(scenes: Runs) -> None:
    """Node 1's rank is frozen; rank 0 sees no heartbeat, and its lifeline port, which the
    kernel still answers, tells it the process is alive: HUNG, not died. /proc is not asked
    about another node's rank: the reason says how it was known."""
    report = scenes["test_a_rank_frozen_on_another_node_is_hung_not_dead"]
    row = next(r for r in report["ranks"] if r["info"]["rank"] == 1)
    assert row["status"] == "HUNG", row
    assert "its process is frozen (alive: its port on 127.0.0.1 still answers)" in row["reason"]
    assert "died" not in row["reason"] and "SIGSTOP" not in row["reason"]
    assert report["overall"] == "HUNG"


def test_torchrun_killed_each_rank_says_so_and_nothing_is_left(scenes: Runs) -> None:
    err = scenes["test_torchrun_killed_each_rank_says_so_and_nothing_is_left"]
    for rank in (0, 1):
        assert f"gpudoc: rank {rank}: lost the job store at " in err, err
    assert "the launcher is gone; this rank's device smoke " in err
    assert "Traceback" not in err


def test_rank_0_lost_the_other_rank_names_it_with_its_own_result(scenes: Runs) -> None:
    code, err = scenes["test_rank_0_lost_the_other_rank_names_it_with_its_own_result"]
    assert code != 0
    line = next(x for x in err.splitlines() if x.startswith("gpudoc: rank 1: rank 0 is lost"))
    assert "(its heartbeat stopped" in line and "no job report" in line, line
    assert "this rank's device smoke " in line
    assert "Traceback" not in err.split("gpudoc: rank 1:")[0][-2000:]
