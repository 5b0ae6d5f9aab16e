"""Invariants on a real NVIDIA GPU (skipped elsewhere): NVML and torch agree about the devices.

Run on a GPU machine; `gpudoc info --json` there also makes a fixture worth recording."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import RunGpudoc

SCHEMA = json.loads((Path(__file__).parents[2] / "gpudoc/info/schema.json").read_text())

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    import subprocess
    import sys

    from conftest import gpudoc_env

    result = subprocess.run(
        [sys.executable, "-m", "gpudoc", "info", "--json", "--require-gpu"],
        capture_output=True,
        text=True,
        env=gpudoc_env(),
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    jsonschema.validate(data, SCHEMA)
    return data


def test_every_torch_device_is_joined_to_exactly_one_nvml_gpu(report: dict[str, Any]) -> None:
    import torch

    joined = sorted(g["torch_index"] for g in report["gpus"] if g["torch_index"] is not None)
    mig = any(g["mig_mode_current"] for g in report["gpus"])
    if not mig:
        assert joined == list(range(torch.cuda.device_count()))
    assert report["torch"]["device_count"] == torch.cuda.device_count()
    assert report["driver"]["physical_gpu_count"] >= len(joined)


def test_nvml_and_torch_agree_on_each_device(report: dict[str, Any]) -> None:
    import torch

    for gpu in report["gpus"]:
        if gpu["torch_index"] is None or gpu["mig_mode_current"]:
            continue
        props = torch.cuda.get_device_properties(gpu["torch_index"])
        assert gpu["compute_capability"] == f"{props.major}.{props.minor}"
        assert gpu["memory_total_bytes"] >= props.total_memory
        assert gpu["arch_supported_by_torch"] is True


def test_memory_and_power_are_consistent(report: dict[str, Any]) -> None:
    for gpu in report["gpus"]:
        if gpu["memory_total_bytes"] is not None:
            assert 0 <= gpu["memory_used_bytes"] <= gpu["memory_total_bytes"]
            assert gpu["memory_free_bytes"] <= gpu["memory_total_bytes"]
        if gpu["power_draw_mw"] is not None and gpu["power_limit_mw"] is not None:
            assert 0 < gpu["power_limit_mw"] < 2_000_000  # milliwatts, below 2 kW


def test_health_fields_are_read_and_in_range(report: dict[str, Any]) -> None:
    from gpudoc.info.nvml_health import CLOCKS_EVENT_REASONS

    for gpu in report["gpus"]:
        if gpu["lost"]:
            continue
        names = set(CLOCKS_EVENT_REASONS.values())
        assert gpu["clocks_event_reasons"] is not None  # every driver since 2013 answers it
        assert set(gpu["clocks_event_reasons"]) <= names
        if gpu["clock_sm_mhz"] is not None and gpu["clock_sm_max_mhz"] is not None:
            assert 0 <= gpu["clock_sm_mhz"] < 10_000 and 0 < gpu["clock_sm_max_mhz"] < 10_000
        if gpu["power_default_limit_mw"] is not None:
            assert 0 < gpu["power_default_limit_mw"] < 2_000_000
        if gpu["remapped_rows_pending"] is not None:
            assert gpu["remapped_rows_correctable"] >= 0 <= gpu["remapped_rows_uncorrectable"]
    log = report["host"]["kernel_log"]
    assert (log["source"] is None) == (log["unreadable_reason"] is not None)


def test_driver_facts_are_present(report: dict[str, Any]) -> None:
    driver = report["driver"]
    assert driver["nvml_error"] is None
    assert driver["driver_version"] and driver["cuda_driver_version"]
    assert report["summary"]["usable_gpus"] >= 1


def test_no_torch_path_sees_the_same_physical_gpus(
    report: dict[str, Any], run_gpudoc: RunGpudoc
) -> None:
    fast = json.loads(run_gpudoc("info", "--no-torch", "--json").stdout)
    assert [g["uuid"] for g in fast["gpus"]] == [g["uuid"] for g in report["gpus"]]
