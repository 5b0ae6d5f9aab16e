"""pcie-degraded: a narrow link is trouble whatever the load; a slow (low generation) link only
on a busy GPU, because GPUs drop to Gen1 at idle to save power. Read through the fake NVML."""

from __future__ import annotations

import dataclasses
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from info_scenarios import collect_scenario, load
from nvml_fake import FakeNvml
from test_info_checks import with_gpu

from gpudoc.console import make_console
from gpudoc.info.doctor import run_doctor
from gpudoc.info.model import Finding, InfoReport
from gpudoc.info.nvml import read_nvml
from gpudoc.info.render import render_human


def _pcie(report: InfoReport) -> tuple[str, list[Finding]]:
    [result] = [r for r in report.checks if r.check_id == "pcie-degraded"]
    return result.status, list(result.findings)


@pytest.fixture(scope="module")
def workstation(tmp_path_factory: pytest.TempPathFactory) -> InfoReport:
    return collect_scenario("workstation_rtx4090", tmp_path_factory.mktemp("ws"))


def test_a_card_at_x8_of_x16_warns_even_when_idle(tmp_path: Path) -> None:
    report = collect_scenario("rtx4090_pcie_x8", tmp_path)
    [gpu] = report.gpus
    assert (gpu.pcie_link_width_current, gpu.pcie_link_width_max) == (8, 16)
    assert gpu.pcie_link_gen_current == 1 and gpu.utilization_gpu_percent == 3
    status, [warning] = _pcie(report)
    assert (status, warning.severity, warning.gpu) == ("warn", "warn", 0)
    assert "runs at x8 of x16: 50% of the host-device bandwidth" in warning.message
    assert "Gen" not in warning.message  # idle at Gen1 is not part of the finding
    assert "bifurcation" in (warning.fix or "") and "-i 0 -d PCI" in (warning.fix or "")


def test_a_busy_gpu_at_gen3_of_gen5_warns(tmp_path: Path) -> None:
    report = collect_scenario("h100_pcie_gen3_busy", tmp_path)
    status, [warning] = _pcie(report)
    assert (status, warning.gpu) == ("warn", 3)
    assert "Gen3 x16 of Gen5 x16 while 100% busy: 25% of the host-device" in warning.message
    assert "Gen5 or auto" in (warning.fix or "") and "bifurcation" not in (warning.fix or "")
    assert [g.pcie_link_gen_current for g in report.gpus] == [5, 5, 5, 3, 5, 5, 5, 5]


def test_healthy_machines_pass(tmp_path: Path, workstation: InfoReport) -> None:
    node = collect_scenario("h100_8x_node", tmp_path)
    for report in (workstation, node):
        assert _pcie(report) == ("pass", [])  # the check looked: every GPU reports its link
        assert not [e for g in report.gpus for e in g.field_errors if "pcie_link" in e.field]
    # Both idle at Gen1 of their maximum: the power saving every GPU does.
    assert {(g.pcie_link_gen_current, g.pcie_link_gen_max) for g in node.gpus} == {(1, 5)}
    assert workstation.gpus[0].pcie_link_gen_current == 1


@pytest.mark.parametrize(
    ("utilization", "reasons", "fires"),
    [
        (0, ("gpu_idle",), False),
        (30, (), False),  # light load: the link may not have come up yet
        (100, ("gpu_idle",), False),  # the driver says idle: the utilization is stale
        (100, (), True),
        (60, ("sw_power_cap",), True),
    ],
)
def test_generation_counts_only_on_a_busy_gpu(
    workstation: InfoReport, utilization: int, reasons: tuple[str, ...], fires: bool
) -> None:
    report = with_gpu(
        workstation, utilization_gpu_percent=utilization, clocks_event_reasons=reasons
    )
    status, found = _pcie(run_doctor(report))
    assert (status == "warn") == fires == bool(found)
    if fires:
        assert f"Gen1 x16 of Gen4 x16 while {utilization}% busy: 13%" in found[0].message


