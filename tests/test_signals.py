"""Ctrl-C exits 130 and SIGTERM 143, for every subcommand, with one line and nothing left running.

Real signals to a real ``python -m gpudoc`` child, sent once it is inside the command (blocked on
its input, running the script, training, probing torch). Waits are generous: a loaded 2-core
machine must pass too; nothing here measures time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import gpudoc_env

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]
PATIENCE_S = 180.0
EXPECTED = {
    signal.SIGINT: (130, "gpudoc: interrupted"),
    signal.SIGTERM: (143, "gpudoc: terminated"),
}


def start(*args: str, cwd: Path | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "gpudoc", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=gpudoc_env(),
        cwd=cwd,
        preexec_fn=_default_interrupt,
    )


def _default_interrupt() -> None:
    """A shell starts background jobs with Ctrl-C ignored, and children inherit that: the
    suite run as `pytest &` would see gpudoc ignore SIGINT, as it should there. Give the child
    the handler a terminal's foreground job has."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_until(ready: Callable[[], bool], process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not ready():
        assert process.poll() is None, f"ended early: {process.communicate()}"
        assert time.monotonic() < deadline, "never got ready"
        time.sleep(0.05)


def children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def reading_stdin(pid: int) -> bool:
    try:
        return "pipe" in Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False


def finish(
    process: subprocess.Popen[str], signum: signal.Signals, own_line: bool = True
) -> tuple[str, str]:
    process.send_signal(signum)
    out, err = process.communicate(timeout=PATIENCE_S)
    code, line = EXPECTED[signum]
    assert process.returncode == code, err
    if own_line:
        assert err.strip().splitlines()[-1] == line, err
    return out, err


SIGNALS = pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["int", "term"])


@SIGNALS
def test_lint_reading_its_input(signum: signal.Signals) -> None:
    process = start("lint", "-")
    wait_until(lambda: reading_stdin(process.pid), process)
    _, err = finish(process, signum)
    assert "Traceback" not in err


@SIGNALS
def test_run_emulate_cuda_in_the_script(tmp_path: Path, signum: signal.Signals) -> None:
    script = tmp_path / "wait.py"
    script.write_text("import time\nprint('ready', flush=True)\ntime.sleep(600)\n")
    process = start("run", "--emulate-cuda", str(script))
    assert process.stdout is not None
    assert process.stdout.readline() == "ready\n"
    # Ctrl-C stops the script as python would (its traceback, then gpudoc's report); SIGTERM
    # stops gpudoc itself.
    _, err = finish(process, signum, own_line=signum == signal.SIGTERM)
    if signum == signal.SIGINT:
        assert f'File "{script}", line ' in err and "KeyboardInterrupt" in err
        assert "gpudoc/emulate" not in err


def test_a_script_raising_keyboardinterrupt_keeps_its_traceback(tmp_path: Path) -> None:
    script = tmp_path / "stop.py"
    script.write_text("def stop():\n    raise KeyboardInterrupt('by hand')\n\nstop()\n")
    process = start("run", "--emulate-cuda", str(script))
    _, err = process.communicate(timeout=PATIENCE_S)
    assert process.returncode == 130
    assert f'File "{script}", line 4' in err and f'File "{script}", line 2, in stop' in err
    assert "KeyboardInterrupt: by hand" in err and "gpudoc/" not in err


@SIGNALS
def test_smoke_training_leaves_no_worker(signum: signal.Signals) -> None:
    process = start("smoke", "--device", "cpu")
    wait_until(lambda: bool(children(process.pid)), process)
    workers = children(process.pid)
    finish(process, signum)
    deadline = time.monotonic() + PATIENCE_S
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in workers)


@SIGNALS
def test_info_while_probing_torch(signum: signal.Signals) -> None:
    process = start("info")
    wait_until(lambda: bool(children(process.pid)), process)
    probes = children(process.pid)
    finish(process, signum)
    deadline = time.monotonic() + PATIENCE_S
    while any(alive(pid) for pid in probes) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in probes)


def test_a_smoke_worker_ends_itself_before_loading_torch_when_its_parent_is_gone() -> None:
    """A parent SIGKILLed while its worker starts: the worker's first act (before torch, which
    takes seconds to load) sees the parent gone and exits; -X importtime shows no torch."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "gpudoc.smoke.worker_main"],
        env=gpudoc_env(GPUDOC_SMOKE_PARENT=str(os.getppid())),  # not its parent: ours
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
    )
    assert done.returncode == 1
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()]
    assert "gpudoc.smoke.spawn" in imported and "torch" not in imported


def test_smoke_workers_never_outlive_a_parent_killed_during_their_start_up() -> None:
    process = start("smoke", "--device", "cpu", "--device", "cpu")
    wait_until(lambda: len(children(process.pid)) == 2, process)
    workers = children(process.pid)
    process.kill()
    process.communicate(timeout=PATIENCE_S)
    deadline = time.monotonic() + PATIENCE_S
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in workers)
