"""`nvidia-smi -L`: one line per GPU with its UUID, and its MIG devices indented below it."""

from __future__ import annotations

import re
from typing import Any

from gpudoc.info.model import MigInstance
from gpudoc.info.reports.facts import Facts, GpuFacts

FORMAT = "nvidia-smi -L"
# The UUID may be elided in a paste: "GPU 0: NVIDIA H200 (...)".
_GPU = re.compile(r"^\s*GPU (\d+): (.+?) \((?:UUID: (GPU-[0-9a-fA-F-]+)|\.\.\.|…)\)\s*$")
# "  MIG 3g.20gb     Device  0: (UUID: MIG-4c0f...)"; R450-R465: "(UUID: MIG-GPU-<uuid>/1/0)".
_MIG = re.compile(r"^\s+MIG \S+\s+Device\s+(\d+): \(UUID: (MIG-[^)]+)\)\s*$")


def looks_like(text: str) -> bool:
    return any(_GPU.match(line) for line in text.splitlines())


def parse(text: str) -> Facts:
    facts = Facts(FORMAT)
    gpus: list[GpuFacts] = []
    migs: dict[int, list[MigInstance]] = {}
    for line in text.splitlines():
        listed = _GPU.match(line)
        if listed:
            fields: dict[str, Any] = {"name": listed.group(2), "uuid": listed.group(3)}
            gpus.append(GpuFacts(int(listed.group(1)), fields))
            continue
        mig = _MIG.match(line)
        if mig and gpus and gpus[-1].index is not None:
            instance = MigInstance(int(mig.group(1)), mig.group(2), None)
            migs.setdefault(gpus[-1].index, []).append(instance)
    for gpu in gpus:
        if gpu.index in migs:  # MIG devices listed: MIG is on, with these instances
            gpu.fields.update(mig_mode_current=True, mig_instances=tuple(migs[gpu.index]))
    facts.gpus = gpus
    facts.driver.update(nvml_error=None, physical_gpu_count=len(gpus))
    return facts
