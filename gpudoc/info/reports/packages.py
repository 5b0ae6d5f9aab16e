"""`pip list`, `pip freeze` and `conda list`: which torch and torchvision, and built for what.

The build of torch shows in its local tag (`2.1.0+cu121`, `+cpu`, `+rocm5.6`) or, for conda, in
its build string (`py3.10_cuda12.1_cudnn8.9.2_0`, `cpu_py310h...`, `cuda120_py310h...`); PyPI's
own Linux wheels have no tag but pin `nvidia-cuda-runtime-cuXX` at torch's CUDA version. A torch
missing from a list is not read as "not installed": a list may be filtered (`| grep torch`).
"""

from __future__ import annotations

import re
from typing import Any

from gpudoc.info.reports.facts import Facts
from gpudoc.info.reports.values import major_minor

_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_FREEZE = re.compile(rf"^\s*({_NAME})==(\S+)\s*$")
_FREEZE_URL = re.compile(rf"^\s*({_NAME}) @ \S+")
_COLUMNS = re.compile(rf"^\s*({_NAME})\s+(\d\S*)(?:\s+(\S+))?(?:\s+(\S+))?\s*$")
_PIP_HEADER = re.compile(r"^\s*Package\s+Version\b")
_TWO_COLUMNS = re.compile(rf"^\s*({_NAME})\s+(\d[\w.+!-]*)\s*$")
_SHOW = re.compile(rf"^\s*Name: ({_NAME})\s*\n\s*Version: (\S+)", re.MULTILINE)
TORCH_NAMES = frozenset({"torch", "pytorch", "torchvision"})
_CONDA_HEADER = re.compile(r"^\s*#\s*(packages in environment at|Name\s+Version\s+Build)")
# collect_env: "[pip3] torch==2.1.0", "[conda] pytorch 2.1.0 py3.10_cuda12.1_cudnn8.9.2_0 pytorch"
_BRACKETED = re.compile(rf"^\s*\[(pip\d?|conda)\]\s+({_NAME})(?:==|\s+)(\S+)(?:\s+(\S+))?")
_TAG_CUDA = re.compile(r"^cu(\d+)(\d)$")
_CONDA_CUDA = re.compile(r"cuda_?(\d+)\.?(\d)")
_RUNTIME = re.compile(r"^nvidia-cuda-runtime-cu(\d+)$")


def looks_like_pip_list(text: str) -> bool:
    """`pip list`'s header, or (a pasted excerpt without it) two-column lines naming torch."""
    if any(_PIP_HEADER.match(line) for line in text.splitlines()):
        return True
    pairs = [m.group(1).lower() for line in text.splitlines() if (m := _TWO_COLUMNS.match(line))]
    return len(pairs) >= 2 and bool(set(pairs) & TORCH_NAMES)


def looks_like_pip_show(text: str) -> bool:
    return bool(_SHOW.search(text))


def looks_like_pip_freeze(text: str) -> bool:
    return sum(1 for line in text.splitlines() if _FREEZE.match(line)) >= 2


def looks_like_conda_list(text: str) -> bool:
    return any(_CONDA_HEADER.match(line) for line in text.splitlines())


def parse_pip_list(text: str) -> Facts:
    facts = Facts("pip list")
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _PIP_HEADER.match(line)), None)
    for line in lines if start is None else lines[start + 1 :]:
        match = _COLUMNS.match(line) if start is not None else _TWO_COLUMNS.match(line)
        if match:
            facts.packages.setdefault(match.group(1).lower(), match.group(2))
    apply_packages(facts)
    return facts


def parse_pip_show(text: str) -> Facts:
    facts = Facts("pip show")
    for match in _SHOW.finditer(text):
        facts.packages.setdefault(match.group(1).lower(), match.group(2))
    apply_packages(facts)
    return facts


def parse_pip_freeze(text: str) -> Facts:
    facts = Facts("pip freeze")
    for line in text.splitlines():
        match = _FREEZE.match(line)
        if match:
            facts.packages.setdefault(match.group(1).lower(), match.group(2))
    apply_packages(facts)
    return facts


def parse_conda_list(text: str) -> Facts:
    facts = Facts("conda list")
    for line in text.splitlines():
        match = _COLUMNS.match(line)
        if match and not line.lstrip().startswith("#"):
            build = match.group(3) or ""
            facts.packages.setdefault(match.group(1).lower(), _conda_version(match.group(2), build))
    apply_packages(facts)
    return facts


def parse_versions_block(lines: list[str]) -> dict[str, str]:
    """collect_env's "Versions of relevant libraries": pip lines first, then conda's."""
    packages: dict[str, str] = {}
    for line in lines:
        match = _BRACKETED.match(line)
        if match is None:
            continue
        name, version = match.group(2).lower(), match.group(3)
        if match.group(1) == "conda":
            version = _conda_version(version, match.group(4) or "")
        packages.setdefault(name, version)
    return packages


def _conda_version(version: str, build: str) -> str:
    """conda keeps the build apart from the version: fold it in as a local tag, as pip shows."""
    lowered = build.lower()
    if "cpu" in lowered:
        return f"{version}+cpu"
    cuda = _CONDA_CUDA.search(lowered) or re.search(r"(?:^|_)cu(\d+)(\d)(?:_|$)", lowered)
    if cuda:
        return f"{version}+cu{cuda.group(1)}{cuda.group(2)}"
    return version


def apply_packages(facts: Facts) -> None:
    """torch and torchvision facts from `facts.packages`; keys already set stay."""
    packages = facts.packages
    version = packages.get("torch") or packages.get("pytorch")
    if version is not None:
        torch: dict[str, Any] = {"installed": True, "version": version, **build_of(version)}
        if "build" not in torch:
            torch.update(_pypi_runtime(packages))
        for key, value in torch.items():
            facts.torch.setdefault(key, value)
    vision = packages.get("torchvision")
    if vision is not None:
        facts.torchvision.setdefault("installed", True)
        facts.torchvision.setdefault("version", vision)


def build_of(version: str) -> dict[str, Any]:
    """torch's build and CUDA version from its local tag; {} for an untagged version."""
    tag = version.partition("+")[2].lower()
    if tag == "cpu" or tag.startswith("cpu"):
        return {"build": "cpu", "cuda_version": None}
    if tag.startswith("rocm"):
        return {"build": "rocm", "cuda_version": None, "hip_version": tag[4:] or None}
    cuda = _TAG_CUDA.match(tag)
    if cuda:
        return {"build": "cuda", "cuda_version": f"{cuda.group(1)}.{cuda.group(2)}"}
    return {}


def _pypi_runtime(packages: dict[str, str]) -> dict[str, Any]:
    """PyPI's untagged Linux torch pins nvidia-cuda-runtime-cuXX at its own CUDA version."""
    for name, version in packages.items():
        if _RUNTIME.match(name) and major_minor(version):
            return {"build": "cuda", "cuda_version": major_minor(version)}
    return {}
