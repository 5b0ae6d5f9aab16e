"""The slow end-to-end runs of one test module, started together in the background.

Much of a smoke run's wall time is spent waiting: for a watchdog's timeout, for a frozen rank's
heartbeat to stand still, for torch to import on the other core. So a module's runs start
together (at most ``PARALLEL`` at a time, in the order pytest will ask for them) and each test
waits for its own. Only the runs of the tests pytest selected are started (``-k`` stays cheap).
Each run is the same real subprocess, with the same generous deadline, that its test used to
start itself, and the test asserts exactly the same: sharing the machine's time, not a result.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from conftest import gpudoc_env

PARALLEL = 3  # two cores kept busy, and a slot for a run that mostly waits


@dataclass(frozen=True)
class Run:
    """``python ARGS`` (the test interpreter) with gpudoc_env plus ``env``; one process per
    entry of ``tasks`` (their own variables on top), started together, as srun starts tasks."""

    args: tuple[str, ...]
    timeout: float
    env: Mapping[str, str] = field(default_factory=dict)
    tasks: tuple[Mapping[str, str], ...] = ({},)
    waits: bool = False  # mostly waits (for a timeout): started before the others
    # Has a deadline that load cannot stretch (torchrun's 30 s between SIGTERM and SIGKILL):
    # runs by itself, before the others start.
    alone: bool = False


@dataclass(frozen=True)
class Done:
    """The first task's exit status and output; every task's in ``tasks``."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float  # from this run's own start, not from when its test asked
    tasks: tuple[tuple[int, str, str], ...] = ()


def _run(run: Run) -> Done:
    started = time.monotonic()
    processes = [
        subprocess.Popen(
            [sys.executable, *run.args],
            env=gpudoc_env(**run.env, **task),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for task in run.tasks
    ]
    ended = []
    try:
        for process in processes:
            left = max(1.0, run.timeout - (time.monotonic() - started))
            out, err = process.communicate(timeout=left)
            ended.append((process.returncode, out, err))
    finally:
        for process in processes:
            process.kill()
            process.wait()
    return Done(*ended[0], time.monotonic() - started, tuple(ended))


Scene = Callable[[], Any]
"""A scenario that drives its own processes (signals sent at the right moment, say) and
returns what its test asserts on; it kills what it started before it returns."""


class Runs:
    def __init__(self, futures: dict[str, Future[Any]]) -> None:
        self.futures = futures

    def __getitem__(self, name: str) -> Any:
        """The run (a ``Done``) or scene result of the test ``name``, once it has ended (its
        timeout, or the scene's failed assertion, raises here)."""
        done = self.futures[name].result()
        if isinstance(done, Done):
            print(f"\n{name}: exit {done.returncode} in {done.seconds:.1f} s")
        return done


@contextmanager
def started(
    request: pytest.FixtureRequest, runs: Callable[[], dict[str, Run | Scene]]
) -> Iterator[Runs]:
    """For a module-scoped fixture: ``runs()`` maps a test's name (``test_x[param]`` for a
    parametrized one: ``request.node.name``) to its run; those of the module's selected tests
    start now, in the order they will be asked for."""
    wanted = [
        item.name  # test_x, or test_x[param] for each of a parametrized test's cases
        for item in request.session.items
        if isinstance(item, pytest.Function) and item.module is request.module
    ]
    table = runs()
    with _pool() as submit:
        yield Runs(submit({name: table[name] for name in wanted if name in table}))


def together(runs: dict[str, Run]) -> dict[str, Done]:
    """Runs that do not depend on each other, side by side; every one's result."""
    with _pool() as submit:
        return {name: future.result() for name, future in submit(runs).items()}


Submit = Callable[[dict[str, Any]], dict[str, "Future[Any]"]]


@contextmanager
def _pool() -> Iterator[Submit]:
    """``GPUDOC_TEST_PARALLEL=1`` runs them one by one (to time one alone, say)."""
    pool = ThreadPoolExecutor(max_workers=int(os.environ.get("GPUDOC_TEST_PARALLEL", PARALLEL)))
    futures: dict[str, Future[Any]] = {}

    def submit(runs: dict[str, Run | Scene]) -> dict[str, Future[Any]]:
        # Runs that mostly wait first (stable: the rest in order); a scene is its own function.
        order = sorted(runs, key=lambda name: not getattr(runs[name], "waits", False))
        order.sort(key=lambda name: not getattr(runs[name], "alone", False))
        for name in order:
            run = runs[name]
            futures[name] = pool.submit(_run, run) if isinstance(run, Run) else pool.submit(run)
            if getattr(run, "alone", False):
                futures[name].exception()  # waits for it to end (its test reports any error)
        return futures

    try:
        yield submit
    finally:
        for future in futures.values():
            future.cancel()
        pool.shutdown(wait=True)  # a run still going ends by its own timeout at the latest
