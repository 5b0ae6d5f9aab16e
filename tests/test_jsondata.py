"""One JSON decoder for every model: round trips, and one policy for odd input."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from gpudoc.info.model import TorchDevice, TorchInfo, TorchvisionInfo
from gpudoc.jsondata import DecodeError, from_json
from gpudoc.lint.model import Edit, Finding, Fix
from gpudoc.smoke.model import (
    CheckResult,
    DeviceInfo,
    DeviceResult,
    GoldenRef,
    SmokeConfig,
    SmokeReport,
    Throughput,
)

RESULT = DeviceResult(
    0,
    "cuda:0",
    "WARN",
    info=DeviceInfo("cuda:0", name="NVIDIA A100", kind="cuda", sm_count=108),
    checks=(CheckResult("finite", "pass", True, None), CheckResult("loss", "warn", 0.2, 0.13)),
    throughput=(Throughput(4, 1200.5, None), Throughput(256, 9000.0, 31.0)),
    run_fingerprints=("a" * 64, "b" * 64),
)
TORCH = TorchInfo(
    installed=True,
    version="2.13.0+cu130",
    arch_list=("sm_80", "sm_90"),
    devices=(TorchDevice(0, "A100", "GPU-1", "0000:01:00.0", "8.0", 80 * 2**30),),
    torchvision=TorchvisionInfo(True, "0.28.0", None, True, None),
    init_warnings=("CUDA initialization: ...",),
)


def through_json(value: object) -> object:
    return json.loads(json.dumps(asdict(value)))  # type: ignore[call-overload]


@pytest.mark.parametrize(
    "value",
    [
        RESULT,
        SmokeReport(
            SmokeConfig(quick=True), (RESULT,), "WARN", "0.1.0", 3.5, golden=GoldenRef("g", "s")
        ),
        TORCH,
        Finding(
            "x.py",
            1,
            2,
            "GPD101",
            "unmoved-input",
            "m",
            1,
            9,
            Fix((Edit(0, 1, 0, 2, "x"),), True, "d"),
        ),
    ],
)
def test_every_model_round_trips_through_json(value: object) -> None:
    assert from_json(type(value), through_json(value)) == value


def test_unknown_keys_are_ignored_and_missing_ones_take_defaults_or_none() -> None:
    data = through_json(TORCH)
    assert isinstance(data, dict)
    data["added_by_a_newer_probe"] = 1
    del data["version"], data["devices"]  # a default, and a default of ()
    data["torchvision"] = {"installed": False}  # no defaults: the optional fields become None
    decoded = from_json(TorchInfo, data)
    assert decoded.version is None and decoded.devices == ()
    assert decoded.torchvision == TorchvisionInfo(False, None, None, None, None)
    with pytest.raises(DecodeError, match=r"^torchvision\.installed: missing$"):
        from_json(TorchInfo, {"installed": True, "torchvision": {}})


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"status": "MAYBE"}, "status: 'MAYBE' is not one of 'PASS', 'WARN', 'FAIL', 'HUNG'"),
        ({"index": True}, "index: expected int, got a boolean"),
        ({"index": "0"}, "index: expected int, got a string"),
        ({"checks": {}}, "checks: expected an array, got an object"),
        ({"info": {"device": None}}, "info.device: expected str, got null"),
        ({"throughput": [{"batch_size": 4, "images_per_s": "fast"}]}, "throughput[0].images_per_s"),
    ],
)
def test_a_bad_value_is_a_decode_error_naming_its_path(
    edit: dict[str, object], message: str
) -> None:
    data = through_json(RESULT)
    assert isinstance(data, dict)
    with pytest.raises(DecodeError) as raised:
        from_json(DeviceResult, {**data, **edit})
    assert str(raised.value).startswith(message)


def test_numbers_keep_their_json_type() -> None:
    """A check's value may be a bool, an int or a float: each comes back as it went."""
    checks = (
        CheckResult("a", "pass", True),
        CheckResult("b", "pass", 3),
        CheckResult("c", "pass", 0.5),
    )
    back = from_json(DeviceResult, through_json(DeviceResult(0, "cpu", "PASS", checks=checks)))
    assert [type(c.value) for c in back.checks] == [bool, int, float]
    assert from_json(Throughput, {"batch_size": 4, "images_per_s": 7}).images_per_s == 7


def test_no_hand_written_decoders_are_left() -> None:
    package = Path(__file__).resolve().parents[1] / "gpudoc"
    sources = {p: p.read_text(encoding="utf-8") for p in package.rglob("*.py")}
    assert [p.name for p, text in sources.items() if "def from_dict" in text] == []
