"""Doctor checks about PyTorch and torchvision as the probe subprocess saw them."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpudoc.info import preconditions as pre
from gpudoc.info.checks.base import check, finding
from gpudoc.info.checks.shared import INDEX, nvidia_gpu_present, torch_of, wheel_tag_for
from gpudoc.info.model import Finding, InfoReport, TorchInfo

SELECTOR = "https://pytorch.org/get-started/locally/"


def local_tag(version: str | None) -> str | None:
    """`2.13.0+cpu` -> `cpu`; None for a version without a local tag (PyPI's default wheels)."""
    return version.partition("+")[2] or None if version else None


@check("PyTorch is installed", "fail", pre.torch_probed)
def torch_missing(report: InfoReport) -> Iterator[Finding]:
    if torch_of(report).installed:
        return
    tag = wheel_tag_for(report.driver.cuda_driver_version) or "cu130"
    yield finding(
        "fail",
        f"PyTorch is not installed for this Python ({report.host.python or 'version unknown'}).",
        f"pip install torch torchvision --index-url {INDEX}/{tag}  (or pick yours at {SELECTOR})",
    )


@check(
    "PyTorch imports",
    "fail",
    pre.all_of(pre.torch_installed, pre.reported("whether PyTorch imports", "torch.import_error")),
)
def torch_import_error(report: InfoReport) -> Iterator[Finding]:
    torch = torch_of(report)
    if torch.probe_error:
        yield finding(
            "fail",
            f"PyTorch could not be probed: {torch.probe_error}.",
            "run `python -c 'import torch; torch.cuda.is_available()'` to see the failure; a hang "
            "or crash there usually means a broken CUDA install: reinstall torch in a clean venv",
        )
    elif torch.import_error:
        yield finding(
            "fail",
            f"`import torch` fails: {torch.import_error}",
            "reinstall torch with its dependencies in a clean environment "
            "(pip install --force-reinstall torch); do not use --no-deps or mix a system CUDA "
            "into the wheel's libraries",
        )


@check("PyTorch is a CUDA build", "fail/warn", pre.torch_built)
def torch_cpu_build(report: InfoReport) -> Iterator[Finding]:
    torch = torch_of(report)
    if torch.build != "cpu":
        return
    gpu = nvidia_gpu_present(report)
    tag = wheel_tag_for(report.driver.cuda_driver_version)
    command = "pip install --force-reinstall torch torchvision --index-url"
    fix = f"{command} {INDEX}/{tag}"
    if tag is None:  # no driver to ask: name the newest wheel and where to pick another
        where = "install the NVIDIA driver, then" if gpu else "on the GPU machine:"
        fix = f"{where} {command} {INDEX}/cu130 (or the CUDA tag its driver supports: {SELECTOR})"
    if gpu:
        tail = "."
    elif report.sources is not None:  # a report that names no GPU may simply not list them
        tail = "; the report does not show whether the machine has an NVIDIA GPU."
    else:
        tail = ", and this machine has no NVIDIA GPU to use either."
    yield finding(
        "fail" if gpu else "warn",
        f"PyTorch {torch.version} is a CPU-only build (torch.version.cuda is None): "
        "it can never use a GPU" + tail,
        fix,
    )


@check("PyTorch build matches the GPU vendor", "fail", pre.all_of(pre.nvidia_gpu, pre.torch_built))
def torch_rocm_on_nvidia(report: InfoReport) -> Iterator[Finding]:
    torch = torch_of(report)
    if torch.build == "rocm" and nvidia_gpu_present(report):
        yield finding(
            "fail",
            f"PyTorch {torch.version} is a ROCm (AMD) build, but this machine has NVIDIA GPUs.",
            f"pip install --force-reinstall torch --index-url {INDEX}/"
            f"{wheel_tag_for(report.driver.cuda_driver_version) or 'cu130'}",
        )


_RELEASE = re.compile(r"^(\d+)\.(\d+)")


@check("torchvision matches torch", "fail", pre.torchvision_installed)
def torchvision_mismatch(report: InfoReport) -> Iterator[Finding]:
    torch, vision = torch_of(report), torch_of(report).torchvision
    if vision is None or not vision.installed or torch.version is None:
        return
    problems = []
    if vision.ops_load is False:
        problems.append(f"its C++ ops do not load ({vision.ops_error})")
    elif vision.import_error:
        problems.append(f"`import torchvision` fails ({vision.import_error})")
    torch_tag, vision_tag = local_tag(torch.version), local_tag(vision.version)
    if torch_tag and vision_tag and torch_tag != vision_tag:
        problems.append(f"it is a +{vision_tag} build, torch is +{torch_tag}")
    expected = _paired_torchvision(torch.version)
    if expected and vision.version and not vision.version.startswith(expected + "."):
        problems.append(f"torch {torch.version} pairs with torchvision {expected}.x")
    if problems:
        yield finding(
            "fail",
            f"torchvision {vision.version} does not match torch {torch.version}: "
            + "; ".join(problems)
            + ".",
            _reinstall_pair(torch, vision.version, expected),
        )


def _paired_torchvision(torch_version: str) -> str | None:
    """torch 2.X pairs with torchvision 0.(X+15) since torch 2.0 / torchvision 0.15; torch 1.X
    with 0.(X+1) from 1.4 / 0.5 on, and 1.1 to 1.3 with 0.3, 0.4, 0.4 (pytorch/vision's table)."""
    match = _RELEASE.match(torch_version)
    if match is None:
        return None
    major, minor = int(match.group(1)), int(match.group(2))
    if major == 2:
        return f"0.{minor + 15}"
    if major == 1:
        return f"0.{minor + 1}" if minor >= 4 else {1: "0.3", 2: "0.4", 3: "0.4"}.get(minor)
    return None


def _reinstall_pair(torch: TorchInfo, vision_version: str | None, release: str | None) -> str:
    base = (torch.version or "").partition("+")[0]
    tag = local_tag(torch.version)
    if tag is None and torch.cuda_version:
        tag = "cu" + torch.cuda_version.replace(".", "")
    vision_base = (vision_version or "").partition("+")[0]
    if release and not vision_base.startswith(release + "."):
        vision_base = f"{release}.*"
    vision_pin = f"torchvision=={vision_base}" if vision_base else "torchvision"
    index = f" --index-url {INDEX}/{tag}" if tag else ""
    return (
        "install both from one index in one command: "
        f"pip install --force-reinstall torch=={base} '{vision_pin}'{index}"
    )
