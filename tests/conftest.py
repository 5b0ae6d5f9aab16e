"""Shared test helpers: run the real CLI in a subprocess, as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

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


def emulate_batch(
    lines: Sequence[Sequence[str]], cwd: str | Path, **env: str
) -> list[tuple[int, str, str]]:
    """``gpudoc run --emulate-cuda LINE`` for each command line, all in one interpreter
    (tests/emulate/batch_runner.py: one torch import, not one per run): (exit status, stdout,
    stderr) of each. The runs share ``cwd`` and the environment."""
    done = subprocess.run(
        [sys.executable, str(REPO / "tests" / "emulate" / "batch_runner.py")],
        input=json.dumps([list(line) for line in lines]),
        cwd=cwd,
        env=gpudoc_env(**env),
        capture_output=True,
        text=True,
        timeout=stretch(600),
    )
    assert done.returncode == 0, done.stderr
    return [(run["code"], run["out"], run["err"]) for run in json.loads(done.stdout)]


def _gpu_available() -> bool:
    try:
        import torch
    except Exception:
        return False
    return bool(torch.cuda.is_available())


SIDE_BY_SIDE = (
    "tests/emulate/test_gpudoc_paths.py",
    "tests/smoke/test_cli_golden.py",
    "tests/smoke/test_cli_runs.py",
    "tests/smoke/test_distributed_failures.py",
    "tests/smoke/test_distributed_runs.py",
)
"""The modules whose tests start several processes at once (background.py, torchrun jobs, several
smoke workers). pytest-xdist (pyproject.toml's addopts: one worker per core) gives them all to one
worker, one module after the other, so their hang guards never see two of them side by side."""


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """A module's tests stay in one worker, so a module-scoped fixture (a run that serves several
    tests) runs once; the side-by-side modules are one unit of work, handed out first (workers
    order them first, below): their own runs keep the cores busy while the other worker goes
    through the in-process tests, and it takes the rest of the modules as it frees up."""
    # Not `--dist loadgroup` with an xdist_group per module: with pytest 9.2 and xdist 3.8 the
    # group suffix xdist writes to `item._nodeid` never reaches `item.nodeid`, so the groups are
    # ignored (tried 2026-11-26; pytest-xdist issue 1386, its fix pending in pull request 1388).
    # Once a release has it, that public mechanism replaces this class. Until then
    # `_split_scope` is the extension point xdist's own loadfile and loadgroup use.
    if config.getvalue("dist") != "load":  # another --dist was asked for
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = _module(nodeid)
            return "side-by-side" if module in SIDE_BY_SIDE else module

    return ByModule(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the same order in every worker
        items.sort(key=lambda item: _module(item.nodeid) not in SIDE_BY_SIDE)
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    if _gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a real NVIDIA GPU (torch.cuda.is_available() is False)")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)
