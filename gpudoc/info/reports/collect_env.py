"""`python -m torch.utils.collect_env` output, from PyTorch 1.x to today.

"Key: value" lines. What it says and where it comes from matters: "CUDA used to build PyTorch" is
torch.version.cuda (None, printed "None" or "Could not collect", is a CPU or ROCm build); "CUDA
runtime version" is `nvcc --version`, not torch's runtime; "GPU models and configuration" is
`nvidia-smi -L` (NVML's order); "Nvidia driver version" is nvidia-smi's; "cuDNN version" lists
the system's libraries (not torch's own cuDNN) and is not read.
"""

from __future__ import annotations

import re
from typing import Any

from gpudoc.info.reports.facts import Facts, GpuFacts
from gpudoc.info.reports.packages import apply_packages, build_of, parse_versions_block
from gpudoc.info.reports.values import is_value, major_minor

FORMAT = "collect_env"
_KEY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9 ._/()-]*?):[ \t]*(.*)$")
_KEYS = ("PyTorch version", "Is debug build", "CUDA used to build PyTorch", "Is CUDA available")
# "GPU 0: NVIDIA A100" (also with a full-width colon, as some input methods paste it).
_GPU_LINE = re.compile(r"^\s*GPU (\d+)[:：] ?(.+?)(?: \(UUID: (GPU-[0-9a-fA-F-]+)\))?\s*$")
_BARE_VERSION = re.compile(r"^\s*PyTorch version\s+(\S+)\s*$")  # its colon lost in pasting
_MIG_LINE = re.compile(r"^\s+MIG ")
_NOT_SAID = ("could not collect", "no cuda", "n/a", "")


def looks_like(text: str) -> bool:
    keys = set(_values(text.splitlines()))
    return "PyTorch version" in keys and sum(key in keys for key in _KEYS) >= 2


def parse(text: str) -> Facts:
    facts = Facts(FORMAT)
    lines = text.splitlines()
    values = _values(lines)
    _torch(facts, values)
    _driver_and_gpus(facts, values, lines)
    _host(facts, values)
    block = _block_after(lines, "Versions of relevant libraries")
    facts.packages = parse_versions_block(block)
    apply_packages(facts)  # torchvision; torch's version line above takes precedence
    if facts.torch.get("installed") is False and facts.torch.get("version"):
        not_importable(facts.torch)  # "N/A", yet a torch package is listed
    return facts


NOT_IMPORTED = "collect_env could not import torch (it printed PyTorch version: N/A)"


def not_importable(torch: dict[str, Any]) -> None:
    torch.update(installed=True, import_error=NOT_IMPORTED)


def _values(lines: list[str]) -> dict[str, str]:
    """The first value of each key (the CPU block after "CPU:" repeats no key of ours)."""
    values: dict[str, str] = {}
    for line in lines:
        match = _KEY.match(line)
        if match and match.group(1) not in values:
            values[match.group(1)] = match.group(2).strip()
        bare = _BARE_VERSION.match(line)
        if bare and "PyTorch version" not in values:
            values["PyTorch version"] = bare.group(1)
    return values


def _said(value: str | None) -> bool:
    return value is not None and value.strip().lower() not in _NOT_SAID


def _torch(facts: Facts, values: dict[str, str]) -> None:
    version = values.get("PyTorch version")
    if version is None:
        return
    torch = facts.torch
    if version.strip().upper() == "N/A":  # collect_env could not import torch
        torch["installed"] = False
        return
    torch.update(installed=True, version=version, import_error=None, probe_error=None)
    cuda = values.get("CUDA used to build PyTorch")
    rocm = values.get("ROCM used to build PyTorch")
    torch["cuda_version"] = major_minor(cuda)
    torch["hip_version"] = rocm if _said(rocm) else None
    if _said(rocm):
        torch["build"] = "rocm"
    elif torch["cuda_version"] is not None:
        torch["build"] = "cuda"
    elif cuda is not None and cuda.strip().lower() in ("none", "could not collect"):
        torch["build"] = "cpu"  # torch.version.cuda is None
    else:  # the build lines are missing (a partial paste): the version's tag says it
        torch.update(build_of(version))
    available = values.get("Is CUDA available", "").strip().lower()
    if available in ("true", "yes", "false", "no"):
        torch["cuda_available"] = available in ("true", "yes")


def _driver_and_gpus(facts: Facts, values: dict[str, str], lines: list[str]) -> None:
    driver = values.get("Nvidia driver version")
    if _said(driver) and driver is not None:
        facts.driver.update(driver_version=driver, nvml_error=None)  # nvidia-smi answered
    gpus = _gpu_lines(lines)
    if gpus:
        facts.gpus = gpus
        facts.driver["nvml_error"] = None
        facts.driver["physical_gpu_count"] = len(gpus)


def _gpu_lines(lines: list[str]) -> list[GpuFacts]:
    """`GPU 0: NVIDIA A100-SXM4-80GB` lines (nvidia-smi -L) after "GPU models and configuration"
    (on its line or the next ones); an AMD name from torch is not an NVML GPU."""
    start = next(
        (i for i, line in enumerate(lines) if "GPU models and configuration" in line), None
    )
    if start is None:
        return []
    parts = re.split(r"configuration[:：]", lines[start], maxsplit=1)
    first = parts[1] if len(parts) > 1 else ""
    gpus: list[GpuFacts] = []
    for position, line in enumerate([first, *lines[start + 1 :]]):
        match = _GPU_LINE.match(line)
        if match:
            fields: dict[str, Any] = {"name": match.group(2).strip()}
            if match.group(3):
                fields["uuid"] = match.group(3)
            gpus.append(GpuFacts(int(match.group(1)), fields))
        elif not (gpus and _MIG_LINE.match(line)) and (position > 0 or line.strip()):
            break  # the list ends; an empty first line means it starts on the next one
    return gpus


def _host(facts: Facts, values: dict[str, str]) -> None:
    if is_value(values.get("OS")):
        facts.host["os"] = values["OS"]
    python = re.match(r"^\s*(\d+\.\d+(?:\.\d+)?)", values.get("Python version", ""))
    if python:
        facts.host["python"] = python.group(1)
    platform = re.match(
        r"^Linux-(.+?)-(?:x86_64|aarch64|ppc64le)", values.get("Python platform", "")
    )
    if platform:
        facts.host["kernel"] = platform.group(1)
    if "CUDA runtime version" in values:
        nvcc = values["CUDA runtime version"]
        if nvcc.strip().lower() != "no cuda":  # "No CUDA": not asked, CUDA was unavailable
            facts.host["nvcc_cuda_version"] = major_minor(nvcc)


def _block_after(lines: list[str], heading: str) -> list[str]:
    start = next((i for i, line in enumerate(lines) if line.strip().startswith(heading)), None)
    if start is None:
        return []
    block = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        block.append(line)
    return block
