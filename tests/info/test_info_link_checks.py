"""nvlink-down, fabric-not-ready, sxid-recent, pcie-errors, infiniband-down and peermem-missing:
each fires in its machine scenario with its own fix, stays quiet on the healthy HGX node, and
does not apply where its fact is unknown."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from info_scenarios import collect_scenario
from test_info_checks import with_host

from gpudoc.info.doctor import run_doctor
from gpudoc.info.model import Finding, GpuInfo, InfinibandPort, InfoReport

LINK_CHECKS = (
    "nvlink-down",
    "fabric-not-ready",
    "sxid-recent",
    "pcie-errors",
    "infiniband-down",
    "peermem-missing",
)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> InfoReport:
    return collect_scenario("h100_8x_node", tmp_path_factory.mktemp("node"))


def _result(report: InfoReport, check_id: str) -> tuple[str, str | None, list[Finding]]:
    [result] = [r for r in report.checks if r.check_id == check_id]
    return result.status, result.reason, list(result.findings)


def _checked(report: InfoReport) -> InfoReport:
    return run_doctor(dataclasses.replace(report, checks=(), summary=None))


def _gpus(report: InfoReport, **changes: Any) -> InfoReport:
    """Every GPU changed alike; a value that is a dict maps NVML index -> value."""

    def one(gpu: GpuInfo) -> GpuInfo:
        picked = {
            k: (v.get(gpu.nvml_index, getattr(gpu, k)) if isinstance(v, dict) else v)
            for k, v in changes.items()
        }
        return dataclasses.replace(gpu, **picked)

    return _checked(dataclasses.replace(report, gpus=tuple(one(g) for g in report.gpus)))


def test_the_healthy_node_passes_every_link_check(node: InfoReport) -> None:
    for check_id in LINK_CHECKS:
        assert _result(node, check_id) == ("pass", None, []), check_id


def test_links_down_on_an_nvswitch_node(tmp_path: Path) -> None:
    report = collect_scenario("h100_nvlink_down", tmp_path)
    status, _, found = _result(report, "nvlink-down")
    assert status == "fail" and [f.gpu for f in found] == [3, 5]
    assert "NVLink links 4, 11 of 18 down" in found[0].message
    assert "all 18 NVLink links down" in found[1].message
    assert "nvidia-smi -r -i 3" in (found[0].fix or "") and "nvlink -s" in (found[0].fix or "")
    [xid] = _result(report, "xid-recent")[2]
    assert (xid.fix or "").startswith("Xid 74: an NVLink error")


def test_pcie_cards_without_bridges_are_a_note_not_a_failure(node: InfoReport) -> None:
    cards = dataclasses.replace(node, host=dataclasses.replace(node.host, nvswitches=()))
    report = _gpus(
        cards, name="NVIDIA GeForce RTX 3090", fabric_state=None, nvlink_links_active=(False,) * 4
    )
    status, _, [note] = _result(report, "nvlink-down")
    assert (status, note.severity) == ("info", "info")
    assert "None of the NVLink links of the 8 GPUs is up" in note.message
    half = _gpus(
        cards,
        name="NVIDIA RTX A6000",
        fabric_state=None,
        nvlink_links_active={0: (True, True, False, False)},
    )
    assert [(f.severity, f.gpu) for f in _result(half, "nvlink-down")[2]] == [("warn", 0)]


def test_no_nvlink_is_not_applicable(node: InfoReport) -> None:
    assert _result(_gpus(node, nvlink_links_active=()), "nvlink-down")[:2] == (
        "not_applicable",
        "no GPU has NVLink",
    )


def test_fabric_registration_not_done(tmp_path: Path) -> None:
    report = collect_scenario("h100_fabric_manager_stopped", tmp_path)
    status, _, [found] = _result(report, "fabric-not-ready")
    assert status == "fail" and found.gpu is None
    assert found.message.startswith("8 GPUs (0, 1, 2, 3, 4, 5, 6, 7): NVSwitch fabric")
    assert "still in progress" in found.message and "error 802" in found.message
    assert "systemctl enable --now nvidia-fabricmanager" in (found.fix or "")
    assert "570.124.06" in (found.fix or "")  # the fabric manager must match the driver


def test_a_failed_registration_names_its_status(node: InfoReport) -> None:
    report = _gpus(node, fabric_status={6: "NotReady"})
    [found] = _result(report, "fabric-not-ready")[2]
    assert found.gpu == 6 and "registration failed (NotReady)" in found.message


def test_an_a100_switch_box_without_the_fabric_manager(tmp_path: Path) -> None:
    report = collect_scenario("a100_fabric_manager_stopped", tmp_path)
    assert {g.fabric_state for g in report.gpus} == {None}  # A100s do not register
    [found] = _result(report, "fabric-not-ready")[2]
    assert found.message.startswith("6 NVSwitches are on the PCI bus but nv-fabricmanager")
    # Inside a container the host's processes are invisible: no verdict.
    unknown = _checked(with_host(report, fabric_manager_running=None))
    assert _result(unknown, "fabric-not-ready")[0] == "pass"


def test_no_fabric_on_a_workstation(tmp_path: Path) -> None:
    report = collect_scenario("workstation_rtx4090", tmp_path)
    assert _result(report, "fabric-not-ready")[:2] == ("not_applicable", "no NVSwitch fabric")
    assert _result(report, "sxid-recent")[:2] == ("not_applicable", "no NVSwitch")


def test_a_fatal_sxid(tmp_path: Path) -> None:
    report = collect_scenario("h100_nvswitch_sxid", tmp_path)
    status, _, [found] = _result(report, "sxid-recent")
    assert status == "fail"
    assert "NVSwitch at PCI 0000:07:00.0 logged SXid 12028, 20034 since boot" in found.message
    assert "the latest fatal one 37 min ago: Link 30 LTSSM Fault Up." in found.message
    assert "reboot" in (found.fix or "")
    assert report.host.kernel_log is not None
    assert [e.sxid for e in report.host.kernel_log.sxid_events] == [12028, 20034]


def test_non_fatal_sxids_are_a_note(tmp_path: Path) -> None:
    report = collect_scenario("h100_nvswitch_sxid", tmp_path)
    log = report.host.kernel_log
    assert log is not None
    quiet = dataclasses.replace(log, sxid_events=log.sxid_events[:1])
    [found] = _result(_checked(with_host(report, kernel_log=quiet)), "sxid-recent")[2]
    assert found.severity == "info" and "non-fatal one" in found.message


def test_pcie_error_severities(tmp_path: Path) -> None:
    report = collect_scenario("h100_pcie_errors", tmp_path)
    found = {f.gpu: f for f in _result(report, "pcie-errors")[2]}
    assert {g: f.severity for g, f in found.items()} == {2: "warn", 6: "fail", 7: "info"}
    assert found[2].message.endswith(
        "PCIe errors since the driver loaded: 8841 correctable, 1532 replays."
    )
    assert "1 fatal, 1 uncorrectable non-fatal" in found[6].message
    assert "reseat" in (found[6].fix or "") and "reseat" not in (found[7].fix or "")


def test_infiniband_ports(tmp_path: Path) -> None:
    report = collect_scenario("h100_infiniband_degraded", tmp_path)
    down, slow = _result(report, "infiniband-down")[2]
    assert down.message.startswith("mlx5_3 port 1 is DOWN (physical state Polling)")
    assert "ibstat mlx5_3 1" in (down.fix or "")
    assert "mlx5_5 port 1 runs at 200 Gb/s while its peers run at 400 Gb/s" in slow.message
    [peermem] = _result(report, "peermem-missing")[2]
    assert "modprobe nvidia_peermem" in (peermem.fix or "")


def test_a_port_without_a_subnet_manager_and_a_disabled_one(node: InfoReport) -> None:
    ports = (
        InfinibandPort("mlx5_0", 1, "INIT", "LinkUp", 400.0, "InfiniBand"),
        InfinibandPort("mlx5_1", 1, "DOWN", "Disabled", 400.0, "InfiniBand"),  # switched off
        InfinibandPort("mlx5_2", 1, "ACTIVE", "LinkUp", 400.0, "InfiniBand"),
    )
    [found] = _result(_checked(with_host(node, infiniband_ports=ports)), "infiniband-down")[2]
    assert "INIT: the link is up but no subnet manager" in found.message
    assert "opensm" in (found.fix or "")


def test_the_older_peer_memory_module_counts(node: InfoReport) -> None:
    modules = ("mlx5_core", "nv_peer_mem", "nvidia")
    assert _result(_checked(with_host(node, kernel_modules=modules)), "peermem-missing")[0] == (
        "pass"
    )


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ({"infiniband_ports": None}, "RDMA ports unknown"),
        ({"infiniband_ports": ()}, "no InfiniBand or RoCE adapter"),
        ({"kernel_modules": None}, "loaded kernel modules unknown"),
    ],
)
def test_peermem_needs_its_facts(node: InfoReport, host: dict[str, Any], reason: str) -> None:
    report = _checked(with_host(node, **host))
    assert _result(report, "peermem-missing")[:2] == ("not_applicable", reason)


def test_pcie_counts_unknown_is_not_applicable(node: InfoReport) -> None:
    report = _gpus(
        node, pcie_replay_count=None, pcie_aer_correctable_count=None, pcie_aer_fatal_count=None
    )
    assert _result(report, "pcie-errors")[:2] == (
        "not_applicable",
        "no GPU reports PCIe error counts",
    )
