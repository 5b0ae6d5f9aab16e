"""Worker processes: start one per device, read its events, and kill it when its time is up.

Stdlib only: the parent never imports torch, so it can never touch CUDA. Each worker is a fresh
interpreter (``python -m gpudoc.smoke.worker_main``): the equivalent of the ``spawn`` start method,
with its own environment set before torch loads (CUDA_VISIBLE_DEVICES, thread count).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NoReturn

import gpudoc
from gpudoc.jsondata import DecodeError, from_json
from gpudoc.smoke.model import CheckResult, DeviceResult, SmokeConfig, Status

Event = dict[str, Any]
PARENT_ENV = "GPUDOC_SMOKE_PARENT"
OnEvent = Callable[[int, Event], None]
"""``on_event(worker_index, event)``: start and done from here; progress, inject and result
events as the worker sent them."""


@dataclass(frozen=True)
class WorkerSpec:
    """One worker: its index, the device label users see, and the device torch uses in it."""

    index: int
    device: str
    torch_device: str
    env: dict[str, str] = field(default_factory=dict)
    # In its own session: a launcher's signal to the caller's process group (torchrun stops a
    # job with killpg) leaves the worker to its caller, which decides when it ends.
    own_session: bool = False


class Worker:
    """A running worker process and what it has said so far."""

    def __init__(self, spec: WorkerSpec, config: SmokeConfig, on_event: OnEvent) -> None:
        self.spec = spec
        self.on_event = on_event
        self.result: DeviceResult | None = None
        self.last_progress: Event | None = None
        self.injected: str | None = None
        self.protocol_error: str | None = None
        self.started = time.monotonic()
        on_event(spec.index, {"event": "start", "device": spec.device})
        self.stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in _finish)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gpudoc.smoke.worker_main"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=_child_env(spec),
            start_new_session=spec.own_session,
        )
        request = {"config": config.to_dict(), "device": spec.device, "index": spec.index}
        request["torch_device"] = spec.torch_device
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(json.dumps(request).encode())
            self.process.stdin.close()
        except BrokenPipeError:
            pass  # it died at once; wait() reports how
        self.reader = threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True)
        self.reader.start()

    def _read(self, stream: IO[bytes]) -> None:
        for line in stream:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a library wrote to stdout; not ours
            if not isinstance(event, dict):
                continue
            event.setdefault("device", self.spec.device)
            kind = event.get("event")
            if kind == "result":
                try:
                    self.result = from_json(DeviceResult, event.get("result"))
                except DecodeError as error:  # a worker of another gpudoc version
                    self.protocol_error = f"unreadable result ({error})"
            elif kind == "progress":
                self.last_progress = event
            elif kind == "inject":
                self.injected = str(event.get("fault"))
            self.on_event(self.spec.index, event)

    def wait(self, deadline: float) -> DeviceResult:
        """Block until the worker exits or ``deadline`` (monotonic) passes; never raises."""
        try:
            self.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return self._failed(
                "HUNG", f"no result within {deadline - self.started:.0f} s; {self.kill()}"
            )
        self.reader.join(timeout=5)
        if self.result is not None:
            return self.result
        if self.protocol_error:
            return self._failed("FAIL", self.protocol_error)
        code = self.process.returncode
        how = f"killed by {_signal_name(-code)}" if code < 0 else f"exit status {code}"
        detail = _last_line(self.stderr)
        return self._failed("FAIL", f"worker crashed ({how})" + (f": {detail}" if detail else ""))

    def kill(self) -> str:
        """SIGKILL; a process stuck in a driver call can outlive even that, so do not wait long."""
        self.process.kill()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return "could not be killed"
        self.reader.join(timeout=5)
        return "killed"

    def _failed(self, status: Status, what: str) -> DeviceResult:
        progress = self.last_progress
        if progress is not None:
            what += f" during {progress['phase']} {progress['done']}/{progress['total']}"
        if self.injected:
            what += f" [injected fault: {self.injected}]"
        check = CheckResult("completed", "fail", False, True, what)
        seconds = round(time.monotonic() - self.started, 3)
        return DeviceResult(
            self.spec.index,
            self.spec.device,
            status,
            what,
            checks=(check,),
            seconds=seconds,
            injected_fault=self.injected,
        )


def _child_env(spec: WorkerSpec) -> dict[str, str]:
    env = dict(os.environ)
    package_root = str(Path(gpudoc.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    env["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"  # deterministic cuBLAS on older torch
    env[PARENT_ENV] = str(os.getpid())  # the worker ends itself when this process is gone
    env.update(spec.env)
    return env


def end_with_parent(environ: Mapping[str, str] | None = None) -> None:
    """In a worker, first thing: die with the process that started it (Linux's
    PR_SET_PDEATHSIG). A worker whose parent was SIGKILLed (the OOM killer, a launcher's last
    resort) would otherwise go on holding its GPU, or, hung, never end."""
    expected = (os.environ if environ is None else environ).get(PARENT_ENV, "")
    if not expected.isdigit() or not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1  # <linux/prctl.h>
    ctypes.CDLL(None).prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != int(expected):  # the parent was gone before the line above
        os._exit(1)


def exit_now(code: int) -> NoReturn:
    """End this process with ``code`` once its output is flushed, skipping the interpreter's
    teardown: after torch (and torch._dynamo) loaded, that teardown costs 0.5-1 CPU-s and
    delays the exit the caller waits for, for nothing once the process has said its result.
    Only for a process of its own (a worker, a rank): no atexit handler runs after this."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more to say
            stream.flush()
    os._exit(code)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _last_line(stream: IO[bytes]) -> str | None:
    stream.seek(0)
    lines = [line.strip() for line in stream.read().decode(errors="replace").splitlines()]
    lines = [line for line in lines if line]
    return lines[-1][:200] if lines else None


def run_workers(
    config: SmokeConfig,
    specs: list[WorkerSpec],
    timeout_s: float,
    on_event: OnEvent,
    serial: bool = False,
) -> list[DeviceResult]:
    """Every worker at once (or one after another with ``serial``), each with its own deadline."""
    workers: list[Worker] = []
    try:
        if serial:
            results = []
            for spec in specs:
                workers.append(Worker(spec, config, on_event))
                results.append(_finish(workers[-1], timeout_s, on_event))
            return results
        workers = [Worker(spec, config, on_event) for spec in specs]
        return [_finish(w, timeout_s, on_event) for w in workers]
    finally:  # interrupted (Ctrl-C): leave no worker behind
        for worker in workers:
            if worker.process.poll() is None:
                worker.kill()


def _finish(worker: Worker, timeout_s: float, on_event: OnEvent) -> DeviceResult:
    result = worker.wait(worker.started + timeout_s)
    worker.stderr.close()
    on_event(worker.spec.index, {"event": "done", "status": result.status, "device": result.device})
    return result
