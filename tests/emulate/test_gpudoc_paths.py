"""gpudoc's own GPU paths on emulated devices (issue 13): the smoke test on two GPUs, and the
torch half of `gpudoc info` joined to a fake NVML scenario by UUID."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import REPO, RunGpudoc

from gpudoc.emulate.patches import emulated_cuda
from gpudoc.info import torch_probe
from gpudoc.info.collect import collect_info, parse_probe_output
from gpudoc.info.kernel_log import parse_kernel_log

sys.path.insert(0, str(REPO / "tests" / "info"))
from nvml_fake import FakeNvml

UUIDS = [f"GPU-00000000-0000-0000-0000-{index:012d}" for index in range(2)]


@pytest.mark.slow
def test_smoke_all_devices_on_two_emulated_gpus_fails_only_the_flipped_one(
    run_gpudoc: RunGpudoc, tmp_path: Path
) -> None:
    """Two CUDA workers are planned (the device count is asked of a child that inherits the
    emulation), each trains on its cuda:N, the identical GPUs vote bitwise, and a bit flipped on
    cuda:1 (worker 2, after the CPU's 0 and cuda:0's 1) fails that device alone."""
    report_path = tmp_path / "smoke.json"
    done = run_gpudoc(
        *("run", "--emulate-cuda", "--devices", "2", "-m", "gpudoc", "smoke", "--all-devices"),
        *("--json", str(report_path), "--timeout", "900"),
        env={"GPUDOC_SMOKE_INJECT": "bitflip:2"},
        timeout=1200,
    )
    assert done.returncode == 1, done.stderr
    results = {r["device"]: r for r in json.loads(report_path.read_text())["results"]}
    assert sorted(results) == ["cpu", "cuda:0", "cuda:1"]
    gpus = [results[name]["info"] for name in ("cuda:0", "cuda:1")]
    assert [gpu["name"] for gpu in gpus] == ["NVIDIA A100-SXM4-80GB"] * 2
    assert gpus[0]["uuid"] != gpus[1]["uuid"]
    assert results["cuda:0"]["status"] in ("PASS", "WARN")  # WARN: throughput on a busy CPU
    assert results["cuda:1"]["status"] == "FAIL"
    assert "cross_device: SDC suspect: run A differs" in results["cuda:1"]["reason"]
    assert "cuda:0" in done.stdout and "cuda:1" in done.stdout


def test_info_torch_probe_reports_emulated_gpus_joined_to_nvml_by_uuid(tmp_path: Path) -> None:
    with emulated_cuda(device_count=2):
        probed = torch_probe.probe()
    assert probed["cuda_available"] is True and probed["device_count"] == 2
    assert [d["uuid"] for d in probed["devices"]] == UUIDS
    assert {d["name"] for d in probed["devices"]} == {"NVIDIA A100-SXM4-80GB"}

    scenario = json.loads((REPO / "fixtures" / "nvml" / "cvd_uuid.json").read_text())
    nvml = scenario["nvml"]
    for device, uuid in zip(nvml["devices"], reversed(UUIDS), strict=True):
        device["nvmlDeviceGetUUID"] = uuid  # NVML's order differs from torch's: join by UUID
    output = json.dumps(probed) + "\n"
    report = collect_info(
        torch_probe=lambda: lambda: parse_probe_output(0, output, ""),
        nvml_lib=FakeNvml(nvml),
        root=str(tmp_path),
        environ={},
        kernel_log=lambda: lambda: parse_kernel_log("/dev/kmsg", [], 86400.0),
        nvcc=lambda: lambda: (None, None),
    )
    assert report.torch is not None and len(report.torch.devices) == 2
    assert [gpu.torch_index for gpu in report.gpus] == [1, 0]
