"""Every named machine scenario: the doctor finds exactly the expected problems, devices join by
UUID, the JSON validates against the published schema, and the human view renders."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import jsonschema
import pytest
from info_scenarios import NAMES, collect_scenario, finding_ids, load

from gpudoc.console import make_console
from gpudoc.info.doctor import usable_gpu_count
from gpudoc.info.render import render_human, render_json, report_to_json

SCHEMA = json.loads((Path(__file__).parents[2] / "gpudoc/info/schema.json").read_text())


def test_there_are_scenarios_for_every_required_machine() -> None:
    required = {
        "workstation_rtx4090",
        "h100_8x_node",
        "a100_mig_no_instances",
        "a100_mig_two_instances",
        "gpu_fallen_off_bus",
        "not_supported_fields",
        "exclusive_owned",
        "cvd_reordered",
        "cvd_uuid",
        "cvd_invalid",
        "cvd_empty",
    }
    assert required <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_doctor_finds_exactly_the_expected_problems(name: str, tmp_path: Path) -> None:
    expect = load(name)["expect"]
    report = collect_scenario(name, tmp_path)
    assert finding_ids(report, "fail", "warn") == set(expect["problems"])
    assert finding_ids(report, "info") == set(expect.get("info", []))
    assert not [r for r in report.checks if r.status == "crashed"]
    assert usable_gpu_count(report) == expect["usable_gpus"]


@pytest.mark.parametrize("name", NAMES)
def test_torch_devices_join_nvml_devices_by_uuid(name: str, tmp_path: Path) -> None:
    """Every scenario states its devices: how many NVML sees, which torch index each got (by
    UUID; {} where torch sees none), and which CUDA_VISIBLE_DEVICES selects (absent: all)."""
    expect = load(name)["expect"]
    report = collect_scenario(name, tmp_path)
    assert [g.nvml_index for g in report.gpus] == list(range(expect["gpus"]))
    joined = {str(g.nvml_index): g.torch_index for g in report.gpus if g.torch_index is not None}
    assert joined == expect["torch_index"]
    visible = report.visible.nvml_indices
    assert (None if visible is None else list(visible)) == expect.get("visible")


@pytest.mark.parametrize("name", NAMES)
def test_json_validates_against_the_schema(name: str, tmp_path: Path) -> None:
    for torch in (True, False):
        data = report_to_json(collect_scenario(name, tmp_path / str(torch), torch=torch))
        jsonschema.validate(data, SCHEMA)
        out = StringIO()
        render_json(collect_scenario(name, tmp_path / f"r{torch}", torch=torch), out)
        assert (
            json.loads(out.getvalue())["schema_version"]
            == SCHEMA["properties"]["schema_version"]["const"]
        )


@pytest.mark.parametrize("name", NAMES)
def test_human_view_names_every_problem_with_its_fix(name: str, tmp_path: Path) -> None:
    report = collect_scenario(name, tmp_path)
    out = StringIO()
    render_human(report, _console(out))
    text = out.getvalue()
    for title in ("PyTorch", "Driver & NVML", "Devices", "Environment", "Doctor"):
        assert f"\n{title}\n" in f"\n{text}"
    problems = load(name)["expect"]["problems"]
    for check_id in problems:
        assert f"✗ {check_id}" in text or f"! {check_id}" in text
    assert text.count("fix: ") >= len(problems)
    closing = text.strip().splitlines()[-1]
    findings = [f for r in report.checks for f in r.findings if f.severity in ("fail", "warn")]
    assert (
        closing == "No issues found." if not problems else closing.startswith(f"{len(findings)} ")
    )


def test_fallen_gpu_is_null_fields_not_a_crash(tmp_path: Path) -> None:
    report = collect_scenario("gpu_fallen_off_bus", tmp_path)
    healthy, lost = report.gpus
    assert not healthy.lost and healthy.memory_total_bytes == 81920 * 1024**2
    assert lost.lost and lost.name is None and lost.memory_total_bytes is None
    assert [e.error for e in lost.field_errors] == ["GpuIsLost"]  # later reads are skipped
    assert healthy.torch_index == 0 and lost.torch_index is None
    [finding] = [f for r in report.checks for f in r.findings if f.check_id == "gpu-lost"]
    assert finding.gpu == 1 and "nvidia-smi -r -i 1" in (finding.fix or "")


def test_not_supported_fields_are_null_and_render_as_na(tmp_path: Path) -> None:
    report = collect_scenario("not_supported_fields", tmp_path)
    [gpu] = report.gpus
    assert gpu.power_draw_mw is None and gpu.ecc_uncorrected_volatile is None
    assert gpu.mig_mode_current is None and gpu.persistence_mode is None
    assert gpu.processes is None
    assert gpu.temperature_c == 47  # nvmlDeviceGetTemperatureV missing: legacy call used
    assert gpu.clocks_event_reasons == ("gpu_idle",)  # ...ClocksEventReasons missing: old name
    assert gpu.retired_pages_pending is None and gpu.remapped_rows_pending is None
    errors = {e.field: e.error for e in gpu.field_errors}
    assert errors == {
        "power_draw_mw": "NotSupported",
        "power_limit_mw": "NotSupported",
        "power_default_limit_mw": "NotSupported",
        "persistence_mode": "NotSupported",
        "mig_mode": "NotSupported",
        "ecc_uncorrected_volatile": "NotSupported",
        "retired_pages_pending": "NotSupported",  # GeForce: neither retirement nor remapping
        "remapped_rows": "NotSupported",
        "processes": "NotSupported",
    }
    out = StringIO()
    render_human(report, _console(out))
    lines = out.getvalue().splitlines()
    row = next(line for line in lines if "GTX 1080 Ti" in line)
    assert row.split()[-2:] == ["47°C", "n/a"]  # temperature, power
    flowing = " ".join(" ".join(lines).split())
    assert "mode default · persistence n/a · MIG n/a · ECC errors n/a" in flowing


def test_machine_strings_are_not_markup_or_emoji(tmp_path: Path) -> None:
    out = StringIO()
    render_human(collect_scenario("h100_8x_node", tmp_path), _console(out))
    assert "0000:ab:00.0" in out.getvalue()  # rich would turn ":ab:" into an emoji


def test_mig_instances_are_listed_with_their_uuids(tmp_path: Path) -> None:
    [gpu] = collect_scenario("a100_mig_two_instances", tmp_path).gpus
    assert gpu.mig_mode_current is True and gpu.utilization_gpu_percent is None
    assert [m.uuid for m in gpu.mig_instances or ()] == [
        "MIG-3c1e4b2a-7d6f-5a8e-9b0c-1d2e3f4a5b6c",
        "MIG-8f7e6d5c-4b3a-5291-8a7b-6c5d4e3f2a1b",
    ]


def test_exclusive_owner_is_named_with_its_process_name(tmp_path: Path) -> None:
    report = collect_scenario("exclusive_owned", tmp_path)
    [finding] = [f for r in report.checks for f in r.findings if f.check_id == "exclusive-busy"]
    assert "PID 48213 (python3)" in finding.message
    assert "nvidia-smi -i 0 -c DEFAULT" in (finding.fix or "")


def test_process_names_are_not_guessed_inside_a_container(tmp_path: Path) -> None:
    """NVML reports host PIDs: in a container /proc/<pid> may be a different process."""
    report = collect_scenario("exclusive_owned", tmp_path, host={"container": "docker"})
    [process] = report.gpus[0].processes or ()
    assert (process.pid, process.name) == (48213, None)


def test_driver_too_old_names_versions_and_a_wheel_that_fits(tmp_path: Path) -> None:
    report = collect_scenario("driver_too_old", tmp_path)
    [finding] = [f for r in report.checks for f in r.findings if f.check_id == "driver-too-old"]
    assert finding.severity == "fail"
    # the driver/torch pair and torch's warning of pytorch/pytorch#112553, a real GKE node
    assert "CUDA 12.1; driver 470.182.03 supports CUDA 11.4" in finding.message
    assert "found version 11040" in finding.message
    assert "≥ 530.30.02 (CUDA 12.1)" in (finding.fix or "") and "whl/cu118" in (finding.fix or "")


def test_no_torch_leaves_torch_out_and_skips_torch_checks(tmp_path: Path) -> None:
    report = collect_scenario("h100_8x_node", tmp_path, torch=False)
    assert report.torch is None
    assert all(g.torch_index is None for g in report.gpus)
    status = {r.check_id: (r.status, r.reason) for r in report.checks}
    not_probed = ("not_applicable", "PyTorch not probed (--no-torch)")
    assert status["torchvision-mismatch"] == status["cuda-unavailable"] == not_probed
    assert status["gpu-lost"] == status["memory-held"] == ("pass", None)
    assert usable_gpu_count(report) == 8


def _console(out: StringIO):  # type: ignore[no-untyped-def]
    return make_console(file=out, width=100, color=False)


def test_device_section_at_a_fixed_width(tmp_path: Path) -> None:
    out = StringIO()
    render_human(collect_scenario("workstation_rtx4090", tmp_path), _console(out))
    lines = [line.rstrip() for line in out.getvalue().splitlines()]
    start = lines.index("Devices")
    assert lines[start : start + 7] == [
        "Devices",
        "physical (NVML) 1, visible to torch 1",
        "GPU  cuda  name              bus id        CC   memory used/total  util  temp  power",
        "0    0     GeForce RTX 4090  0000:01:00.0  8.9  1.2/24.0 GiB       3%    41°C  27/450 W",
        "GPU 0 GPU-5f3a2b1c-8d4e-4f6a-9b7c-0d1e2f3a4b5c · mode default · persistence off · "
        "MIG n/a · ECC",
        "      errors n/a · SM 210/3120 MHz (idle, SW power cap) · PCIe Gen1 x16 of Gen4 x16 · "
        "processes 2231",
        "      Xorg 0.4 GiB",
    ]


def test_version_mismatch_names_both_versions(tmp_path: Path) -> None:
    report = collect_scenario("driver_lib_mismatch", tmp_path)
    assert report.driver.nvml_library_path is not None
    assert report.driver.nvml_library_path.endswith("libnvidia-ml.so.550.107.02")
    [finding] = [
        f for r in report.checks for f in r.findings if f.check_id == "driver-lib-mismatch"
    ]
    assert finding.message.startswith(
        "Driver/library version mismatch: user-space libnvidia-ml 550.107.02 does not match "
        "kernel module 550.90.07."
    )
    assert (finding.fix or "").startswith("reboot")