def test_both_narrow_and_slow_in_one_finding(workstation: InfoReport) -> None:
    report = with_gpu(
        workstation,
        utilization_gpu_percent=95,
        clocks_event_reasons=(),
        pcie_link_gen_current=3,
        pcie_link_width_current=8,
    )
    _, [warning] = _pcie(run_doctor(report))
    assert "Gen3 x8 of Gen4 x16 while 95% busy: 25%" in warning.message
    assert "bifurcation" in (warning.fix or "") and "Gen4 or auto" in (warning.fix or "")


@pytest.mark.parametrize(
    "link",
    [
        {"pcie_link_gen_max": 3, "pcie_link_gen_gpu_max": 4, "pcie_link_gen_current": 3},
        {"pcie_link_gen_max": 5, "pcie_link_gen_gpu_max": 4, "pcie_link_gen_current": 4},
        {"pcie_link_width_current": 0, "pcie_link_width_max": 16},  # odd SXM answers
        {"pcie_link_width_current": 16, "pcie_link_width_max": 8},
        {"pcie_link_width_current": 3, "pcie_link_width_max": 16},
        {"pcie_link_width_max": None, "pcie_link_gen_max": None},  # NotSupported
    ],
)
def test_what_cannot_be_sure_is_not_flagged(workstation: InfoReport, link: dict[str, Any]) -> None:
    busy = with_gpu(workstation, utilization_gpu_percent=100, clocks_event_reasons=())
    report = with_gpu(busy, **{"pcie_link_gen_current": 4, **link})
    assert _pcie(run_doctor(report)) == ("pass", [])


def test_no_gpu_reporting_its_link_is_not_applicable(workstation: InfoReport) -> None:
    report = run_doctor(with_gpu(workstation, pcie_link_width_current=None))
    [result] = [r for r in report.checks if r.check_id == "pcie-degraded"]
    assert (result.status, result.reason) == ("not_applicable", "no GPU reports its PCIe link")


def test_not_supported_reads_as_none_without_other_warnings(tmp_path: Path) -> None:
    scenario = load("workstation_rtx4090")["nvml"]
    device = scenario["devices"][0]
    for function in [f for f in device if "Pcie" in f]:
        device[function] = {"error": "NotSupported"}
    [gpu] = read_nvml(FakeNvml(scenario)).gpus
    assert gpu.pcie_link_width_current is gpu.pcie_link_gen_gpu_max is None
    assert {e.field: e.error for e in gpu.field_errors if "pcie_link" in e.field} == {
        "pcie_link_gen_current": "NotSupported",
        "pcie_link_gen_max": "NotSupported",
        "pcie_link_gen_gpu_max": "NotSupported",
        "pcie_link_width_current": "NotSupported",
        "pcie_link_width_max": "NotSupported",
    }


def test_a_driver_without_the_gpu_max_read_is_not_a_binding_problem(tmp_path: Path) -> None:
    scenario = load("driver_too_old")["nvml"]
    del scenario["devices"][0]["nvmlDeviceGetGpuMaxPcieLinkGeneration"]
    [gpu] = read_nvml(FakeNvml(scenario)).gpus
    assert (gpu.pcie_link_gen_gpu_max, gpu.pcie_link_gen_max) == (None, 4)
    assert not [e for e in gpu.field_errors if e.field.startswith("pcie")]


def test_details_line_shows_the_link_and_a_slot_limit(workstation: InfoReport) -> None:
    gpu = dataclasses.replace(workstation.gpus[0], pcie_link_gen_max=3, pcie_link_gen_gpu_max=4)
    out = StringIO()
    render_human(
        dataclasses.replace(workstation, gpus=(gpu,)),
        make_console(file=out, width=300, color=False),
    )
    assert "· PCIe Gen1 x16 of Gen3 x16 (GPU Gen4) ·" in out.getvalue()


def test_list_checks_lists_it(run_gpudoc: Any) -> None:
    result = run_gpudoc("info", "--list-checks", env={"COLUMNS": "200"})
    assert any(line.split()[:1] == ["pcie-degraded"] for line in result.stdout.splitlines())
