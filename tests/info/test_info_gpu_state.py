"""pci-gpu-unlisted, gpu-needs-reset, ecc-disabled and inforom-corrupt in their scenarios and
around them; and xid-recent's fix per code from the Xid catalogue."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from info_scenarios import collect_scenario
from test_info_checks import with_host

from gpudoc.info.checks.xid_catalogue import XID_CATALOGUE, fix_for, program_only
from gpudoc.info.doctor import run_doctor
from gpudoc.info.model import Finding, GpuInfo, InfoReport, PciGpu

RESET = "sudo nvidia-smi -r -i 0"


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> InfoReport:
    return collect_scenario("h100_8x_node", tmp_path_factory.mktemp("node"))


def _result(report: InfoReport, check_id: str) -> tuple[str, str | None, list[Finding]]:
    [result] = [r for r in report.checks if r.check_id == check_id]
    return result.status, result.reason, list(result.findings)


def _with_gpu(report: InfoReport, index: int, **changes: Any) -> InfoReport:
    gpus = list(report.gpus)
    gpus[index] = dataclasses.replace(gpus[index], **changes)
    return run_doctor(dataclasses.replace(report, gpus=tuple(gpus), checks=(), summary=None))


def test_the_healthy_node_passes(node: InfoReport) -> None:
    for check_id in ("pci-gpu-unlisted", "gpu-needs-reset", "ecc-disabled", "inforom-corrupt"):
        assert _result(node, check_id) == ("pass", None, []), check_id


def test_a_gpu_that_failed_to_initialise(tmp_path: Path) -> None:
    report = collect_scenario("h100_gpu_not_initialised", tmp_path)
    status, _, [found] = _result(report, "pci-gpu-unlisted")
    assert status == "fail" and len(report.gpus) == 7 and len(report.host.pci_gpus or ()) == 8
    assert (
        "GPU at PCI 0000:ab:00.0 is bound to the nvidia driver but NVML does not" in found.message
    )
    assert "RmInitAdapter failed" in (found.fix or "")


@pytest.mark.parametrize(
    ("driver", "severity", "words"),
    [(None, "warn", "has no driver bound"), ("vfio-pci", "info", "passed through")],
)
def test_other_drivers_on_an_unlisted_gpu(
    node: InfoReport, driver: str | None, severity: str, words: str
) -> None:
    extra = PciGpu("0000:e1:00.0", "0x2330", driver)
    report = with_host(node, pci_gpus=(*(node.host.pci_gpus or ()), extra))
    [found] = _result(run_doctor(report), "pci-gpu-unlisted")[2]
    assert (found.severity, words in found.message) == (severity, True)


def test_a_lost_gpu_without_a_bus_id_is_not_also_unlisted(node: InfoReport) -> None:
    report = _with_gpu(node, 0, pci_bus_id=None, lost=True)
    assert _result(report, "pci-gpu-unlisted")[2] == []


def test_in_a_container_the_lists_differ_by_design(node: InfoReport) -> None:
    report = run_doctor(with_host(node, container="docker", pci_gpus=node.host.pci_gpus))
    assert _result(report, "pci-gpu-unlisted")[:2] == (
        "not_applicable",
        "in a container: NVML lists only the GPUs given to it",
    )


def test_reset_required(tmp_path: Path) -> None:
    report = collect_scenario("h100_reset_required", tmp_path)
    assert [g.nvml_index for g in report.gpus if g.reset_required] == [4]
    assert report.gpus[4].recovery_action == "gpu_reset"
    [found] = _result(report, "gpu-needs-reset")[2]
    assert (found.severity, found.gpu) == ("fail", 4)
    assert "NVML answers 'GPU requires reset'" in found.message
    assert "sudo nvidia-smi -r -i 4" in (found.fix or "")


@pytest.mark.parametrize(
    ("action", "severity", "words"),
    [
        ("drain_and_reset", "fail", "the driver asks for a drain and reset"),
        ("node_reboot", "fail", "needs a reboot"),
        ("drain_p2p", "warn", "recovery action is drain_p2p"),
        ("none", None, None),
    ],
)
def test_recovery_actions(
    node: InfoReport, action: str, severity: str | None, words: str | None
) -> None:
    found = _result(_with_gpu(node, 0, recovery_action=action), "gpu-needs-reset")[2]
    if severity is None:
        assert found == []
    else:
        assert [(f.severity, words in f.message) for f in found] == [(severity, True)]


def test_ecc_off_or_changing(tmp_path: Path) -> None:
    report = collect_scenario("h100_ecc_off_inforom", tmp_path)
    pending, off = _result(report, "ecc-disabled")[2]
    assert pending.gpu == 0 and "ECC will be turned off at the next GPU reset" in pending.message
    assert pending.fix is not None and pending.fix.endswith("sudo nvidia-smi -i 0 -e 1")
    assert off.gpu == 1 and "ECC is off on a data-centre GPU" in off.message
    assert off.fix == "sudo nvidia-smi -i 1 -e 1, then reset the GPU or reboot"


def test_ecc_off_on_a_workstation_board_is_its_default(node: InfoReport) -> None:
    quiet = _with_gpu(
        node, 0, name="NVIDIA RTX A6000", ecc_mode_current=False, ecc_mode_pending=False
    )
    assert _result(quiet, "ecc-disabled")[2] == []
    turning_on = _with_gpu(node, 0, name="NVIDIA RTX A6000", ecc_mode_current=False)
    [found] = _result(turning_on, "ecc-disabled")[2]
    assert "turned on" in found.message and "until then it is off" in found.message


def test_a_corrupted_inforom(tmp_path: Path) -> None:
    report = collect_scenario("h100_ecc_off_inforom", tmp_path)
    [found] = _result(report, "inforom-corrupt")[2]
    assert found.gpu == 7 and "InfoROM is corrupted" in found.message
    assert "nvidia-bug-report.sh" in (found.fix or "")


def test_unknown_facts_make_the_checks_not_applicable(node: InfoReport) -> None:
    def unknown(gpu: GpuInfo) -> GpuInfo:
        return dataclasses.replace(gpu, ecc_mode_current=None, inforom_valid=None)

    report = run_doctor(
        dataclasses.replace(node, gpus=tuple(unknown(g) for g in node.gpus), checks=())
    )
    assert _result(report, "ecc-disabled")[:2] == ("not_applicable", "no GPU reports its ECC mode")
    assert _result(report, "inforom-corrupt")[1] == "no GPU reports its InfoROM check"


@pytest.mark.parametrize(
    ("codes", "starts"),
    [
        ({13}, "Xid 13: a program's fault"),
        ({31, 43}, "Xid 31: a program's fault"),
        ({48}, f"Xid 48: drain the GPU and reset it ({RESET})"),
        ({94}, "Xid 94: a contained memory error killed only the process"),
        ({48, 64}, "Xid 64: memory the GPU can no longer repair"),
        ({74}, "Xid 74: an NVLink error"),
        ({145}, "Xid 145: an NVLink error"),
        ({150, 13}, "Xid 150: an NVLink error"),
        ({79, 13, 48}, "Xid 79: the GPU no longer answers on PCIe: drain the node and reboot"),
        ({119}, "Xid 119: the GPU's firmware (GSP) stopped answering"),
        ({140}, f"Xid 140: drain the GPU and reset it ({RESET})"),
        ({154}, "Xid 154: the driver changed this GPU's recovery action"),
        ({999}, "Xid 999: unknown to gpudoc, see https://docs.nvidia.com/deploy/xid-errors/"),
    ],
)
def test_the_fix_follows_the_code_needing_most(codes: set[int], starts: str) -> None:
    assert fix_for(codes, RESET).startswith(starts)


def test_program_codes_are_the_applications_business() -> None:
    assert program_only({13, 31, 43, 45}) and program_only({92})
    assert not program_only({13, 48}) and not program_only({999})
    assert all(meaning for meaning, _ in XID_CATALOGUE.values())


def test_a_gpu_off_the_bus_is_told_to_reboot_not_reset(tmp_path: Path) -> None:
    report = collect_scenario("gpu_fallen_off_bus", tmp_path)
    [found] = _result(report, "xid-recent")[2]
    assert (found.fix or "").startswith("Xid 79: the GPU no longer answers on PCIe")
