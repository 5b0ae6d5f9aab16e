"""Shared test helpers: run the real CLI in a subprocess, as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

# Every run tests the same generated examples, so CI never fails at random on a case nobody saw
# before; a case that fails is kept as a regression test. `pytest --hypothesis-profile=explore`
# searches new examples (run it when changing the lint analysis or the fixes).
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", max_examples=1000)
settings.load_profile("repeatable")

REPO = Path(__file__).resolve().parent.parent


def slowdown() -> float:
    """How many times slower than on an idle machine work runs now, measured: the load average
    per core, at least 1. A shared 2-core machine at load 14 runs a smoke test ~7x slower."""
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


def stretch(seconds: float) -> float:
    """A deadline for what takes well under ``seconds`` on an idle machine, stretched by the load
    now and doubled: deadlines here catch hangs, they never time a test (CONTRIBUTING.md)."""
    return 2 * seconds * slowdown()


def gpudoc_env(**extra: str) -> dict[str, str]:
    """The environment for a `python -m gpudoc` child: this checkout first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.setdefault("NO_COLOR", "1")
    env.update(extra)
    return env


RunGpudoc = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def run_gpudoc() -> RunGpudoc:
    """``run_gpudoc("lint", "x.py", cwd=..., input=..., env={...}, timeout=...)``."""

    def run(
        *args: str,
        cwd: str | Path | None = None,
        input: str | None = None,
        env: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "gpudoc", *args],
            cwd=cwd,
            input=input,
            env=gpudoc_env(**(env or {})),
            capture_output=True,
            text=True,
            timeout=stretch(300) if timeout is None else timeout,
        )

    return run


def _gpu_available() -> bool:
    try:
        import torch
    except Exception:
        return False
    return bool(torch.cuda.is_available())


SIDE_BY_SIDE = "side-by-side"
side_by_side = pytest.mark.xdist_group(SIDE_BY_SIDE)
"""For a module whose tests start several processes at once (background.py, torchrun jobs,
several smoke workers): under pytest-xdist, one worker runs all such modules, one after the
other, so their hang guards never see two of them side by side (see ``_schedule``)."""


def _schedule(items: list[pytest.Item]) -> None:
    """pytest-xdist runs the suite in one process per core (pyproject.toml's addopts). A module's tests stay together in one worker, so a module-scoped fixture (a run that serves
    several tests) runs once; the side-by-side modules form one group and start first: their own
    runs keep the cores busy while the other worker goes through the in-process tests."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the same order in every worker
        items.sort(key=lambda item: _group(item) != SIDE_BY_SIDE)


def _group(item: pytest.Item) -> str:
    mark = item.get_closest_marker("xdist_group")
    return str(mark.args[0]) if mark is not None and mark.args else ""


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _schedule(items)
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    if _gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a real NVIDIA GPU (torch.cuda.is_available() is False)")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)
