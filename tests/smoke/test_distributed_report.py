"""Judging a job from what its ranks posted: vote, collectives, DDP, lost ranks, the tables."""

from __future__ import annotations

import io
import json
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import jsonschema

from gpudoc.console import make_console
from gpudoc.jsondata import from_json
from gpudoc.smoke import job_report, render
from gpudoc.smoke.model import (
    CheckResult,
    DeviceInfo,
    DeviceResult,
    DistributedReport,
    RankInfo,
    SmokeConfig,
)

CONFIG = SmokeConfig(timeout_s=60.0)
HERE = Path(__file__).parents[2] / "gpudoc/smoke"
SCHEMA = json.loads((HERE / "schema_distributed.json").read_text())
SMOKE_SCHEMA = json.loads((HERE / "schema.json").read_text())


def validate(report: dict[str, Any]) -> None:
    """The job's schema, and each rank's device smoke against gpudoc smoke's own."""
    jsonschema.validate(report, SCHEMA)
    result = {"$ref": "#/$defs/DeviceResult", "$defs": SMOKE_SCHEMA["$defs"]}
    for rank in report["ranks"]:
        if rank["smoke"] is not None:
            jsonschema.validate(rank["smoke"], result)


A100 = DeviceInfo(device="cuda:0", name="NVIDIA A100-SXM4-80GB", kind="cuda", sm_count=108)


def _smoke(rank: int, fingerprint: str = "f" * 64, status: str = "PASS") -> dict[str, Any]:
    check = CheckResult("finite", "pass" if status == "PASS" else "fail", 0, 0)
    result = DeviceResult(
        rank, "cuda:0", status, info=A100, checks=(check,), fingerprint=fingerprint, seconds=4.2
    )
    return result.to_dict()  # type: ignore[arg-type]


def _collectives(wrong: int = 0, sources: dict[str, int] | None = None) -> dict[str, Any]:
    return {
        "all_reduce_wrong": wrong,
        "all_gather_wrong": sum((sources or {}).values()),
        "all_gather_wrong_from": sources or {},
        "broadcast_wrong": 0,
        "bandwidth_bytes": 16 * 2**20,
        "bandwidth_seconds": 0.002,
    }


def _ddp(fingerprint: str = "d" * 64, err: float | None = 1e-7) -> dict[str, Any]:
    return {"fingerprint": fingerprint, "finite": True, "rel_err_vs_reference": err}


def _posted(world: int = 4, hosts: int = 2) -> dict[str, dict[int, dict[str, Any]]]:
    per_node = world // hosts
    info = {
        r: asdict(RankInfo(r, r % per_node, f"node{r // per_node}", 100 + r, "cuda:0", "torchrun"))
        for r in range(world)
    }
    return {
        "info": info,
        "smoke": {r: _smoke(r) for r in range(world)},
        "collectives": {r: _collectives() for r in range(world)},
        "ddp": {r: _ddp() for r in range(world)},
        "fault": {},
        "stopped": {},
    }


def _judge(posted: Any, world: int = 4, **kwargs: Any) -> DistributedReport:
    ran = kwargs.pop("ran", ("collectives", "ddp", "report"))
    errors = kwargs.pop("gate_errors", {})
    return job_report.assemble(CONFIG, world, "nccl", posted, ran, errors, 12.0, **kwargs)


def _rank(report: DistributedReport, rank: int) -> Any:
    return report.ranks[rank]


def test_a_healthy_job_passes_with_bus_bandwidth() -> None:
    report = _judge(_posted())
    assert report.overall == "PASS"
    assert [r.status for r in report.ranks] == ["PASS"] * 4
    assert _rank(report, 2).smoke.agreement == "4/4"  # voted across the whole job
    # 16 MiB in 2 ms: algbw 8.39 GB/s, busbw x 2(n-1)/n = 12.58 GB/s
    assert report.all_reduce_busbw_gb_per_s == 12.583
    data = json.loads(render.distributed_json(report))
    validate(data)
    assert next(iter(data)) == "schema_version"
    assert from_json(DistributedReport, data) == report


def test_a_rank_outside_the_fingerprint_majority_is_named() -> None:
    posted = _posted()
    posted["smoke"][3] = _smoke(3, fingerprint="e" * 64)
    report = _judge(posted)
    assert report.overall == "FAIL"
    assert [r.status for r in report.ranks] == ["PASS", "PASS", "PASS", "FAIL"]
    assert "SDC suspect" in (_rank(report, 3).reason or "")


def test_wrong_collective_elements_are_counted_per_rank() -> None:
    posted = _posted()
    posted["collectives"][1] = _collectives(wrong=3, sources={"2": 5})
    report = _judge(posted)
    row = _rank(report, 1)
    assert row.status == "FAIL"
    assert row.check("all_reduce").value == 3
    assert row.check("all_gather").value == 5
    assert "from rank 2" in (row.check("all_gather").detail or "")
    assert _rank(report, 0).check("all_reduce").value == 0


