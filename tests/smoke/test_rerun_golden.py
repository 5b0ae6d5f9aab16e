"""The re-run judge (runs A, B and C), the odd run in the vote, and --golden files (pure)."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest
from test_report import H100, SCHEMA, gpu

from gpudoc.console import make_console
from gpudoc.exit_codes import UsageError
from gpudoc.jsondata import from_json
from gpudoc.smoke import checks, golden, render
from gpudoc.smoke.model import CheckResult, DeviceResult, SmokeConfig, SmokeReport
from gpudoc.smoke.run import overall, vote

A, B, C = "a" * 64, "b" * 64, "c" * 64


def test_the_judge_of_runs_a_b_and_the_rerun_c() -> None:
    assert checks.self_consistency([A]).verdict == "skip"  # --quick
    assert checks.self_consistency([A, A]).verdict == "pass"
    assert checks.self_consistency([A, B]).verdict == "fail"  # no re-run to judge by
    matches_b = checks.self_consistency([A, B, B])
    assert matches_b.verdict == "warn" and matches_b.detail is not None
    assert matches_b.detail.startswith("runs A and B differ; re-run C matches B: nondeterminism")
    assert "run A aaaaaaaaaaaa, runs B and C bbbbbbbbbbbb" in matches_b.detail
    matches_a = checks.self_consistency([A, B, A])
    assert matches_a.detail is not None and "re-run C matches A" in matches_a.detail
    three = checks.self_consistency([A, B, C])
    assert three.verdict == "fail" and three.detail is not None
    assert "A aaaaaaaaaaaa, B bbbbbbbbbbbb, C cccccccccccc" in three.detail


def test_the_fingerprint_a_device_stands_by() -> None:
    assert checks.reproducible([A]) == checks.reproducible([A, A]) == A
    assert checks.reproducible([A, B, B]) == B and checks.reproducible([B, A, B]) == B
    assert checks.reproducible([A, B, C]) == A  # no result repeated: run A's (it failed anyway)
    assert checks.odd_runs([A, B, B], B) == "A" and checks.odd_runs([A, B, C], A) == "BC"


def flipped(index: int) -> DeviceResult:
    """A device whose run A was corrupted once: B and C agree with the healthy peers' bits."""
    warn = checks.self_consistency([B, A, A])
    device = replace(gpu(index, "a"), run_fingerprints=(B, A, A))
    return replace(device, checks=(*device.checks, warn), status="WARN", reason="one-off")


def test_a_one_off_odd_run_fails_the_vote_of_identical_devices() -> None:
    """Two devices: voting with the odd run would leave both without a majority; voting with
    the repeated result keeps the healthy one passing and shows the odd run was a fault."""
    healthy = replace(gpu(0, "a"), run_fingerprints=(A, A))
    results = vote([healthy, flipped(1)])
    assert [r.status for r in results] == ["PASS", "FAIL"]
    assert [r.agreement for r in results] == ["2/2", "run A differs"]
    assert results[1].reason == (
        "cross_device: SDC suspect: run A differs from the bits that runs B and C and its 1 "
        "identical peer agree on: a one-off fault on this device (+1 more: self_consistency)"
    )
    # Alone, nothing shows the stack repeats itself: deterministic settings promise equal runs.
    (alone,) = vote([flipped(0)])
    assert (alone.status, alone.agreement) == ("FAIL", "run A differs")
    assert alone.reason == (
        "cross_device: run A differs once and no identical device or golden run shows the stack "
        "repeats itself: deterministic settings promise equal runs, so it counts as a fault "
        "(+1 more: self_consistency)"
    )
    # A golden file without the same device is no evidence either.
    no_match = CheckResult("cross_device", "skip", None, None, "no golden device")
    (unmatched,) = vote([flipped(0)], lone=lambda member: (no_match, "alone"))
    assert unmatched.status == "FAIL"


def test_identical_devices_whose_runs_differ_alike_blame_the_stack() -> None:
    """Every device's run A unlike its B and C, with the same bits everywhere: a first run that
    differs on this stack (cuDNN choosing another algorithm, say), not an SDC on each GPU."""
    results = vote([flipped(0), flipped(1), flipped(2)])
    assert [r.status for r in results] == ["WARN"] * 3
    assert {r.agreement for r in results} == {"3 alike"}
    check = next(c for c in results[0].checks if c.id == "cross_device")
    assert (check.verdict, check.value) == ("warn", "A")
    assert check.detail is not None and "differs alike on all 3 identical devices" in check.detail
    # One of them different again: the alike rule no longer holds, the odd runs are faults.
    other = replace(flipped(2), run_fingerprints=(C, A, A))
    assert [r.status for r in vote([flipped(0), flipped(1), other])] == ["FAIL"] * 3


