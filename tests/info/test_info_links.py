"""Issue 16's readers: NVLink per link, the NVSwitch fabric, ECC mode, PCIe replays and AER
counts, the recovery action and the InfoROM through the fake NVML (pynvml's real structs and
exceptions); RDMA ports, kernel modules, NVSwitches and the fabric manager from files on disk;
SXid lines from the kernel log."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from info_scenarios import build_root, collect_scenario, load
from nvml_fake import FakeNvml

from gpudoc.info import host_links
from gpudoc.info.host import read_host
from gpudoc.info.kernel_log import JOURNAL_PATTERN, parse_kernel_log, parse_sxid_line
from gpudoc.info.model import GpuInfo
from gpudoc.info.nvml import read_nvml


def _gpu(scenario: str, index: int = 0, **answers: Any) -> GpuInfo:
    nvml = copy.deepcopy(load(scenario)["nvml"])
    nvml["devices"][index].update(answers)
    return read_nvml(FakeNvml(nvml)).gpus[index]


# H100s have row remapping, not page retirement: that read answers NotSupported on each.
BASELINE = {("retired_pages_pending", "NotSupported")}


def _errors(gpu: GpuInfo) -> dict[str, str]:
    return {e.field: e.error for e in gpu.field_errors if (e.field, e.error) not in BASELINE}


def test_a_healthy_hgx_node_reads_every_new_fact() -> None:
    gpus = read_nvml(FakeNvml(load("h100_8x_node")["nvml"])).gpus
    for gpu in gpus:
        assert gpu.nvlink_links_active == (True,) * 18
        assert (gpu.fabric_state, gpu.fabric_status) == ("completed", "Success")
        assert (gpu.ecc_mode_current, gpu.ecc_mode_pending) == (True, True)
        assert gpu.pcie_replay_count == 0
        assert (gpu.pcie_aer_correctable_count, gpu.pcie_aer_fatal_count) == (0, 0)
        assert gpu.recovery_action == "none" and gpu.inforom_valid is True
        assert gpu.reset_required is False and _errors(gpu) == {}


def test_a_geforce_without_nvlink_ecc_or_fabric() -> None:
    gpu = _gpu("workstation_rtx4090")
    assert gpu.nvlink_links_active == ()  # NotSupported for every link: it has none
    assert gpu.fabric_state is gpu.ecc_mode_current is gpu.pcie_aer_fatal_count is None
    assert gpu.pcie_replay_count == 0 and gpu.inforom_valid is True
    errors = _errors(gpu)
    assert errors["fabric_state"] == errors["ecc_mode"] == "NotSupported"
    assert errors["recovery_action"] == "InvalidArgument"  # driver 550 predates the field
    assert "nvlink_links_active" not in errors


def test_per_link_states_and_their_failures() -> None:
    links = [1, 1, 0, 1]  # a link index past the list answers InvalidArgument: no such link
    assert _gpu("h100_8x_node", nvmlDeviceGetNvLinkState=links).nvlink_links_active == (
        True,
        True,
        False,
        True,
    )
    denied = _gpu("h100_8x_node", nvmlDeviceGetNvLinkState={"error": "NoPermission"})
    assert denied.nvlink_links_active is None
    assert _errors(denied) == {"nvlink_links_active": "NoPermission"}  # once, not per link
    assert len(denied.field_errors) == 2


def test_functions_an_older_driver_lacks_leave_no_field_error() -> None:
    """FunctionNotFound leaves the field unknown without feeding nvml-binding's warning."""
    new_reads = (
        "nvmlDeviceGetNvLinkState",
        "nvmlDeviceGetGpuFabricInfoV",
        "nvmlDeviceGetGpuFabricInfo",
        "nvmlDeviceGetEccMode",
        "nvmlDeviceGetPcieReplayCounter",
        "nvmlDeviceGetFieldValues",
        "nvmlDeviceValidateInforom",
    )
    nvml = copy.deepcopy(load("h100_8x_node")["nvml"])
    for device in nvml["devices"]:
        for function in new_reads:
            device.pop(function, None)
    gpu = read_nvml(FakeNvml(nvml)).gpus[0]
    assert gpu.nvlink_links_active is gpu.fabric_state is gpu.ecc_mode_current is None
    assert gpu.pcie_replay_count is gpu.recovery_action is gpu.inforom_valid is None
    assert _errors(gpu) == {}


