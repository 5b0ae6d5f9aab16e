"""The NVML wrapper: library-level failures become one error, per-field failures become None."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pynvml
import pytest
from info_scenarios import collect_scenario, load
from nvml_fake import FakeNvml, nvml_error

from gpudoc.info.nvml import binding_distributions, normalise_bus_id, read_nvml
from gpudoc.info.nvml_reader import error_name


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("LibraryNotFound", "NVML Shared Library Not Found"),
        ("DriverNotLoaded", "Driver Not Loaded"),
        ("LibRmVersionMismatch", "RM has detected an NVML/RM version mismatch."),
        ("NoPermission", "Insufficient Permissions"),
    ],
)
def test_library_level_failure_is_reported_once_and_nothing_else_is_read(
    name: str, message: str
) -> None:
    fake = FakeNvml({"init_error": name})
    snapshot = read_nvml(fake)
    assert (snapshot.init_error, snapshot.init_error_message) == (name, message)
    assert snapshot.gpus == () and snapshot.device_count is None
    assert fake.calls == ["nvmlInit"]


def test_the_fake_raises_the_real_pynvml_classes() -> None:
    assert type(nvml_error("GpuIsLost")) is pynvml.NVMLError_GpuIsLost
    assert isinstance(nvml_error("NotSupported"), pynvml.NVMLError)
    assert not isinstance(nvml_error("NVMLLibraryMismatchError"), pynvml.NVMLError)


def test_real_pynvml_on_this_machine_without_a_driver() -> None:
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError_LibraryNotFound:
        snapshot = read_nvml()
        assert snapshot.init_error == "LibraryNotFound" and snapshot.gpus == ()
        return
    pynvml.nvmlShutdown()
    pytest.skip("this machine has an NVIDIA library")


def _one_gpu(**overrides: Any) -> dict[str, Any]:
    scenario = load("workstation_rtx4090")["nvml"]
    scenario["devices"][0].update(overrides)
    return dict(scenario)


def test_every_session_is_shut_down_even_with_failing_fields() -> None:
    fake = FakeNvml(_one_gpu(nvmlDeviceGetName={"error": "Unknown"}))
    snapshot = read_nvml(fake)
    assert fake.initialised == 0 and fake.calls[-1] == "nvmlShutdown"
    [gpu] = snapshot.gpus
    assert gpu.name is None and gpu.uuid is not None
    assert ("name", "Unknown") in [(e.field, e.error) for e in gpu.field_errors]


def test_library_mismatch_error_outside_the_nvml_hierarchy_is_a_field_error() -> None:
    fake = FakeNvml(
        _one_gpu(nvmlDeviceGetComputeRunningProcesses={"error": "NVMLLibraryMismatchError"})
    )
    [gpu] = read_nvml(fake).gpus
    assert gpu.processes is None
    assert ("processes", "NVMLLibraryMismatchError") in [
        (e.field, e.error) for e in gpu.field_errors
    ]


def test_no_permission_on_the_handle_leaves_an_empty_gpu() -> None:
    fake = FakeNvml(_one_gpu(handle={"error": "NoPermission"}))
    [gpu] = read_nvml(fake).gpus
    assert gpu.nvml_index == 0 and gpu.name is None and gpu.memory_total_bytes is None
    assert [(e.field, e.error) for e in gpu.field_errors] == [("handle", "NoPermission")]


def test_units_and_forms() -> None:
    snapshot = read_nvml(FakeNvml(load("workstation_rtx4090")["nvml"]))
    [gpu] = snapshot.gpus
    assert snapshot.cuda_driver_version == "12.4"  # 12040
    assert gpu.pci_bus_id == "0000:01:00.0"  # NVML's 00000000:01:00.0
    assert gpu.compute_capability == "8.9"
    assert gpu.memory_total_bytes == 24564 * 1024**2 and gpu.power_limit_mw == 450000
    assert gpu.compute_mode == "default" and gpu.persistence_mode is False


def test_error_names_and_bus_ids() -> None:
    assert error_name(pynvml.NVMLError_NotSupported()) == "NotSupported"
    assert error_name(ValueError("x")) == "ValueError"
    assert normalise_bus_id(b"00000000:AB:00.0") == "0000:ab:00.0"
    assert normalise_bus_id("weird") == "weird"


def test_binding_provenance_reads_dist_info_names(tmp_path: Path) -> None:
    for name in (
        "nvidia_ml_py-13.615.71.dist-info",
        "pynvml-12.0.0.dist-info",
        "rich-14.0.dist-info",
    ):
        (tmp_path / name).mkdir()
    assert binding_distributions([str(tmp_path), "/nonexistent"]) == (
        "nvidia-ml-py 13.615.71",
        "pynvml 12.0.0",
    )


def test_binding_provenance_of_this_environment() -> None:
    from importlib import metadata

    assert binding_distributions()[0] == f"nvidia-ml-py {metadata.version('nvidia-ml-py')}"


def test_missing_binding_is_a_library_level_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpudoc.info import nvml

    def no_module() -> None:
        raise ModuleNotFoundError("No module named 'pynvml'")

    monkeypatch.setattr(nvml, "load_pynvml", no_module)
    snapshot = nvml.read_nvml()
    assert (snapshot.init_error, snapshot.gpus) == ("ModuleNotFound", ())


def _nvml_binding_messages(tmp_path: Path, **nvml: Any) -> list[str]:
    report = collect_scenario("workstation_rtx4090", tmp_path, nvml=nvml)
    [result] = [r for r in report.checks if r.check_id == "nvml-binding"]
    return [f.message for f in result.findings]


def test_a_function_the_binding_lacks_means_the_binding_is_old(tmp_path: Path) -> None:
    """getattr(pynvml, name) fails: upgrading nvidia-ml-py is the fix, not the driver."""
    lacks = ["nvmlDeviceGetPowerUsage", "nvmlDeviceGetCurrentClocksEventReasons"]
    devices = load("workstation_rtx4090")["nvml"]["devices"]
    devices[0]["nvmlDeviceGetCurrentClocksThrottleReasons"] = 5  # the name before 535
    edits = {"binding_lacks": lacks, "devices": devices}
    report = collect_scenario("workstation_rtx4090", tmp_path, nvml=edits)
    [gpu] = report.gpus
    assert gpu.power_draw_mw is None
    assert ("power_draw_mw", "NotInBinding") in [(e.field, e.error) for e in gpu.field_errors]
    # An older binding's entry point is used instead, with no error.
    assert gpu.clocks_event_reasons == ("gpu_idle", "sw_power_cap")
    assert "clocks_event_reasons" not in {e.field for e in gpu.field_errors}
    [message] = _nvml_binding_messages(tmp_path / "again", **edits)
    assert "is older than gpudoc needs" in message and "power_draw_mw" in message
    assert "newer than the driver" not in message


def test_a_function_the_driver_lacks_means_the_binding_is_newer(tmp_path: Path) -> None:
    """pynvml raises FunctionNotFound: the driver's libnvidia-ml predates the binding."""
    devices = load("workstation_rtx4090")["nvml"]["devices"]
    del devices[0]["nvmlDeviceGetPowerUsage"]
    [message] = _nvml_binding_messages(tmp_path, devices=devices)
    assert "is newer than the driver (550.90.07)" in message and "power_draw_mw" in message
    assert "older than gpudoc needs" not in message


def test_a_complete_binding_and_driver_give_no_finding(tmp_path: Path) -> None:
    assert _nvml_binding_messages(tmp_path) == []
