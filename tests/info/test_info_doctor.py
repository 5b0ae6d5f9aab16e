"""The doctor's machinery: crash isolation, ordering, counting; and its pure helpers."""

from __future__ import annotations

import dataclasses
from io import StringIO
from pathlib import Path

import pytest
from info_scenarios import collect_scenario

from gpudoc.console import make_console
from gpudoc.info.checks import Check, all_checks
from gpudoc.info.checks.shared import wheel_tag_for
from gpudoc.info.collect import arch_supported
from gpudoc.info.doctor import problems, run_doctor
from gpudoc.info.model import InfoReport
from gpudoc.info.render import render_human


def _explodes(report: InfoReport) -> list[object]:
    return [1 / len(report.gpus) * 0]  # a GPU-less machine divides by zero


def test_a_crashing_check_is_shown_and_the_rest_still_run(tmp_path: Path) -> None:
    report = collect_scenario("container_no_gpu", tmp_path)
    broken = Check("broken-check", "never passes", "fail", _explodes)  # type: ignore[arg-type]
    checked = run_doctor(report, (broken, *all_checks()))
    assert checked.checks[0].status == "crashed"
    assert checked.checks[0].crash == "ZeroDivisionError: division by zero"
    assert {r.check_id for r in checked.checks[1:]} == {c.check_id for c in all_checks()}
    assert "container-no-gpu" in {f.check_id for r in checked.checks for f in r.findings}
    assert problems(checked) == problems(run_doctor(report)) + 1
    out = StringIO()
    render_human(checked, make_console(file=out, width=100, color=False))
    assert "☠ broken-check crashed: ZeroDivisionError: division by zero" in out.getvalue()
    assert "1 crashed check)" in out.getvalue().splitlines()[-1]


def test_check_ids_are_unique_and_documented() -> None:
    checks = all_checks()
    assert len({c.check_id for c in checks}) == len(checks)
    for check in checks:
        assert check.title and set(check.severities.split("/")) <= {"fail", "warn", "info"}


def test_check_status_is_the_worst_finding(tmp_path: Path) -> None:
    report = collect_scenario("exclusive_owned", tmp_path)
    status = {r.check_id: r.status for r in report.checks}
    assert status["exclusive-busy"] == "fail" and status["memory-held"] == "warn"
    assert status["gpu-lost"] == "pass"


def test_warnings_and_info_do_not_count_alike(tmp_path: Path) -> None:
    report = collect_scenario("a100_mig_two_instances", tmp_path)
    assert problems(report) == 0  # mig-single-visible is info


@pytest.mark.parametrize(
    ("capability", "arch", "supported"),
    [
        ("8.9", ("sm_80", "sm_86", "sm_90"), True),  # same major, lower minor SASS runs
        ("12.0", ("sm_50", "sm_80", "sm_90"), False),  # RTX 5090 on a cu126 wheel
        ("12.0", ("sm_90", "compute_90"), True),  # PTX JIT-compiles forward
        ("9.0", ("sm_90a",), True),
        ("10.0", ("sm_90a",), False),  # arch-specific: exactly 9.0 only
        ("3.7", ("sm_50", "sm_60"), False),  # K80 on a modern wheel
        (None, ("sm_80",), None),
        ("8.0", (), None),
    ],
)
def test_arch_supported(
    capability: str | None, arch: tuple[str, ...], supported: bool | None
) -> None:
    assert arch_supported(capability, arch) is supported


@pytest.mark.parametrize(
    ("driver_cuda", "tag"),
    [("13.0", "cu130"), ("12.4", "cu124"), ("12.5", "cu124"), ("11.4", "cu118"), ("10.2", None)],
)
def test_wheel_tag_for_a_driver(driver_cuda: str, tag: str | None) -> None:
    assert wheel_tag_for(driver_cuda) == tag


def test_torch_warnings_name_fabric_manager_and_forward_compat(tmp_path: Path) -> None:
    report = collect_scenario("h100_8x_node", tmp_path)
    assert report.torch is not None
    for code, check_id in (
        ("802: system not yet initialized", "fabric-manager"),
        ("804: forward compatibility was attempted on non supported HW", "forward-compat"),
    ):
        warning = f"CUDA initialization: Unexpected error from cudaGetDeviceCount(). Error {code}"
        torch = dataclasses.replace(report.torch, cuda_available=False, init_warnings=(warning,))
        checked = run_doctor(dataclasses.replace(report, torch=torch))
        found = {f.check_id for r in checked.checks for f in r.findings}
        assert {check_id, "cuda-unavailable"} <= found