def test_the_fabric_falls_back_to_the_unversioned_call() -> None:
    gpu = _gpu(
        "h100_8x_node",
        nvmlDeviceGetGpuFabricInfoV={"error": "FunctionNotFound"},
        nvmlDeviceGetGpuFabricInfo={"state": 1, "status": 0},
    )
    assert gpu.fabric_state == "not_started" and _errors(gpu) == {}
    failed = _gpu("h100_8x_node", nvmlDeviceGetGpuFabricInfoV={"state": 3, "status": 27})
    assert (failed.fabric_state, failed.fabric_status) == ("completed", "NotReady")  # 27


def test_field_values_read_pynvmls_own_struct() -> None:
    gpu = _gpu(
        "h100_8x_node",
        nvmlDeviceGetFieldValues={
            "173": 8841,
            "179": 2,
            "180": {"error": "NotSupported"},
            "230": 4,
        },
    )
    assert (gpu.pcie_aer_correctable_count, gpu.pcie_aer_nonfatal_count) == (8841, 2)
    assert gpu.pcie_aer_fatal_count is None and _errors(gpu) == {
        "pcie_aer_fatal_count": "NotSupported"
    }
    assert gpu.recovery_action == "drain_and_reset"


def test_reset_required_and_a_corrupted_inforom() -> None:
    gpu = _gpu(
        "h100_8x_node",
        nvmlDeviceGetMemoryInfo={"error": "ResetRequired"},
        nvmlDeviceValidateInforom={"error": "CorruptedInforom"},
    )
    assert gpu.reset_required is True and gpu.lost is False
    assert gpu.memory_total_bytes is None and gpu.inforom_valid is False
    assert _errors(gpu) == {"memory": "ResetRequired"}  # the InfoROM's answer is the field
    unknown = _gpu("h100_8x_node", nvmlDeviceValidateInforom={"error": "NoPermission"})
    assert unknown.inforom_valid is None and _errors(unknown) == {"inforom_valid": "NoPermission"}


def _root(tmp_path: Path, files: dict[str, str], pci: list[dict[str, str]] | None = None) -> Path:
    return build_root({"files": files, "pci": pci or []}, tmp_path / "root")


def test_infiniband_ports_from_sysfs(tmp_path: Path) -> None:
    port = "sys/class/infiniband/mlx5_{}/ports/1/{}"
    files = {
        port.format(0, "state"): "4: ACTIVE\n",
        port.format(0, "phys_state"): "5: LinkUp\n",
        port.format(0, "rate"): "400 Gb/sec (4X NDR)\n",
        port.format(0, "link_layer"): "InfiniBand\n",
        port.format(1, "state"): "1: DOWN\n",
        port.format(1, "phys_state"): "3: Disabled\n",
        port.format(1, "rate"): "10 Gb/sec (4X SDR)\n",
        port.format(1, "link_layer"): "Ethernet\n",
    }
    ports = read_host(str(_root(tmp_path, files)), {}).infiniband_ports
    assert ports is not None
    assert [
        (p.device, p.port, p.state, p.physical_state, p.rate_gbps, p.link_layer) for p in ports
    ] == [
        ("mlx5_0", 1, "ACTIVE", "LinkUp", 400.0, "InfiniBand"),
        ("mlx5_1", 1, "DOWN", "Disabled", 10.0, "Ethernet"),
    ]
    assert read_host(str(tmp_path / "empty"), {}).infiniband_ports == ()  # no RDMA driver