def test_ddp_tie_of_two_is_broken_by_the_float64_reference() -> None:
    posted = _posted(world=2, hosts=1)
    posted["ddp"][1] = _ddp(fingerprint="b" * 64, err=1.6e-3)  # a flipped mantissa bit
    report = _judge(posted, world=2)
    assert [r.status for r in report.ranks] == ["PASS", "FAIL"]
    assert _rank(report, 1).check("ddp_identical").verdict == "fail"
    assert _rank(report, 1).check("ddp_vs_single").value == 1.6e-3


def test_ranks_that_never_arrive_are_named_hung_or_dead() -> None:
    posted = _posted()
    del posted["smoke"][2]  # rank 2 died during its smoke; rank 3 hung before the collectives
    error = "ranks 2, 3 did not arrive within 60 s"
    report = _judge(posted, ran=(), gate_errors={"collectives": error}, dead={2})
    assert [r.status for r in report.ranks] == ["PASS", "PASS", "FAIL", "HUNG"]
    validate(json.loads(render.distributed_json(report)))
    assert "died before collectives" in (_rank(report, 2).reason or "")
    assert "did not reach collectives within 60 s" in (_rank(report, 3).reason or "")
    assert report.overall == "HUNG"


def test_a_stopped_rank_is_hung_with_its_last_heartbeat_not_dead() -> None:
    posted = _posted()
    del posted["smoke"][2]  # rank 2 was SIGSTOPped during its smoke: alive, but its beat stopped
    error = "rank 2 did not arrive: no heartbeat for 20 s"
    beats = {2: 61.4}
    frozen = {2: "its process is stopped (SIGSTOP?)"}
    report = _judge(posted, ran=(), gate_errors={"collectives": error}, frozen=frozen, beats=beats)
    assert [r.status for r in report.ranks] == ["PASS", "PASS", "HUNG", "PASS"]
    reason = _rank(report, 2).reason or ""
    assert (
        "hung before collectives: its process is stopped (SIGSTOP?), no heartbeat for 61 s"
        in reason
    )
    assert "died" not in reason


def test_ranks_the_launcher_stopped_are_bystanders_not_culprits() -> None:
    posted = _posted()
    posted["stopped"] = {0: {}, 2: {}, 3: {}}
    report = _judge(posted, ran=(), gate_errors={"launcher": "SIGTERM"}, dead={1, 2, 3})
    assert [r.status for r in report.ranks] == ["PASS", "FAIL", "PASS", "PASS"]
    assert _rank(report, 2).check("arrived").verdict == "skip"
    assert report.overall == "FAIL"


def test_an_interrupted_job_never_passes() -> None:
    report = _judge(_posted(), ran=(), gate_errors={"collectives": "Connection closed by peer"})
    assert [r.status for r in report.ranks] == ["PASS"] * 4
    assert report.overall == "FAIL"


def test_a_collective_broken_by_a_lost_peer_does_not_blame_the_survivor() -> None:
    posted = _posted(world=2, hosts=1)
    posted["collectives"] = {0: {"error": "RuntimeError: Connection closed by peer"}}
    report = _judge(posted, world=2, ran=("collectives",), gate_errors={"ddp": "x"}, dead={1})
    assert _rank(report, 0).status == "PASS"
    assert _rank(report, 0).check("collectives").verdict == "skip"
    assert _rank(report, 1).status == "FAIL"


def test_two_ranks_on_one_gpu_are_both_named() -> None:
    posted = _posted()
    for rank in (0, 1, 2, 3):
        info = replace(A100, uuid=f"GPU-{min(rank, 2)}")  # ranks 2 and 3 got the same GPU
        posted["smoke"][rank] = {**posted["smoke"][rank], "info": asdict(info)}
    report = _judge(posted)
    assert [r.status for r in report.ranks] == ["PASS", "PASS", "FAIL", "FAIL"]
    assert "shares its GPU with rank 3" in (_rank(report, 2).reason or "")


def test_version_skew_is_noted() -> None:
    posted = _posted()
    posted["info"][3] = {**posted["info"][3], "torch_version": "2.12.1"}
    assert any("torch_version" in note for note in _judge(posted).notes)


def test_the_text_has_one_table_per_node_and_names_the_failing_rank() -> None:
    posted = _posted()
    posted["smoke"][3] = replace(
        from_json(DeviceResult, _smoke(3, status="FAIL")), reason="finite: 1 non-finite losses"
    ).to_dict()
    report = _judge(posted)
    out = io.StringIO()
    render.print_distributed(report, make_console(file=out, width=200, color=False))
    text = out.getvalue()
    assert "node node0 (ranks 0-1)" in text and "node node1 (ranks 2-3)" in text
    assert "rank 3 on node1 FAIL: smoke: finite: 1 non-finite losses" in text
    assert "all_reduce bus bandwidth: 12.58 GB/s at 16 MiB" in text
    assert text.rstrip().endswith("FAIL: 3 of 4 ranks on 2 nodes passed in 12.0 s (nccl)")
