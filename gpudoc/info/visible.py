"""CUDA_VISIBLE_DEVICES, parsed with CUDA's rules (CUDA Programming Guide, "CUDA Environment
Variables"; torch mirrors them in `torch.cuda._parse_visible_devices`).

Unset means every device; an empty string means none; entries are indices or (abbreviated) UUIDs
`GPU-...` / `MIG-...`; enumeration stops at the first invalid entry; a duplicate leaves no device.
Numeric entries are CUDA ordinals: they equal NVML indices only in PCI bus order, which the
`device-order` check covers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gpudoc.info.model import VisibleDevices

_LEADING_INT = re.compile(r"\s*(-?\d+)")
# A (prefix of a) GPU or MIG UUID; the old MIG form is MIG-GPU-<uuid>/<instance>/<compute>.
_UUID = re.compile(r"(?:GPU-|MIG-(?:GPU-)?)[0-9a-f-]*(?:/\d*){0,2}", re.IGNORECASE)


def _named(entry: str) -> object:
    """What an entry names, as far as its text tells: CUDA reads ``01`` as 1, UUIDs in any case."""
    match = _LEADING_INT.match(entry)
    return int(match.group(1)) if match else entry.strip().lower()


def parse_visible_devices(
    raw: str | None, uuids: Sequence[str | None] | None, mig_parents: dict[str, int] | None = None
) -> VisibleDevices:
    """Resolve `raw` against NVML's devices (`uuids[i]` is NVML index i; None = NVML unavailable).

    `mig_parents` maps MIG instance UUIDs to the NVML index of their GPU.
    """
    if raw is None:
        return VisibleDevices(raw=None, nvml_indices=None)
    if not raw.strip():
        return VisibleDevices(raw=raw, nvml_indices=(), problems=("empty: no device is visible",))
    selected: list[int] = []
    problems: list[str] = []
    named: set[object] = set()  # what each entry says, known without NVML: a number, a UUID
    entries = raw.split(",")
    for position, entry in enumerate(entries):
        index, problem = _resolve_entry(entry.strip(), uuids, mig_parents or {})
        if problem is not None:
            ignored = [e.strip() for e in entries[position + 1 :] if e.strip()]
            if ignored:
                problem += f"; CUDA stops here and ignores {', '.join(map(repr, ignored))}"
            problems.append(problem)
            break
        if _named(entry) in named or (index is not None and index in selected):
            problems.append(f"{entry.strip()!r} is listed twice: CUDA then shows no device")
            return VisibleDevices(raw=raw, nvml_indices=(), problems=tuple(problems))
        named.add(_named(entry))
        if index is not None:
            selected.append(index)
    return VisibleDevices(raw=raw, nvml_indices=tuple(selected), problems=tuple(problems))


def _resolve_entry(
    entry: str, uuids: Sequence[str | None] | None, mig_parents: dict[str, int]
) -> tuple[int | None, str | None]:
    """(NVML index or None when unknowable, problem text or None)."""
    if entry.upper().startswith(("GPU-", "MIG-")):
        if not _UUID.fullmatch(entry):
            return None, f"{entry!r} is not a UUID: GPU-/MIG- are followed by hex digits and dashes"
        return _resolve_uuid(entry, uuids, mig_parents)
    match = _LEADING_INT.match(entry)
    if match is None:
        hint = (
            " (that value is for NVIDIA_VISIBLE_DEVICES)"
            if entry.lower() in ("all", "none")
            else ""
        )
        return None, f"{entry!r} is neither an index nor a GPU-/MIG- UUID{hint}"
    number = int(match.group(1))
    if number < 0:
        return None, f"{entry!r} is negative: CUDA stops enumerating there"
    if uuids is not None and number >= len(uuids):
        count = len(uuids)
        return None, f"index {number} does not exist: this machine has {count} GPU(s)"
    return (number if uuids is not None else None), None


def _resolve_uuid(
    entry: str, uuids: Sequence[str | None] | None, mig_parents: dict[str, int]
) -> tuple[int | None, str | None]:
    if uuids is None:
        return None, None
    prefix = entry.lower()
    candidates = {i: u for i, u in enumerate(uuids) if u}
    matches = [i for i, u in candidates.items() if u.lower().startswith(prefix)]
    mig_matches = [i for u, i in mig_parents.items() if u.lower().startswith(prefix)]
    found = matches or mig_matches
    if not found:
        return None, f"{entry!r} matches no GPU or MIG UUID on this machine"
    if len(found) > 1:
        return None, f"{entry!r} is ambiguous: it matches {len(found)} devices"
    return found[0], None