def test_kernel_modules_nvswitches_and_the_fabric_manager(tmp_path: Path) -> None:
    files = {
        "proc/modules": "nvidia_peermem 16384 0 - Live 0x0 (OE)\next4 1032192 2 - Live 0x0\n"
        "nvidia 54370304 170 nvidia_peermem, Live 0x0 (OE)\nmlx5_core 2207744 1 - Live 0x0\n",
        "proc/2841/comm": "nv-fabricmanager\n",
        "proc/1/comm": "systemd\n",
    }
    switch = {"bus_id": "0000:05:00.0", "device": "0x22a3", "class": "0x068000"}
    root = _root(tmp_path, files, [switch])
    host = read_host(str(root), {})
    assert host.kernel_modules == ("mlx5_core", "nvidia", "nvidia_peermem")
    assert host.nvswitches == ("0000:05:00.0",) and host.pci_gpus == ()
    assert host.fabric_manager_running is True
    # In a container the host's daemons are invisible: unknown, not "not running".
    assert host_links.fabric_manager_running(root, ("0000:05:00.0",), in_container=True) is None
    (root / "proc/2841/comm").write_text("python\n")
    assert host_links.fabric_manager_running(root, ("0000:05:00.0",), False) is False
    assert host_links.fabric_manager_running(root, (), False) is None  # no switch: not asked


@pytest.mark.parametrize(
    ("line", "fields"),
    [
        (
            "[80100.220114] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 12028, Non-fatal, Link 33 "
            "egress non-posted PRIV error (First)",
            (12028, "0000:07:00.0", False, 33, "Link 33 egress non-posted PRIV error (First)"),
        ),
        (
            "Nov 20 03:11:09 node7 kernel: nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, "
            "Fatal, Link 30 LTSSM Fault Up",
            (20034, "0000:05:00.0", True, 30, "Link 30 LTSSM Fault Up"),
        ),
    ],
)
def test_sxid_lines(line: str, fields: tuple[Any, ...]) -> None:
    event = parse_sxid_line(line)
    assert event is not None
    assert (event.sxid, event.switch_pci_bus_id, event.fatal, event.link, event.message) == fields


def test_sxid_continuation_lines_are_not_events_and_xids_still_are() -> None:
    lines = [
        "[1.0] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 12028, Severity 0 Engine instance 33",
        "[1.1] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 12028, Data {0x00000000, 0x00000000}",
        "[2.0] NVRM: Xid (PCI:0000:3b:00): 74, pid=1, name=python, NVLink: fatal error on link 4",
        "[3.0] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Fatal, Link 30 LTSSM Fault Up",
    ]
    log = parse_kernel_log("/dev/kmsg", lines, 10.0)
    assert [e.xid for e in log.xid_events] == [74]
    assert [(e.sxid, e.seconds_since_boot) for e in log.sxid_events] == [(20034, 3.0)]
    assert JOURNAL_PATTERN == "NVRM: Xid|SXid"  # journalctl --grep gets both kinds of line


def test_scenarios_read_their_host_links(tmp_path: Path) -> None:
    node = collect_scenario("h100_8x_node", tmp_path / "node")
    assert len(node.host.infiniband_ports or ()) == 8 and node.host.nvswitches is not None
    assert len(node.host.nvswitches) == 4 and node.host.fabric_manager_running is True
    assert "nvidia_peermem" in (node.host.kernel_modules or ())


def test_a_gpu_without_nvlink_is_asked_once_and_an_nvlink_gpu_per_index() -> None:
    import pynvml

    geforce = FakeNvml(load("workstation_rtx4090")["nvml"])
    read_nvml(geforce)
    assert geforce.calls.count("nvmlDeviceGetNvLinkState") == 1
    hgx = FakeNvml(load("h100_8x_node")["nvml"])
    read_nvml(hgx)
    assert hgx.calls.count("nvmlDeviceGetNvLinkState") == 8 * pynvml.NVML_NVLINK_MAX_LINKS
