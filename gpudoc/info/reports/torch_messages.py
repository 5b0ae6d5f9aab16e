"""PyTorch's own words about CUDA, as pasted from a script's output: the `CUDA initialization:`
warnings, "Found no NVIDIA driver", "Torch not compiled with CUDA enabled", and the warning
naming a GPU whose compute capability the wheel has no kernels for (with the wheel's arch list).

These are the messages the live probe records (init_warnings, unavailable_reason); the checks
that read them (driver-too-old, fabric-manager, forward-compat, uvm-missing, cuda-unavailable)
apply to a report that has them.
"""

from __future__ import annotations

import re

from gpudoc.info.reports.facts import Facts

FORMAT = "torch messages"
_INIT = re.compile(
    r"CUDA initialization: (.+?)(?:\s*\(Triggered internally at [^)]*\))?\s*$", re.MULTILINE
)
_UNAVAILABLE = re.compile(
    r"((?:Found no NVIDIA driver on your system|Torch not compiled with CUDA enabled)[^\n]*)"
)
# "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current
# PyTorch installation." then "The current PyTorch install supports CUDA capabilities sm_50 ..."
_INCOMPATIBLE = re.compile(
    r"(?:UserWarning:\s*)?(?P<name>\S.*?) with CUDA capability sm_(?P<cc>\d+) is not compatible"
)
_SUPPORTS = re.compile(r"supports CUDA capabilities((?:\s+(?:sm|compute)_\d+[a-z]?)+)")
# "RuntimeError: Unexpected error from cudaGetDeviceCount(). ... Error 802: system not yet
# initialized": the CUDA runtime's own error, also when a paste shortens the text between.
_RUNTIME_ERROR = re.compile(r"^.*cudaGetDeviceCount\(\).*?Error \d+: [^\n]+$", re.MULTILINE)
_PHRASES = (_INIT, _UNAVAILABLE, _INCOMPATIBLE, _RUNTIME_ERROR)
# "The NVIDIA driver on your system is too old (found version 11040)": cudaDriverGetVersion(),
# the newest CUDA the driver supports, 1000 * major + 10 * minor.
_FOUND = re.compile(r"driver on your system is too old \(found version (\d+)\)")


def looks_like(text: str) -> bool:
    return any(pattern.search(text) for pattern in _PHRASES)


def parse(text: str) -> Facts:
    facts = Facts(FORMAT)
    warnings = [m.group(1) for line in text.splitlines() if (m := _INIT.search(line))]
    runtime_errors = [
        m.group(0).strip() for m in _RUNTIME_ERROR.finditer(text) if not _INIT.search(m.group(0))
    ]
    if runtime_errors:  # only a CUDA build of torch calls cudaGetDeviceCount()
        facts.torch.update(installed=True, import_error=None, build="cuda", cuda_available=False)
        warnings += runtime_errors
    unavailable = _UNAVAILABLE.search(text)
    if warnings or unavailable:
        facts.torch.setdefault("installed", True)  # torch printed it
        facts.torch.setdefault("import_error", None)
        facts.torch["init_warnings"] = tuple(dict.fromkeys(warnings))
        reason = unavailable.group(1).strip() if unavailable else None
        facts.torch["unavailable_reason"] = reason
        if reason and reason.startswith("Torch not compiled with CUDA"):
            facts.torch["build"] = "cpu"
            facts.torch["cuda_available"] = False
    found = _FOUND.search(text)
    if found:
        number = int(found.group(1))
        facts.driver["cuda_driver_version"] = f"{number // 1000}.{number % 1000 // 10}"
    supports = _SUPPORTS.search(text)
    if supports:  # sm_XY kernels: a CUDA build (ROCm lists gfx targets)
        facts.torch.update(installed=True, build="cuda", arch_list=tuple(supports.group(1).split()))
    for match in _INCOMPATIBLE.finditer(text):
        digits = match.group("cc")
        capability = f"{digits[:-1]}.{digits[-1]}"
        facts.gpus_by_name[match.group("name").strip()] = {"compute_capability": capability}
    return facts
