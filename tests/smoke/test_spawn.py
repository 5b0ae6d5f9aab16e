"""Worker processes belong to their parent: a launcher's SIGTERM to the parent's process group
leaves a worker in its own session alone, and a worker never outlives its parent."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import gpudoc_env, stretch

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead, only not reaped yet


PARENT = """
import os, subprocess, sys
from gpudoc.smoke.spawn import PARENT_ENV
env = dict(os.environ, **{PARENT_ENV: str(os.getpid())})
child = subprocess.Popen(
    [sys.executable, "-c", "from gpudoc.smoke.spawn import end_with_parent; "
     "end_with_parent(); import time; print('ready', flush=True); time.sleep(120)"],
    env=env, stdout=subprocess.PIPE, text=True, start_new_session=True,
)
assert child.stdout.readline() == "ready\\n"
print(child.pid, flush=True)
os.kill(os.getpid(), 9)  # as the OOM killer would
"""


def test_a_worker_dies_with_a_parent_that_was_sigkilled() -> None:
    parent = subprocess.run(
        [sys.executable, "-c", PARENT],
        env=gpudoc_env(),
        capture_output=True,
        text=True,
        timeout=stretch(60),
    )
    assert parent.returncode == -signal.SIGKILL, parent.stderr
    worker = int(parent.stdout.split()[0])
    deadline = time.monotonic() + stretch(5)
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(worker), "the worker outlived its SIGKILLed parent"


RANK = """
import os, signal, sys, threading
from gpudoc.smoke.model import SmokeConfig
from gpudoc.smoke.spawn import WorkerSpec, run_workers
signal.signal(signal.SIGTERM, lambda *_: print("rank got SIGTERM", flush=True))
config = SmokeConfig(quick=True, throughput_seconds=0.15)
spec = WorkerSpec(0, "cpu", "cpu", {"OMP_NUM_THREADS": "1"}, own_session=sys.argv[1] == "own")
stopped = []
def on_event(index, event):
    if event.get("event") == "progress" and not stopped:  # training: the launcher stops the job
        stopped.append(threading.Thread(target=os.killpg, args=(0, signal.SIGTERM)))
        stopped[0].start()
result = run_workers(config, [spec], 120, on_event)[0]
print(result.status, result.reason, flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize(("session", "expected"), [("own", "PASS"), ("shared", "FAIL")])
def test_a_launchers_sigterm_to_the_group_spares_a_worker_in_its_own_session(
    session: str, expected: str
) -> None:
    """What torchrun does when another rank dies: killpg(SIGTERM) on this rank's group."""
    rank = subprocess.run(
        [sys.executable, "-c", RANK, session],
        env=gpudoc_env(),
        capture_output=True,
        text=True,
        timeout=stretch(180),
        start_new_session=True,  # its own group, so the SIGTERM stays away from pytest
    )
    lines = rank.stdout.splitlines()
    assert "rank got SIGTERM" in lines, rank.stdout + rank.stderr
    assert lines[-1].split()[0] == expected, rank.stdout + rank.stderr
    if expected == "FAIL":
        assert "killed by SIGTERM" in lines[-1]


EXIT_NOW = """
import atexit, sys
from gpudoc.smoke.spawn import exit_now
atexit.register(lambda: print("teardown ran", flush=True))
sys.stdout.write("result, still in the buffer")
sys.stderr.write("and a last word")
exit_now(3)
"""


def test_exit_now_flushes_the_output_and_skips_the_teardown() -> None:
    """How a worker and a rank end once their result is out: all they wrote arrives, with their
    exit status, and nothing of the interpreter's teardown (atexit, then torch's) runs."""
    done = subprocess.run(
        [sys.executable, "-c", EXIT_NOW],
        env=gpudoc_env(),
        capture_output=True,
        text=True,
        timeout=stretch(60),
    )
    assert (done.returncode, done.stdout, done.stderr) == (
        3,
        "result, still in the buffer",
        "and a last word",
    )
