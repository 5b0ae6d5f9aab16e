"""``--golden FILE``: a device with no identical peer in this run is compared with a known-good
report, the JSON of an earlier ``gpudoc smoke --json`` run (say, on a healthy node of the fleet).

A golden device stands in for a peer when its grouping key is equal: the same hardware and
software identity (what ``run.group_key`` groups by), the same data, recipe and seed. Stdlib only.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from gpudoc.exit_codes import UsageError
from gpudoc.jsondata import DecodeError, from_json
from gpudoc.smoke import checks
from gpudoc.smoke.model import (
    SCHEMA_VERSION,
    CheckResult,
    DeviceResult,
    GoldenRef,
    SmokeConfig,
)

Key = tuple[object, ...]
NO_MATCH = "no golden device with the same hardware and software"


@dataclass(frozen=True)
class GoldenDevice:
    device: str
    fingerprint: str


@dataclass(frozen=True)
class Golden:
    ref: GoldenRef
    devices: dict[Key, GoldenDevice]

    def judge(self, config: SmokeConfig) -> Callable[[DeviceResult], tuple[CheckResult, str]]:
        """The cross_device check, and the agreement cell, of a device alone in this run."""

        def one(member: DeviceResult) -> tuple[CheckResult, str]:
            wanted = key(member, asdict(config.recipe), config.seed)
            found = self.devices.get(wanted) if wanted is not None else None
            if found is None or member.fingerprint is None:
                return CheckResult("cross_device", "skip", None, None, NO_MATCH), "alone"
            whom = f"the golden run's {found.device}{self._where()}"
            check = checks.cross_device(
                member.fingerprint, member.run_fingerprints, found.fingerprint, whom
            )
            return check, _agreement(check)

        return one

    def _where(self) -> str:
        known = [v for v in (self.ref.host, self.ref.started_utc) if v]
        return f" (on {', '.join(known)})" if known else ""


def _agreement(check: CheckResult) -> str:
    if check.verdict == "pass":
        return "= golden"
    return "≠ golden" if check.value is False else f"run {check.value} ≠ golden"


def key(result: DeviceResult, recipe: dict[str, Any], seed: object) -> Key | None:
    """The identity of a device's result across reports; None if it has none."""
    if result.info is None or result.fingerprint is None:
        return None
    settings = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in recipe.items()))
    return (*result.info.identity(), result.data_sha256, settings, seed)


def load(path: str) -> Golden:
    """Read a golden report; UsageError (exit 2) with one line when it cannot serve as one."""
    try:
        with open(path, "rb") as file:
            raw = file.read()
    except OSError as error:
        raise UsageError(f"--golden {path}: cannot read it: {error.strerror}") from None
    try:
        report = json.loads(raw)
    except ValueError as error:  # UnicodeDecodeError included
        raise UsageError(f"--golden {path}: not JSON ({error})") from None
    version = report.get("schema_version") if isinstance(report, dict) else None
    if version != SCHEMA_VERSION:
        raise UsageError(
            f"--golden {path}: schema_version {version!r}, expected {SCHEMA_VERSION} "
            "(the JSON of gpudoc smoke --json)"
        )
    devices = _devices(path, report)
    ref = GoldenRef(
        path=os.path.abspath(path),
        sha256=hashlib.sha256(raw).hexdigest(),
        host=_text(report.get("host")),
        started_utc=_text(report.get("started_utc")),
        gpudoc_version=_text(report.get("gpudoc_version")),
        devices=len(devices),
    )
    return Golden(ref, devices)


def _devices(path: str, report: dict[str, Any]) -> dict[Key, GoldenDevice]:
    """The golden report's passing devices by key (a --distributed report's ranks count too)."""
    config = report.get("config")
    results = report.get("results")
    if results is None and isinstance(report.get("ranks"), list):
        results = [r.get("smoke") for r in report["ranks"] if isinstance(r, dict)]
    if not isinstance(config, dict) or not isinstance(results, list):
        raise UsageError(f"--golden {path}: not a gpudoc smoke report (no config or results)")
    recipe, seed = config.get("recipe"), config.get("seed")
    devices: dict[Key, GoldenDevice] = {}
    for result in (_result(r) for r in results):
        if result is None or result.status != "PASS" or not isinstance(recipe, dict):
            continue  # only a device that passed is known to be good
        found = key(result, recipe, seed)
        if found is not None and result.fingerprint is not None:
            devices.setdefault(found, GoldenDevice(result.device, result.fingerprint))
    if not devices:
        raise UsageError(f"--golden {path}: no device in it passed, so none can serve as golden")
    return devices


def _result(data: object) -> DeviceResult | None:
    """A device of the known-good report, if it says what the device was (more keys are fine)."""
    if not isinstance(data, dict) or not isinstance(data.get("info"), dict):
        return None
    try:
        return from_json(DeviceResult, data)
    except DecodeError:
        return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
