"""`gpudoc smoke` end to end on the CPU: real training in real worker processes.

These are the slow tests of the area (a few seconds of training each); most use --quick.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import RunGpudoc, stretch
from smoke_helpers import write_cifar

pytestmark = pytest.mark.slow

SCHEMA = json.loads((Path(__file__).parents[2] / "gpudoc/smoke/schema.json").read_text())


def _report(stdout: str) -> dict[str, Any]:
    report = json.loads(stdout)
    jsonschema.validate(report, SCHEMA)
    return report


def _checks(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in result["checks"]}


def test_two_cpu_workers_agree_bitwise_and_bitflips_are_caught(run_gpudoc: RunGpudoc) -> None:
    """Three workers, full recipe: 0 passes; 1 has one bit flipped in run A, which leaves loss
    and accuracy alone: A and B differ, the re-run C matches B (a one-off: WARN), and the vote
    fails it because its repeated result equals its peer's; 2 has a bit flipped in every run:
    A, B and C all differ and it fails on its own."""
    devices = ["--device", "cpu"] * 3
    inject = {"GPUDOC_SMOKE_INJECT": "bitflip:1,flaky:2"}
    done = run_gpudoc("smoke", *devices, "--json", env=inject)
    assert done.returncode == 1, done.stderr
    report = _report(done.stdout)
    good, flipped, flaky = report["results"]
    assert [good["status"], flipped["status"], flaky["status"]] == ["PASS", "FAIL", "FAIL"]
    for check in (
        "finite",
        "loss_falls",
        "heldout_accuracy",
        "lockstep_logits",
        "lockstep_grads",
        "self_consistency",
        "save_load",
        "eval_on_device",
    ):
        assert _checks(good)[check]["verdict"] == "pass", check
    assert _checks(good)["lockstep_grads"]["value"] < 1e-5
    assert good["heldout_accuracy"] >= 0.8 and good["loss_last"] < good["loss_first"] / 2
    assert [t["batch_size"] for t in good["throughput"]] == [4, 256]
    assert good["run_fingerprints"] == [good["fingerprint"]] * 2  # A == B: no re-run
    assert _checks(good)["cross_device"]["verdict"] == "pass" and good["agreement"] == "2/2"

    run_a, run_b, run_c = flipped["run_fingerprints"]
    assert run_a != run_b == run_c == good["fingerprint"] == flipped["fingerprint"]
    consistency = _checks(flipped)["self_consistency"]
    assert consistency["verdict"] == "warn"
    assert "runs A and B differ; re-run C matches B" in consistency["detail"]
    assert _checks(flipped)["heldout_accuracy"]["verdict"] == "pass"  # only bits see it
    vote = _checks(flipped)["cross_device"]
    assert (vote["verdict"], vote["value"], flipped["agreement"]) == ("fail", "A", "run A differs")
    assert flipped["reason"].startswith("cross_device: SDC suspect: run A differs from the bits")
    assert flipped["reason"].endswith("(+1 more: self_consistency) [injected fault: bitflip]")

    assert len(set(flaky["run_fingerprints"])) == 3
    assert flaky["reason"].startswith("self_consistency: runs A, B and re-run C all differ")
    assert flaky["reason"].endswith("[injected fault: flaky]")
    assert _checks(flaky)["cross_device"]["detail"] == "failed its own checks"
    assert report["overall"] == "FAIL"
    assert report["golden"] is None and report["started_utc"].endswith("Z")


def test_a_bitflip_fails_a_device_with_no_peer_to_compare(run_gpudoc: RunGpudoc) -> None:
    """Alone, run A differs and B and the re-run C agree: nothing shows the stack repeats
    itself, and the deterministic settings promise equal runs, so the device fails (exit 1)."""
    done = run_gpudoc(
        "smoke", "--device", "cpu", "--json", env={"GPUDOC_SMOKE_INJECT": "bitflip:0"}
    )
    assert done.returncode == 1, done.stderr
    (result,) = _report(done.stdout)["results"]
    assert (result["status"], result["agreement"]) == ("FAIL", "run A differs")
    assert _checks(result)["self_consistency"]["verdict"] == "warn"
    assert _checks(result)["cross_device"]["verdict"] == "fail"
    assert result["reason"].startswith("cross_device: run A differs once")
    assert result["reason"].endswith("[injected fault: bitflip]")


def test_a_quick_bitflip_between_two_identical_devices_fails_never_passes(
    run_gpudoc: RunGpudoc,
) -> None:
    """--quick trains once: two identical devices that disagree bitwise have no majority to
    tell which is wrong, so both FAIL, each naming the other; the flipped one is among them."""
    done = run_gpudoc(
        "smoke", "--quick", "--device", "cpu", "--device", "cpu", "--json",
        env={"GPUDOC_SMOKE_INJECT": "bitflip:1"},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    first, flipped = _report(done.stdout)["results"]
    assert (first["status"], flipped["status"]) == ("FAIL", "FAIL")
    assert first["agreement"] == flipped["agreement"] == "no majority of 2"
    assert f"differs bitwise from device 1 (cpu) {flipped['fingerprint'][:12]}" in first["reason"]
    assert f"device 0 (cpu) {first['fingerprint'][:12]}" in flipped["reason"]
    assert flipped["reason"].endswith("[injected fault: bitflip]")


def test_crash_and_nan_fail_only_their_worker_also_one_at_a_time(run_gpudoc: RunGpudoc) -> None:
    devices = ["--device", "cpu"] * 3
    done = run_gpudoc(
        "smoke", "--quick", "--serial", *devices, "--json",
        env={"GPUDOC_SMOKE_INJECT": "crash:0,nan:1"},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    crashed, nan, clean = _report(done.stdout)["results"]
    assert crashed["status"] == "FAIL" and "crashed" in crashed["reason"]
    assert "SIGSEGV" in crashed["reason"] and "[injected fault: crash]" in crashed["reason"]
    assert nan["status"] == "FAIL" and nan["reason"].startswith("finite:")
    assert "[injected fault: nan]" in nan["reason"]
    assert clean["status"] == "PASS" and clean["injected_fault"] is None
    assert _checks(clean)["self_consistency"]["verdict"] == "skip"  # --quick: one run


def test_a_hung_worker_is_killed_at_its_timeout(run_gpudoc: RunGpudoc) -> None:
    timeout = max(30, round(stretch(5)))  # room for torch's import and 10 steps under load
    started = time.monotonic()
    done = run_gpudoc(
        "smoke",
        "--quick",
        "--device",
        "cpu",
        "--steps",
        "20",
        "--timeout",
        str(timeout),
        "--json",
        env={"GPUDOC_SMOKE_INJECT": "hang:0"},
    )
    assert time.monotonic() - started < 3 * timeout  # killed at its timeout, not left to run
    assert done.returncode == 1, done.stderr
    (hung,) = _report(done.stdout)["results"]
    assert hung["status"] == "HUNG"
    assert hung["reason"].startswith(f"no result within {timeout} s; killed during train A 10/20")
    assert hung["reason"].endswith("[injected fault: hang]")


def test_trains_on_a_real_format_cifar_directory(run_gpudoc: RunGpudoc, tmp_path: Path) -> None:
    write_cifar(tmp_path / "data")
    out = tmp_path / "report.json"
    done = run_gpudoc(
        "smoke",
        "--quick",
        "--device",
        "cpu",
        "--data-root",
        str(tmp_path / "data"),
        "--json",
        str(out),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS: 1 of 1 devices passed" in done.stdout  # the table still prints
    (result,) = _report(out.read_text())["results"]
    assert result["status"] == "PASS"
    assert _checks(result)["heldout_accuracy"]["threshold"] == 0.2  # the real-data threshold
    assert result["heldout_accuracy"] > 0.5
    assert done.stderr == ""  # not a terminal: no progress display


def test_the_tutorial_recipe_also_passes(run_gpudoc: RunGpudoc) -> None:
    done = run_gpudoc("smoke", "--recipe", "tutorial", "--quick", "--device", "cpu", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = _report(done.stdout)
    recipe = report["config"]["recipe"]
    assert (recipe["batch_size"], recipe["lr"], recipe["momentum"]) == (4, 0.001, 0.9)
    (result,) = report["results"]
    assert result["status"] == "PASS" and result["heldout_accuracy"] >= 0.5
