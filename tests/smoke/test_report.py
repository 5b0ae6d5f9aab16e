"""The report: JSON round trip and schema, the cross-device vote, verdicts, and the text table."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from gpudoc.console import make_console
from gpudoc.jsondata import from_json
from gpudoc.smoke import render
from gpudoc.smoke.model import (
    CheckResult,
    DeviceInfo,
    DeviceResult,
    SmokeConfig,
    SmokeReport,
    Throughput,
)
from gpudoc.smoke.run import (
    cpu_threads,
    overall,
    parse_devices,
    plan,
    slow_peers,
    vote,
    with_speedups,
)

SCHEMA = json.loads((Path(__file__).parents[2] / "gpudoc/smoke/schema.json").read_text())
H100 = DeviceInfo(
    device="cuda:0",
    name="NVIDIA H100 80GB HBM3",
    kind="cuda",
    compute_capability="9.0",
    sm_count=132,
    memory_total_bytes=85_045_624_832,
    torch_version="2.13.0+cu128",
    cuda_version="12.8",
    cudnn_version=91002,
    cpu_capability="AVX512",
    threads=1,
    deterministic=True,
    fp32_precision_matmul="ieee",
    fp32_precision_conv="ieee",
)
PASSED = (CheckResult("finite", "pass", 0, 0), CheckResult("loss_falls", "pass", 0.1, 0.6))


def gpu(index: int, fingerprint: str, status: str = "PASS") -> DeviceResult:
    info = replace(H100, device=f"cuda:{index}", uuid=f"GPU-{index}")
    return DeviceResult(
        index=index,
        device=f"cuda:{index}",
        status=status,  # type: ignore[arg-type]
        info=info,
        checks=PASSED,
        loss_first=2.3187,
        loss_last=0.0512,
        heldout_accuracy=0.8984,
        lockstep_max_rel_err=3.1e-7,
        fingerprint=fingerprint * 64,
        data_sha256="d" * 64,
        throughput=(Throughput(4, 1843.2), Throughput(256, 412_000.5)),
        seconds=4.1,
    )


def test_identical_devices_vote_and_the_dissenter_is_an_sdc_suspect() -> None:
    results = vote([gpu(0, "a"), gpu(1, "a"), gpu(2, "b"), gpu(3, "a")])
    assert [r.status for r in results] == ["PASS", "PASS", "FAIL", "PASS"]
    assert results[0].agreement == "3/4"
    suspect = results[2].check("cross_device")
    assert suspect is not None and suspect.verdict == "fail"
    assert results[2].reason == "cross_device: SDC suspect: differs from 3 of 4 identical devices"


def test_no_majority_fails_each_device_naming_the_other_and_a_lone_device_is_not_checked() -> None:
    split = vote([gpu(0, "a"), gpu(1, "b")])
    assert [r.status for r in split] == ["FAIL", "FAIL"]  # one of them is wrong: never a pass
    assert split[0].reason == (
        "cross_device: SDC suspect: no majority among 2 identical devices; aaaaaaaaaaaa here, "
        "differs bitwise from device 1 (cuda:1) bbbbbbbbbbbb: one of them computes wrong bits"
    )
    assert "device 0 (cuda:0) aaaaaaaaaaaa" in (split[1].reason or "")
    three = vote([gpu(0, "a"), gpu(1, "b"), gpu(2, "c")])
    assert [r.agreement for r in three] == ["no majority of 3"] * 3
    assert "device 1 (cuda:1) bbbbbbbbbbbb, 2 (cuda:2) cccccccccccc" in (three[0].reason or "")
    other_model = replace(gpu(2, "c"), info=replace(H100, name="NVIDIA A100-SXM4-80GB"))
    alone = vote([gpu(0, "a"), other_model])
    assert [r.agreement for r in alone] == ["alone", "alone"]
    assert [r.status for r in alone] == ["PASS", "PASS"]


def test_gpus_on_hosts_with_other_cpus_still_vote_together() -> None:
    other_host = replace(gpu(1, "b"), info=replace(H100, threads=8, cpu_capability="AVX2"))
    assert [r.agreement for r in vote([gpu(0, "a"), other_host])] == ["no majority of 2"] * 2
    cpu_info = replace(H100, kind="cpu")
    cpus = [
        replace(gpu(0, "a"), info=cpu_info),
        replace(gpu(1, "b"), info=replace(cpu_info, threads=2)),
    ]
    assert [r.agreement for r in vote(cpus)] == ["alone", "alone"]  # CPU bits depend on threads


def test_a_failed_device_does_not_vote() -> None:
    results = vote([gpu(0, "a"), gpu(1, "b", status="FAIL"), gpu(2, "a")])
    assert [r.agreement for r in results] == ["2/2", None, "2/2"]
    skipped = results[1].check("cross_device")
    assert skipped is not None and skipped.verdict == "skip"


def test_overall_verdict_and_strict() -> None:
    assert overall([gpu(0, "a")]) == "PASS"
    warned = [gpu(0, "a"), gpu(1, "a", status="WARN")]
    assert overall(warned) == "WARN" and overall(warned, strict=True) == "FAIL"
    assert overall(vote([gpu(0, "a"), gpu(1, "b")])) == "FAIL"
    assert overall([gpu(0, "a"), gpu(1, "a", status="HUNG")]) == "HUNG"


def test_a_slow_gpu_among_identical_peers_is_a_warning() -> None:
    slow = replace(gpu(2, "a"), throughput=(Throughput(4, 1800.0), Throughput(256, 200_000.0)))
    results = slow_peers([gpu(0, "a"), gpu(1, "a"), slow])
    assert [r.status for r in results] == ["PASS", "PASS", "WARN"]
    check = results[2].check("throughput_peers")
    assert check is not None and check.value == pytest.approx(0.485, abs=1e-3)
    assert (
        results[2].reason
        == "throughput_peers: slow device, 0.48x the median of 3 identical devices"
    )
    cpus = [replace(r, info=replace(H100, kind="cpu")) for r in (gpu(0, "a"), slow)]
    assert slow_peers(cpus) == cpus  # CPU workers share cores: never compared


def test_speedup_over_the_cpu_worker() -> None:
    cpu = replace(
        gpu(0, "c"), device="cpu", throughput=(Throughput(4, 2000.0), Throughput(256, 8000.0))
    )
    results = with_speedups([cpu, gpu(1, "a")])
    assert [t.speedup_vs_cpu for t in results[1].throughput] == [0.92, 51.5]


def report() -> SmokeReport:
    results = tuple(with_speedups(vote([gpu(0, "a"), gpu(1, "a"), gpu(2, "b")])))
    return SmokeReport(SmokeConfig(), results, overall(results), "0.1.0", 6.25)


def test_json_round_trips_and_matches_the_schema() -> None:
    original = report()
    data = json.loads(render.to_json(original))
    jsonschema.validate(data, SCHEMA)
    assert next(iter(data)) == "schema_version"
    assert from_json(SmokeReport, data) == original
    assert (
        from_json(DeviceResult, json.loads(json.dumps(original.results[0].to_dict())))
        == (original.results[0])
    )


def test_table_as_text_at_fixed_width() -> None:
    out = io.StringIO()
    render.print_report(report(), make_console(file=out, width=140, color=False))
    assert out.getvalue().splitlines() == [
        "#  device  name                   status  loss        acc    Δfp64  fingerprint   agree  "
        "        img/s b4/256  ×cpu    s",
        "0  cuda:0  NVIDIA H100 80GB HBM3  PASS    2.32→0.05  0.90  3.1e-07  aaaaaaaaaaaa  2/3    "
        "         1.8k / 412k     -  4.1",
        "1  cuda:1  NVIDIA H100 80GB HBM3  PASS    2.32→0.05  0.90  3.1e-07  aaaaaaaaaaaa  2/3    "
        "         1.8k / 412k     -  4.1",
        "2  cuda:2  NVIDIA H100 80GB HBM3  FAIL    2.32→0.05  0.90  3.1e-07  bbbbbbbbbbbb  differs"
        " (2/3)   1.8k / 412k     -  4.1",
        "  2 cuda:2 FAIL: cross_device: SDC suspect: differs from 2 of 3 identical devices",
        "loss: first → last tenth of the steps · Δfp64: worst error against float64 on the CPU · "
        "agree: identical devices with the same bits (alone:",
        "none here to compare with) · ×cpu: speed-up over the CPU",
        "FAIL: 2 of 3 devices passed in 6.2 s (default recipe, 300 steps × 2 runs)",
    ]


def test_devices_threads_and_plan() -> None:
    assert parse_devices(["CPU", "cuda", "cuda:1"]) == ["cpu", "cuda:0", "cuda:1"]
    assert cpu_threads(n_cpu=1, n_gpu=0, cores=2) == 1
    assert cpu_threads(n_cpu=1, n_gpu=8, cores=32) == 4
    assert cpu_threads(n_cpu=2, n_gpu=0, cores=5) == 2
    specs, missing = plan(["cpu", "cuda:0", "cuda:2", "cpu"], cuda_count=2)
    assert [(s.index, s.device, s.torch_device) for s in specs] == [
        (0, "cpu", "cpu"),
        (1, "cuda:0", "cuda:0"),
        (2, "cpu", "cpu"),
    ]
    assert specs[1].env["CUDA_VISIBLE_DEVICES"] == "0" and missing == ["cuda:2"]


@pytest.mark.parametrize("quick", [True, False])
def test_config_round_trips(quick: bool) -> None:
    config = SmokeConfig(quick=quick, data_root="/data")
    assert from_json(SmokeConfig, json.loads(json.dumps(config.to_dict()))) == config
