"""Checks changed so that reports reach the threads' verdicts give the same verdicts on the live
path (a recorded machine through the fake NVML): one model, one doctor."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from info_scenarios import collect_scenario
from report_helpers import result

from gpudoc.info.doctor import run_doctor
from gpudoc.info.model import FieldError, InfoReport


@pytest.fixture
def healthy(tmp_path: Path) -> InfoReport:
    return collect_scenario("workstation_rtx4090", tmp_path)


def _doctor(report: InfoReport) -> InfoReport:
    return run_doctor(dataclasses.replace(report, checks=()))


def test_a_gpu_nvml_cannot_open_fails_on_the_live_path(healthy: InfoReport) -> None:
    unopened = dataclasses.replace(
        healthy.gpus[0], name=None, field_errors=(FieldError("handle", "Unknown"),)
    )
    report = _doctor(dataclasses.replace(healthy, gpus=(unopened,)))
    assert result(report, "gpu-lost").status == "fail"
    denied = dataclasses.replace(unopened, field_errors=(FieldError("handle", "NoPermission"),))
    report = _doctor(dataclasses.replace(healthy, gpus=(denied,)))
    assert result(report, "gpu-lost").status == "pass"  # dev-permission explains it


def test_torch_1x_pairing_and_cuda_10_floors_on_the_live_path(healthy: InfoReport) -> None:
    torch = healthy.torch
    assert torch is not None and torch.torchvision is not None
    old = dataclasses.replace(
        torch,
        version="1.9.0+cu102",
        cuda_version="10.2",
        torchvision=dataclasses.replace(torch.torchvision, version="0.7.0+cu102"),
    )
    driver = dataclasses.replace(
        healthy.driver, driver_version="418.87.00", cuda_driver_version="10.1"
    )
    report = _doctor(dataclasses.replace(healthy, torch=old, driver=driver))
    assert (
        "pairs with torchvision 0.10.x"
        in result(report, "torchvision-mismatch").findings[0].message
    )
    assert result(report, "driver-too-old").status == "fail"
