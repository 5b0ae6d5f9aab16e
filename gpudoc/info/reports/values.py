"""Values as nvidia-smi and collect_env print them, read into the model's units.

Each returns None for what is not a value ("N/A", "[N/A]", "Could not collect", "ERR!", ...).
"""

from __future__ import annotations

import re

MIB = 1024**2
_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z%]*)\s*$")
_BYTES = {"b": 1, "kib": 1024, "kb": 1024, "mib": MIB, "mb": MIB, "gib": 1024**3, "gb": 1024**3}
_TRUE = {"enabled", "yes", "true", "on", "active"}
_FALSE = {"disabled", "no", "false", "off", "not active", "inactive"}
# nvidia-smi's compute modes, in -q, -q -x and the table ("E. Process"), as NVML's names.
_COMPUTE_MODES = {
    "default": "default",
    "exclusive_process": "exclusive_process",
    "exclusive process": "exclusive_process",
    "e. process": "exclusive_process",
    "exclusive_thread": "exclusive_thread",
    "exclusive thread": "exclusive_thread",
    "e. thread": "exclusive_thread",
    "prohibited": "prohibited",
}


def number(text: str | None) -> float | None:
    match = _NUMBER.match(text or "")
    return float(match.group(1)) if match else None


def integer(text: str | None) -> int | None:
    value = number(text)
    return None if value is None else int(value)


def hex_or_int(text: str | None) -> int | None:
    text = (text or "").strip()
    try:
        return int(text, 16) if text.lower().startswith("0x") else int(text)
    except ValueError:
        return None


def bytes_of(text: str | None) -> int | None:
    """`81920 MiB`, `81920MiB` -> bytes."""
    match = _NUMBER.match(text or "")
    if match is None or match.group(2).lower() not in _BYTES:
        return None
    return int(float(match.group(1)) * _BYTES[match.group(2).lower()])


def milliwatts(text: str | None) -> int | None:
    """`61.23 W`, `61W` -> 61230."""
    match = _NUMBER.match(text or "")
    if match is None or match.group(2).upper() != "W":
        return None
    return round(float(match.group(1)) * 1000)


def switch(text: str | None) -> bool | None:
    """Enabled/Disabled, Yes/No, On/Off, Active/Not Active."""
    word = (text or "").strip().lower()
    return True if word in _TRUE else False if word in _FALSE else None


def compute_mode(text: str | None) -> str | None:
    return _COMPUTE_MODES.get((text or "").strip().lower())


def link_width(text: str | None) -> int | None:
    """`16x` or `x16` -> 16."""
    return integer((text or "").strip().strip("xX"))


def major_minor(text: str | None) -> str | None:
    """`12.1.105` -> `12.1`; None for anything not starting with a version."""
    match = re.match(r"^\s*V?(\d+)\.(\d+)", text or "")
    return f"{match.group(1)}.{match.group(2)}" if match else None


def is_value(text: str | None) -> bool:
    """Not one of the words reports print for a missing value."""
    word = (text or "").strip().lower().strip("[]")
    return word not in ("", "n/a", "na", "none", "could not collect", "err!", "unknown error")
