"""`gpudoc smoke` end to end on the CPU: real training in real worker processes.

These are the slow tests of the area (a few seconds of training each); most use --quick. The
module's runs start together in the background (background.py); each test reads its own.

The fault-injection matrix's single-node cells, all of them: quick, crash, nan and flaky (one
serial run of five workers), bitflip (two devices) and hang; full, bitflip, flaky, crash and nan
(one run of five workers), bitflip alone, and hang.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from background import Run, Runs, started
from conftest import stretch
from smoke_helpers import write_cifar

pytestmark = pytest.mark.slow

SCHEMA = json.loads((Path(__file__).parents[2] / "gpudoc/smoke/schema.json").read_text())
SMOKE = ("-m", "gpudoc", "smoke")
LIMIT_S = stretch(600)
# A device's watchdog, a hang guard: five workers' full runs side by side with the module's other
# runs on a loaded 2-core machine outlast the default 120 s.
DEVICE_TIMEOUT_S = round(stretch(200))
MODES = ("quick", "full")


def _smoke(*args: str, inject: str = "", waits: bool = False) -> Run:
    guard = () if "--timeout" in args else ("--timeout", str(DEVICE_TIMEOUT_S))
    return Run((*SMOKE, *args, *guard), LIMIT_S, {"GPUDOC_SMOKE_INJECT": inject}, waits=waits)


def _table(data: Path, hang_timeout: int) -> dict[str, Run]:
    """Each test's run, by the test's name."""
    cpu = ("--device", "cpu")
    return {
        "test_two_cpu_workers_agree_bitwise_and_bitflips_are_caught": _smoke(
            *cpu * 5, "--json", inject="bitflip:1,flaky:2,crash:3,nan:4"
        ),
        "test_a_bitflip_fails_a_device_with_no_peer_to_compare": _smoke(
            *cpu, "--json", inject="bitflip:0"
        ),
        "test_a_quick_bitflip_between_two_identical_devices_fails_never_passes": _smoke(
            "--quick", *cpu * 2, "--json", inject="bitflip:1"
        ),
        "test_crash_nan_and_flaky_fail_only_their_worker_also_one_at_a_time": _smoke(
            "--quick", "--serial", *cpu * 5, "--json", inject="crash:0,nan:1,flaky:3"
        ),
        **{
            f"test_a_hung_worker_is_killed_at_its_timeout[{mode}]": _smoke(
                *(("--quick",) if mode == "quick" else ()),
                *cpu,
                "--steps",
                "20",
                "--timeout",
                str(hang_timeout),
                "--json",
                inject="hang:0",
                waits=True,
            )
            for mode in MODES
        },
        "test_trains_on_a_real_format_cifar_directory": _smoke(
            "--quick", *cpu, "--data-root", str(data), "--json", str(data / "report.json")
        ),
        "test_the_tutorial_recipe_also_passes": _smoke(
            "--recipe", "tutorial", "--quick", *cpu, "--json"
        ),
    }


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("data")
    write_cifar(root)
    return root


@pytest.fixture(scope="module")
def hang_timeout() -> int:
    """The hung worker's watchdog: room for torch's import and 10 steps beside the module's other
    runs (five workers of one of them start with it), from the load when the runs start, not
    when pytest imported this module minutes before. Its worker waits it out asleep: a longer
    one costs the module's busy runs no CPU."""
    return max(60, round(stretch(15)))


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest, data: Path, hang_timeout: int) -> Iterator[Runs]:
    with started(request, lambda: _table(data, hang_timeout)) as background:
        yield background


def _report(stdout: str) -> dict[str, Any]:
    report = json.loads(stdout)
    jsonschema.validate(report, SCHEMA)
    return report


def _checks(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in result["checks"]}


def test_two_cpu_workers_agree_bitwise_and_bitflips_are_caught(runs: Runs) -> None:
    """Five workers, full recipe (the fault matrix's single-node full cells but hang): 0 passes;
    1 has one bit flipped in run A, which leaves loss and accuracy alone: A and B differ, the
    re-run C matches B (a one-off: WARN), and the vote fails it because its repeated result
    equals its peer's; 2 has a bit flipped in every run: A, B and C all differ and it fails on
    its own; 3 crashes and 4 gets a NaN weight in run A: each fails alone, out of the vote."""
    done = runs["test_two_cpu_workers_agree_bitwise_and_bitflips_are_caught"]
    assert done.returncode == 1, done.stderr
    report = _report(done.stdout)
    good, flipped, flaky, crashed, nan = report["results"]
    statuses = [r["status"] for r in report["results"]]
    assert statuses == ["PASS", "FAIL", "FAIL", "FAIL", "FAIL"]
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
    _assert_crashed_and_nan(crashed, nan)
    assert len(nan["run_fingerprints"]) == 3  # full: B ran clean, unlike A, and C was run
    assert report["overall"] == "FAIL"
    assert report["golden"] is None and report["started_utc"].endswith("Z")


