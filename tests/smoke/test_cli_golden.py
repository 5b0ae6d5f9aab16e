"""`gpudoc smoke --golden FILE` end to end on the CPU: real runs compared with a real report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from background import Run, together
from conftest import RunGpudoc, stretch

SCHEMA = json.loads((Path(__file__).parents[2] / "gpudoc/smoke/schema.json").read_text())
# --timeout: a hang guard for runs side by side on a loaded machine (not compared with a golden).
CPU = ("smoke", "--device", "cpu", "--timeout", str(round(stretch(200))))
QUICK_CPU = (*CPU, "--quick")
BITFLIP = {"GPUDOC_SMOKE_INJECT": "bitflip:0"}


def _cross_device(report: dict[str, Any]) -> dict[str, Any]:
    jsonschema.validate(report, SCHEMA)
    (result,) = report["results"]
    return next(c for c in result["checks"] if c["id"] == "cross_device")


@pytest.mark.slow
def test_golden_report_pass_tampered_other_seed_and_bitflip(
    run_gpudoc: RunGpudoc, tmp_path: Path
) -> None:
    path = tmp_path / "golden.json"
    first = run_gpudoc(*QUICK_CPU, "--json", str(path))
    assert first.returncode == 0, first.stdout + first.stderr
    recorded = json.loads(path.read_text())
    assert recorded["host"] and recorded["started_utc"].endswith("Z")

    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(_with(recorded, fingerprint="0" * 64)))
    other = tmp_path / "seed1.json"
    other.write_text(json.dumps(_with(recorded, seed=1)))
    # The runs against those files do not depend on each other: side by side.
    gpudoc, limit = ("-m", "gpudoc"), stretch(600)
    done = together(
        {
            "same": Run((*gpudoc, *QUICK_CPU, "--golden", str(path), "--json"), limit),
            "differs": Run((*gpudoc, *QUICK_CPU, "--golden", str(tampered)), limit),
            "skipped": Run((*gpudoc, *QUICK_CPU, "--golden", str(other), "--json"), limit),
            "flipped": Run(
                (*gpudoc, *CPU, "--golden", str(path), "--json"),
                limit,
                BITFLIP,
            ),
            "quick": Run((*gpudoc, *QUICK_CPU, "--golden", str(path), "--json"), limit, BITFLIP),
        }
    )

    same = done["same"]
    assert same.returncode == 0, same.stderr
    report = json.loads(same.stdout)
    assert _cross_device(report)["verdict"] == "pass"
    assert report["results"][0]["agreement"] == "= golden"
    assert report["golden"]["path"] == str(path) and report["golden"]["devices"] == 1
    assert report["notes"] == [f"golden {path} ({recorded['host']}, {recorded['started_utc']}): "
                               "compared cpu"]  # fmt: skip

    differs = done["differs"]
    assert differs.returncode == 1, differs.stdout + differs.stderr
    assert (
        "FAIL: cross_device: SDC suspect: differs from the golden run's cpu (on " in differs.stdout
    )

    skipped = done["skipped"]
    assert skipped.returncode == 0, skipped.stderr
    check = _cross_device(json.loads(skipped.stdout))
    assert (check["verdict"], check["detail"]) == (
        "skip",
        "no golden device with the same hardware and software",
    )

    # A bit flipped in run A only: B and the re-run C agree with the golden run, so the one-off
    # WARN of self_consistency becomes a FAIL: the stack is deterministic, run A was wrong.
    flipped = done["flipped"]
    assert flipped.returncode == 1, flipped.stderr
    (result,) = json.loads(flipped.stdout)["results"]
    assert len(result["run_fingerprints"]) == 3 and result["agreement"] == "run A ≠ golden"
    assert result["fingerprint"] == json.loads(same.stdout)["results"][0]["fingerprint"]
    assert result["reason"].startswith("cross_device: SDC suspect: run A differs from the bits")
    assert result["reason"].endswith("[injected fault: bitflip]")

    # --quick trains once: the flipped run itself is what differs from the golden run.
    quick = done["quick"]
    assert quick.returncode == 1, quick.stderr
    (result,) = json.loads(quick.stdout)["results"]
    assert result["status"] == "FAIL" and "differs from the golden run's cpu" in result["reason"]


def _with(report: dict[str, Any], **changes: object) -> dict[str, Any]:
    """``report`` (a golden file) with its first result's fingerprint or its seed changed."""
    changed = json.loads(json.dumps(report))
    if "fingerprint" in changes:
        changed["results"][0]["fingerprint"] = changes["fingerprint"]
    if "seed" in changes:
        changed["config"]["seed"] = changes["seed"]
    return changed


def test_unusable_golden_files_exit_2_before_any_training(
    run_gpudoc: RunGpudoc, tmp_path: Path
) -> None:
    (tmp_path / "text.json").write_text("not json")
    (tmp_path / "v2.json").write_text('{"schema_version": 2, "config": {}, "results": []}')
    for name, message in (
        ("text.json", "not JSON"),
        ("v2.json", "schema_version 2, expected 1"),
        ("absent.json", "cannot read it: No such file or directory"),
    ):
        done = run_gpudoc(*QUICK_CPU, "--golden", str(tmp_path / name))
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.strip().splitlines() == [
            f"gpudoc smoke: error: --golden {tmp_path / name}: {message}"
            + (" (the JSON of gpudoc smoke --json)" if name == "v2.json" else "")
            + ("" if name != "text.json" else " (Expecting value: line 1 column 1 (char 0))")
        ]
