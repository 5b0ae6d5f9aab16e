"""Environment variables as a pasted shell session shows them: `CUDA_VISIBLE_DEVICES=2 python
main.py`, `export CUDA_VISIBLE_DEVICES=0,1`, the output of `env | grep CUDA`. The last value a
session gives a variable is the one its commands ran with."""

from __future__ import annotations

import re

from gpudoc.info.reports.facts import Facts

FORMAT = "shell variables"
NAMES = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "CUDA_LAUNCH_BLOCKING",
)
_ASSIGNMENT = re.compile(
    rf"(?:^|[\s$#>;])(?:export\s+|set\s+)?({'|'.join(NAMES)})=(\"[^\"]*\"|'[^']*'|[^\s;]*)",
    re.MULTILINE,
)


def looks_like(text: str) -> bool:
    return bool(_ASSIGNMENT.search(text))


def parse(text: str) -> Facts:
    facts = Facts(FORMAT)
    for match in _ASSIGNMENT.finditer(text):
        facts.env[match.group(1)] = match.group(2).strip("\"'")
    return facts
