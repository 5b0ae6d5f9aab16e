"""CUDA_VISIBLE_DEVICES parsed with CUDA's rules, on a 3-GPU machine."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpudoc.info.visible import parse_visible_devices

UUIDS = [
    "GPU-5f3a2b1c-8d4e-4f6a-9b7c-0d1e2f3a4b5c",
    "GPU-5f3a9999-8d4e-4f6a-9b7c-0d1e2f3a4b5c",
    "GPU-2b3c4d5e-6f70-4182-93a4-b5c6d7e8f901",
]
MIG = {"MIG-3c1e4b2a-7d6f-5a8e-9b0c-1d2e3f4a5b6c": 2}


@pytest.mark.parametrize(
    ("raw", "selected", "problem"),
    [
        (None, None, None),
        ("", (), "empty"),
        ("  ", (), "empty"),
        ("0", (0,), None),
        ("2,0", (2, 0), None),
        (" 1 , 2 ", (1, 2), None),
        ("1gpu2", (1,), None),  # leading-integer parsing, as torch does
        ("0,2,-1,1", (0, 2), "negative"),
        ("0,7", (0,), "index 7 does not exist"),
        ("all", (), "NVIDIA_VISIBLE_DEVICES"),
        ("none", (), "NVIDIA_VISIBLE_DEVICES"),
        ("0,0", (), "listed twice"),
        ("GPU-2b3c", (2,), None),
        ("gpu-2B3C", (2,), None),
        ("GPU-5f3a", (), "ambiguous"),
        ("GPU-dead,0", (), "matches no GPU"),
        ("MIG-3c1e", (2,), None),
    ],
)
def test_cuda_rules(raw: str | None, selected: tuple[int, ...] | None, problem: str | None) -> None:
    parsed = parse_visible_devices(raw, UUIDS, MIG)
    assert parsed.nvml_indices == selected
    if problem is None:
        assert parsed.problems == ()
    else:
        assert any(problem in p for p in parsed.problems), parsed.problems


def test_entries_after_an_invalid_one_are_named_as_ignored() -> None:
    parsed = parse_visible_devices("0,bogus,1", UUIDS)
    assert parsed.nvml_indices == (0,)
    assert parsed.problems == (
        "'bogus' is neither an index nor a GPU-/MIG- UUID; CUDA stops here and ignores '1'",
    )


def test_without_nvml_only_syntax_is_checked() -> None:
    assert parse_visible_devices("5", None).problems == ()
    assert parse_visible_devices("GPU-5f3a2b1c-8d4e", None).problems == ()
    assert parse_visible_devices("MIG-GPU-5f3a2b1c/1/0", None).problems == ()
    assert parse_visible_devices("all", None).problems != ()


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("0,0", "'0' is listed twice: CUDA then shows no device"),
        ("1, 01", "'01' is listed twice: CUDA then shows no device"),
        ("GPU-5f3a,gpu-5F3A", "'gpu-5F3A' is listed twice: CUDA then shows no device"),
        ("GPU-bogus", "'GPU-bogus' is not a UUID: GPU-/MIG- are followed by hex digits and dashes"),
        ("MIG-x", "'MIG-x' is not a UUID"),
    ],
)
def test_without_nvml_duplicates_and_bad_uuids_show_no_device(raw: str, problem: str) -> None:
    """Syntax alone (no NVML) shows these: CUDA rejects a duplicate and stops at a bad UUID."""
    parsed = parse_visible_devices(raw, None)
    assert parsed.nvml_indices == () and len(parsed.problems) == 1
    assert parsed.problems[0].startswith(problem)


@given(st.text(alphabet="0123456789,-GPUMIabcdef ", max_size=30))
def test_any_value_parses_to_distinct_existing_devices(raw: str) -> None:
    parsed = parse_visible_devices(raw, UUIDS, MIG)
    indices = parsed.nvml_indices or ()
    assert len(set(indices)) == len(indices)
    assert all(0 <= i < len(UUIDS) for i in indices)
    if not raw.strip():
        assert parsed.problems and indices == ()