def test_a_bitflip_fails_a_device_with_no_peer_to_compare(runs: Runs) -> None:
    """Alone, run A differs and B and the re-run C agree: nothing shows the stack repeats
    itself, and the deterministic settings promise equal runs, so the device fails (exit 1)."""
    done = runs["test_a_bitflip_fails_a_device_with_no_peer_to_compare"]
    assert done.returncode == 1, done.stderr
    (result,) = _report(done.stdout)["results"]
    assert (result["status"], result["agreement"]) == ("FAIL", "run A differs")
    assert _checks(result)["self_consistency"]["verdict"] == "warn"
    assert _checks(result)["cross_device"]["verdict"] == "fail"
    assert result["reason"].startswith("cross_device: run A differs once")
    assert result["reason"].endswith("[injected fault: bitflip]")


def test_a_quick_bitflip_between_two_identical_devices_fails_never_passes(
    runs: Runs,
) -> None:
    """--quick trains once: two identical devices that disagree bitwise have no majority to
    tell which is wrong, so both FAIL, each naming the other; the flipped one is among them."""
    done = runs["test_a_quick_bitflip_between_two_identical_devices_fails_never_passes"]
    assert done.returncode == 1, done.stderr
    first, flipped = _report(done.stdout)["results"]
    assert (first["status"], flipped["status"]) == ("FAIL", "FAIL")
    assert first["agreement"] == flipped["agreement"] == "no majority of 2"
    assert f"differs bitwise from device 1 (cpu) {flipped['fingerprint'][:12]}" in first["reason"]
    assert f"device 0 (cpu) {first['fingerprint'][:12]}" in flipped["reason"]
    assert flipped["reason"].endswith("[injected fault: bitflip]")


def _assert_crashed_and_nan(crashed: dict[str, Any], nan: dict[str, Any]) -> None:
    assert crashed["status"] == "FAIL" and "crashed" in crashed["reason"]
    assert "SIGSEGV" in crashed["reason"] and "[injected fault: crash]" in crashed["reason"]
    assert nan["status"] == "FAIL" and nan["reason"].startswith("finite:")
    assert "[injected fault: nan]" in nan["reason"]
    for failed in (crashed, nan):
        assert _checks(failed)["cross_device"]["detail"] == "failed its own checks"


def test_crash_nan_and_flaky_fail_only_their_worker_also_one_at_a_time(
    runs: Runs,
) -> None:
    """--quick, one device at a time (the matrix's single-node quick cells for crash, nan and
    flaky): each fault fails its own worker only. One run per device: the flaky worker's run
    differs from the bits of the two clean ones, a majority of its three identical devices."""
    done = runs["test_crash_nan_and_flaky_fail_only_their_worker_also_one_at_a_time"]
    assert done.returncode == 1, done.stderr
    crashed, nan, clean, flaky, other = _report(done.stdout)["results"]
    _assert_crashed_and_nan(crashed, nan)
    for good in (clean, other):
        assert good["status"] == "PASS" and good["injected_fault"] is None
        assert _checks(good)["self_consistency"]["verdict"] == "skip"  # --quick: one run
        assert good["agreement"] == "2/3"
    assert (flaky["status"], flaky["agreement"]) == ("FAIL", "differs (2/3)")
    assert flaky["reason"].startswith("cross_device: SDC suspect")
    assert flaky["reason"].endswith("[injected fault: flaky]")


@pytest.mark.parametrize("mode", MODES)
def test_a_hung_worker_is_killed_at_its_timeout(runs: Runs, hang_timeout: int, mode: str) -> None:
    """Quick or full (the matrix's hang cells): the fault strikes run A at its step 10 of 20."""
    done = runs[f"test_a_hung_worker_is_killed_at_its_timeout[{mode}]"]
    timeout = hang_timeout
    assert done.seconds < 3 * timeout  # killed at its timeout, not left to run
    assert done.returncode == 1, done.stderr
    (hung,) = _report(done.stdout)["results"]
    assert hung["status"] == "HUNG"
    # Without the fault's own announcement, the watchdog killed a worker still on its way to
    # step 10: the machine was slower than the timeout allowed, and the hang was never tested.
    assert hung["reason"].endswith("[injected fault: hang]"), f"never reached: {hung['reason']}"
    assert hung["reason"].startswith(f"no result within {timeout} s; killed during train A 10/20")


def test_trains_on_a_real_format_cifar_directory(runs: Runs, data: Path) -> None:
    done, out = runs["test_trains_on_a_real_format_cifar_directory"], data / "report.json"
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS: 1 of 1 devices passed" in done.stdout  # the table still prints
    (result,) = _report(out.read_text())["results"]
    assert result["status"] == "PASS"
    assert _checks(result)["heldout_accuracy"]["threshold"] == 0.2  # the real-data threshold
    assert result["heldout_accuracy"] > 0.5
    assert done.stderr == ""  # not a terminal: no progress display


def test_the_tutorial_recipe_also_passes(runs: Runs) -> None:
    done = runs["test_the_tutorial_recipe_also_passes"]
    assert done.returncode == 0, done.stdout + done.stderr
    report = _report(done.stdout)
    recipe = report["config"]["recipe"]
    assert (recipe["batch_size"], recipe["lr"], recipe["momentum"]) == (4, 0.001, 0.9)
    (result,) = report["results"]
    assert result["status"] == "PASS" and result["heldout_accuracy"] >= 0.5