def golden_file(tmp_path: Path, *results: DeviceResult, **changes: object) -> str:
    report = SmokeReport(SmokeConfig(), tuple(results), "PASS", "0.1.0", 5.0, host="node7")
    data = report.to_dict() | {"started_utc": "2026-11-20T08:00:00Z"} | changes
    path = tmp_path / "golden.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_a_lone_device_against_a_golden_report(tmp_path: Path) -> None:
    known = golden.load(golden_file(tmp_path, gpu(0, "a")))
    assert known.ref.host == "node7" and known.ref.devices == 1
    judge = known.judge(SmokeConfig())
    check, agreement = judge(gpu(3, "a"))
    assert (check.verdict, agreement) == ("pass", "= golden")
    assert (
        check.detail == "bitwise equal to the golden run's cuda:0 (on node7, 2026-11-20T08:00:00Z)"
    )
    check, agreement = judge(gpu(3, "b"))
    assert (check.verdict, agreement) == ("fail", "≠ golden")
    assert check.detail is not None and check.detail.startswith("SDC suspect: differs from the")
    check, agreement = judge(flipped(3))
    assert (check.verdict, agreement) == ("fail", "run A ≠ golden")
    other_seed = known.judge(SmokeConfig(seed=1))
    check, agreement = other_seed(gpu(3, "a"))
    assert (check.verdict, check.detail) == ("skip", golden.NO_MATCH) and agreement == "alone"


def test_golden_only_judges_devices_without_a_peer_and_is_recorded(tmp_path: Path) -> None:
    known = golden.load(golden_file(tmp_path, gpu(0, "z")))  # would fail anyone it judged
    other = replace(gpu(2, "a"), info=replace(H100, name="NVIDIA A100-SXM4-80GB"))
    results = vote([gpu(0, "a"), gpu(1, "a"), other], known.judge(SmokeConfig()))
    assert [r.agreement for r in results] == ["2/2", "2/2", "alone"]  # no A100 in the golden
    report = SmokeReport(SmokeConfig(), tuple(results), overall(results), "0.1", 1.0)
    data = json.loads(render.to_json(replace(report, golden=known.ref)))
    jsonschema.validate(data, SCHEMA)
    assert data["golden"]["path"] == str(tmp_path / "golden.json")
    assert len(data["golden"]["sha256"]) == 64
    assert from_json(SmokeReport, data) == replace(report, golden=known.ref)


def test_a_failed_golden_device_is_no_reference(tmp_path: Path) -> None:
    path = golden_file(tmp_path, gpu(0, "a", status="FAIL"))
    with pytest.raises(UsageError, match="no device in it passed"):
        golden.load(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not JSON"),
        ("\xff", "not JSON"),
        ("[1]", "schema_version None, expected 1"),
        ('{"schema_version": 2, "results": []}', "schema_version 2, expected 1"),
        ('{"schema_version": 1}', "not a gpudoc smoke report"),
    ],
)
def test_unusable_golden_files_are_usage_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "golden.json"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(UsageError, match=message) as raised:
        golden.load(str(path))
    assert "\n" not in str(raised.value) and str(raised.value).startswith(f"--golden {path}: ")
    with pytest.raises(UsageError, match="cannot read it"):
        golden.load(str(tmp_path))  # a directory


def test_a_distributed_report_serves_as_golden_too(tmp_path: Path) -> None:
    """Its ranks' device smokes are results as in a plain report."""
    path = tmp_path / "job.json"
    ranks = [{"smoke": gpu(0, "a").to_dict()}, {"smoke": None}]
    path.write_text(
        json.dumps({"schema_version": 1, "config": SmokeConfig().to_dict(), "ranks": ranks})
    )
    check, agreement = golden.load(str(path)).judge(SmokeConfig())(gpu(5, "a"))
    assert (check.verdict, agreement) == ("pass", "= golden")


def test_the_table_shows_the_rerun() -> None:
    results = tuple(vote([replace(gpu(0, "a"), run_fingerprints=(A, A)), flipped(1)]))
    out = io.StringIO()
    report = SmokeReport(SmokeConfig(), results, overall(results), "0.1", 9.0)
    render.print_report(report, make_console(file=out, width=200, color=False))
    lines = out.getvalue().splitlines()
    assert "  aaaaaaaaaaaa 2/3  run A differs  " in lines[2]  # 2 of its 3 runs gave it
    assert "  aaaaaaaaaaaa      2/2  " in lines[1]  # no re-run: no count
    assert lines[3].startswith("  1 cuda:1 FAIL: cross_device: SDC suspect: run A differs")
    assert lines[-1].endswith("(default recipe, 300 steps × 2 runs + a re-run C on 1 device)")
