"""The published JSON schemas are generated from the models and documents every key of them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from gpudoc import schemagen
from gpudoc.info import model

SCHEMA = json.loads((Path(__file__).parents[2] / "gpudoc/info/schema.json").read_text())


def test_schema_version_matches_the_model() -> None:
    assert SCHEMA["properties"]["schema_version"]["const"] == model.SCHEMA_VERSION


def test_every_dataclass_is_documented_with_exactly_its_fields() -> None:
    defined = {
        name: cls
        for name, cls in vars(model).items()
        if dataclasses.is_dataclass(cls) and cls.__module__ == model.__name__
    }
    documented = {"InfoReport": SCHEMA, **SCHEMA["$defs"]}
    assert set(documented) == set(defined)
    for name, cls in defined.items():
        fields = [f.name for f in dataclasses.fields(cls)]
        properties = [
            p
            for p in documented[name]["properties"]
            if p not in ("schema_version", "gpudoc_version")
        ]
        assert properties == fields, name
        assert documented[name]["additionalProperties"] is False


def test_units_are_in_key_names() -> None:
    quantities = [
        f.name
        for cls in (model.GpuInfo, model.TorchDevice, model.MigInstance, model.GpuProcess)
        for f in dataclasses.fields(cls)
        if any(word in f.name for word in ("memory", "power", "temperature", "utilization"))
    ]
    units = ("_bytes", "_mw", "_c", "_percent")
    assert [q for q in quantities if not q.endswith(units)] == []


@pytest.mark.parametrize("target", schemagen.targets(), ids=lambda t: t.path.name)
def test_schema_files_are_up_to_date(target: schemagen.Target) -> None:
    on_disk = target.path.read_text(encoding="utf-8")
    assert on_disk == schemagen.render(target), "stale: run python -m gpudoc.schemagen"


def test_descriptions_come_from_the_model_source() -> None:
    gpu = SCHEMA["$defs"]["GpuInfo"]
    assert gpu["description"].startswith("One physical GPU as NVML sees it")
    assert gpu["properties"]["compute_capability"]["description"] == '"8.9"'  # a comment
    assert gpu["properties"]["nvml_index"]["description"] == "NVML / nvidia-smi index."
    summary = SCHEMA["$defs"]["Summary"]["properties"]
    assert summary["problems"] == {
        "description": "failures, warnings and crashed checks (not info)",
        "type": "integer",
    }
