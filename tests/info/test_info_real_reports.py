"""`gpudoc info --from` on real reports from public bug threads reaches the threads' verdicts.

Each case (tests/info/reports/cases/*.toml) holds the fact lines of a report posted in a public
issue thread, the thread's address and verdict, and the doctor checks that must fail or warn on it.
A case matches when every expected check fails or warns, no other check fails (a false alarm), no
check crashes, and the exit code is 0 or 1. A case with a `gap` is a strict xfail: the day the
doctor learns what the gap names, the test fails until the gap is removed from the case.

The cases are read by bench/info_reports.py, which also prints the match rate.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest
from conftest import REPO

from gpudoc.info.checks import all_checks

SCORER = REPO / "bench" / "info_reports.py"
THREAD = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+$")
# A case keeps the facts of a report, never the whole report: longer than this is a paste.
MAX_REPORT_LINES = 60


@cache
def scorer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("info_reports", SCORER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["info_reports"] = module
    spec.loader.exec_module(module)
    return module


CASES = {case.name: case for case in scorer().load_cases()}
FROM_MISSING = "gpudoc info has no --from on this branch yet (it comes with branch info-reports)"


def _param(name: str) -> object:
    gap = CASES[name].gap
    marks = [pytest.mark.xfail(strict=True, reason=f"known gap: {gap}")] if gap else []
    return pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", [_param(n) for n in CASES])
def test_report_reaches_the_threads_verdict(name: str, tmp_path: Path) -> None:
    if not scorer().from_supported():
        pytest.skip(FROM_MISSING)
    case = CASES[name]
    outcome = scorer().run_case(case, tmp_path)
    assert outcome.exit_code in (0, 1), f"exit {outcome.exit_code}: {outcome.stderr}"
    assert not outcome.crashed, f"checks crashed on a real report: {outcome.crashed}"
    missing = set(case.expect) - set(outcome.flagged)
    assert not missing, f"the doctor misses {sorted(missing)} (thread: {case.found})"
    alarms = set(outcome.failed) - set(case.expect)
    assert not alarms, f"false alarm: {sorted(alarms)} fail where the thread found: {case.found}"


def test_there_are_enough_cases_covering_the_issue() -> None:
    assert len(CASES) >= 40
    expected = {check for case in CASES.values() for check in case.expect}
    # The situations issue 16 names, each met by at least one real report.
    assert {"torch-cpu-build", "driver-too-old", "torchvision-mismatch", "xid-recent"} <= expected
    assert {"gpu-lost", "retired-remap", "exclusive-busy", "container-no-gpu"} <= expected
    assert sum(not case.expect for case in CASES.values()) >= 8, "healthy boxes keep alarms honest"


@pytest.mark.parametrize("name", list(CASES))
def test_case_is_well_formed(name: str) -> None:
    case = CASES[name]
    assert THREAD.match(case.source), f"{case.source} is not a public issue or pull request"
    assert case.found.strip() and case.covers.strip()
    known = {check.check_id for check in all_checks()}
    assert set(case.expect) <= known, f"unknown check ids {set(case.expect) - known}"
    assert len(case.expect) == len(set(case.expect))
    lines = case.report.strip("\n").splitlines()
    assert 0 < len(lines) <= MAX_REPORT_LINES, "a case keeps the fact lines, not the whole report"
    assert case.gap is None or case.expect, "a gap names a check that should fire"


def test_outcome_matching_rules() -> None:
    """The matching rule itself: warnings beside the verdict are fine, a failure is not."""
    q = scorer()
    case = q.Case("c", "https://github.com/o/r/issues/1", "x", "found", ("driver-too-old",), "r")
    assert q.Outcome(1, ("bad-cuda-env", "driver-too-old"), ("driver-too-old",), (), "").matches(
        case
    )
    assert not q.Outcome(1, ("driver-too-old", "gpu-lost"), ("gpu-lost",), (), "").matches(case)
    assert not q.Outcome(0, (), (), (), "").matches(case)
    assert not q.Outcome(2, ("driver-too-old",), (), (), "unknown format").matches(case)
    assert not q.Outcome(1, ("driver-too-old",), (), ("xid-recent",), "").matches(case)
    healthy = q.Case("h", "https://github.com/o/r/issues/2", "x", "found", (), "r")
    assert q.Outcome(0, ("persistence-off",), (), (), "").matches(healthy)
    assert not q.Outcome(1, ("gpu-lost",), ("gpu-lost",), (), "").matches(healthy)
