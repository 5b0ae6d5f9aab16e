"""Checks whose precondition is absent are 'not applicable' with a reason, never passed; checks
that can look do, per named machine scenario."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from info_scenarios import NAMES, collect_scenario

from gpudoc.console import make_console
from gpudoc.info.checks import all_checks
from gpudoc.info.model import InfoReport
from gpudoc.info.render import render_human

GPU_CHECKS = ("gpu-lost", "exclusive-busy", "compute-prohibited", "arch-unsupported")


def _status(report: InfoReport) -> dict[str, tuple[str, str | None]]:
    return {r.check_id: (r.status, r.reason) for r in report.checks}


@pytest.mark.parametrize("name", NAMES)
def test_a_precondition_never_hides_a_finding(name: str, tmp_path: Path) -> None:
    """Run anyway, a check reported not applicable finds nothing: n/a hides no problem."""
    report = collect_scenario(name, tmp_path)
    skipped = {r.check_id for r in report.checks if r.status == "not_applicable"}
    for check in all_checks():
        if check.check_id in skipped:
            assert list(check.function(report)) == [], (name, check.check_id)
    assert all(r.reason for r in report.checks if r.status == "not_applicable")
    assert not [r.reason for r in report.checks if r.status != "not_applicable" and r.reason]


def test_a_healthy_workstation_passes_its_gpu_checks(tmp_path: Path) -> None:
    status = _status(collect_scenario("workstation_rtx4090", tmp_path))
    for check_id in (*GPU_CHECKS, "memory-held", "driver-too-old", "cuda-unavailable"):
        assert status[check_id] == ("pass", None), check_id
    assert status["mig-no-instance"] == ("not_applicable", "no GPU has MIG enabled")
    assert status["mig-pending"] == ("not_applicable", "no MIG-capable GPU")
    assert status["device-order"] == ("not_applicable", "only one GPU")
    assert status["ecc-uncorrectable"] == ("not_applicable", "no GPU reports ECC errors")
    assert status["cvd-invalid"] == ("not_applicable", "CUDA_VISIBLE_DEVICES is unset")


def test_an_h100_node_checks_ecc_mig_and_numbering(tmp_path: Path) -> None:
    status = _status(collect_scenario("h100_8x_node", tmp_path))
    for check_id in (*GPU_CHECKS, "ecc-uncorrectable", "mig-pending", "device-order"):
        assert status[check_id] == ("pass", None), check_id


def test_mig_checks_apply_on_mig_gpus(tmp_path: Path) -> None:
    empty = _status(collect_scenario("a100_mig_no_instances", tmp_path / "empty"))
    two = _status(collect_scenario("a100_mig_two_instances", tmp_path / "two"))
    assert empty["mig-no-instance"][0] == "fail" and two["mig-no-instance"] == ("pass", None)
    assert two["mig-single-visible"][0] == "info"
    assert empty["mig-single-visible"] == two["mig-pending"] == ("pass", None)


def test_without_a_loaded_driver_gpu_checks_say_why(tmp_path: Path) -> None:
    status = _status(collect_scenario("driver_not_loaded", tmp_path))
    assert status["driver-not-loaded"][0] == "fail"
    for check_id in (*GPU_CHECKS, "memory-held", "mig-no-instance"):
        assert status[check_id] == ("not_applicable", "NVIDIA driver not loaded"), check_id


def test_fields_a_gpu_does_not_report_make_their_check_not_applicable(tmp_path: Path) -> None:
    status = _status(collect_scenario("not_supported_fields", tmp_path))
    assert status["memory-held"] == ("not_applicable", "no GPU lists its processes")
    assert status["gpu-lost"] == ("pass", None)


def test_container_checks_apply_only_in_containers(tmp_path: Path) -> None:
    inside = _status(collect_scenario("container_no_gpu", tmp_path / "in"))
    outside = _status(collect_scenario("workstation_rtx4090", tmp_path / "out"))
    assert inside["container-no-gpu"][0] == "fail"
    assert outside["container-no-gpu"] == ("not_applicable", "not in a container")


def test_human_view_summarises_not_applicable_checks_in_one_line(tmp_path: Path) -> None:
    report = collect_scenario("driver_not_loaded", tmp_path)
    skipped = sum(1 for r in report.checks if r.status == "not_applicable")
    out = StringIO()
    render_human(report, make_console(file=out, width=100, color=False))
    text = " ".join(out.getvalue().split())
    assert f"– {skipped} checks did not apply here (NVIDIA driver not loaded;" in text
    assert "`gpudoc info -v` lists each" in text and "every GPU answers" not in text
    out = StringIO()
    render_human(report, make_console(file=out, width=100, color=False), verbose=True)
    assert "– every GPU answers: did not apply (NVIDIA driver not loaded)" in out.getvalue()
