"""Opt-in pytest plugin: the CPU time each test module costs, its own and its children's.

    python -m pytest -p tests.cpu_usage             # the costliest modules, after the run
    python -m pytest -p tests.cpu_usage tests/smoke

On two shared cores a test's wall time says little (it waits for the other worker's load); CPU
time is the work the suite's cores must do, so it is what to cut. A child process is counted
once it has been waited for (``RUSAGE_CHILDREN``): a run in the background (background.py) counts
in whichever test of its module ran when it ended, so the figures are per module. Processes that
were killed and never waited for (a frozen torchrun job's ranks) are not counted.
"""

from __future__ import annotations

import resource
from collections import defaultdict
from typing import Any

import pytest

SHOWN = 25


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


class CpuUsage:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.modules: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Any:
        own, children = _cpu()
        yield
        own_after, children_after = _cpu()
        totals = self.modules[item.nodeid.split("::", 1)[0]]
        totals[0] += own_after - own
        totals[1] += children_after - children

    def pytest_sessionfinish(self) -> None:
        output = getattr(self.config, "workeroutput", None)
        if output is not None:  # an xdist worker: the controller adds the workers up
            output["cpu_usage"] = dict(self.modules)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any) -> None:
        for module, (own, children) in (
            getattr(node, "workeroutput", {}).get("cpu_usage", {}).items()
        ):
            self.modules[module][0] += own
            self.modules[module][1] += children

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if getattr(self.config, "workeroutput", None) is not None or not self.modules:
            return
        rows = sorted(self.modules.items(), key=lambda row: -sum(row[1]))
        write = terminalreporter.write_line
        terminalreporter.section("CPU seconds per module (own + waited children)")
        for module, (own, children) in rows[:SHOWN]:
            write(f"{own + children:8.1f} {own:8.1f} {children:8.1f}  {module}")
        own = sum(row[0] for row in self.modules.values())
        children = sum(row[1] for row in self.modules.values())
        write(f"{own + children:8.1f} {own:8.1f} {children:8.1f}  all {len(rows)} modules")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(CpuUsage(config), "cpu_usage_totals")
