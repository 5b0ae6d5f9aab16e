"""Doctor checks about PyTorch and torchvision as the probe subprocess saw them."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpudoc.info import preconditions as pre
from gpudoc.info.doctor import Check, finding
from gpudoc.info.model import Finding, InfoReport, TorchInfo

INDEX = "https://download.pytorch.org/whl"
# CUDA wheel tags PyTorch publishes, newest first, as (major, minor) of the CUDA runtime.
WHEEL_TAGS = ((13, 0), (12, 9), (12, 8), (12, 6), (12, 4), (12, 1), (11, 8))
SELECTOR = "https://pytorch.org/get-started/locally/"


def nvidia_gpu_present(report: InfoReport) -> bool:
    return bool(report.gpus) or bool(report.host.pci_gpus)


def wheel_tag_for(cuda: str | None) -> str | None:
    """The newest PyTorch CUDA wheel tag a driver supporting CUDA `cuda` ("12.4") can run."""
    if cuda is None:
        return None
    major, _, minor = cuda.partition(".")
    driver = (int(major), int(minor or 0))
    # Same major, newer minor also runs (minor-version compatibility), with fewer features.
    fits = [t for t in WHEEL_TAGS if t <= driver] or [t for t in WHEEL_TAGS if t[0] == driver[0]]
    return f"cu{fits[0][0]}{fits[0][1]}" if fits else None


def local_tag(version: str | None) -> str | None:
    """`2.13.0+cpu` -> `cpu`; None for a version without a local tag (PyPI's default wheels)."""
    return version.partition("+")[2] or None if version else None


def _torch(report: InfoReport) -> TorchInfo:
    assert report.torch is not None  # needs_torch checks only run with a probe result
    return report.torch


def torch_missing(report: InfoReport) -> Iterator[Finding]:
    if _torch(report).installed:
        return
    tag = wheel_tag_for(report.driver.cuda_driver_version) or "cu130"
    yield finding(
        "torch-missing",
        "fail",
        f"PyTorch is not installed for this Python ({report.host.python}).",
        f"pip install torch torchvision --index-url {INDEX}/{tag}  (or pick yours at {SELECTOR})",
    )


def torch_import_error(report: InfoReport) -> Iterator[Finding]:
    torch = _torch(report)
    if torch.probe_error:
        yield finding(
            "torch-import-error",
            "fail",
            f"PyTorch could not be probed: {torch.probe_error}.",
            "run `python -c 'import torch; torch.cuda.is_available()'` to see the failure; a hang "
            "or crash there usually means a broken CUDA install: reinstall torch in a clean venv",
        )
    elif torch.import_error:
        yield finding(
            "torch-import-error",
            "fail",
            f"`import torch` fails: {torch.import_error}",
            "reinstall torch with its dependencies in a clean environment "
            "(pip install --force-reinstall torch); do not use --no-deps or mix a system CUDA "
            "into the wheel's libraries",
        )


def torch_cpu_build(report: InfoReport) -> Iterator[Finding]:
    torch = _torch(report)
    if torch.build != "cpu":
        return
    gpu = nvidia_gpu_present(report)
    tag = wheel_tag_for(report.driver.cuda_driver_version)
    command = "pip install --force-reinstall torch torchvision --index-url"
    fix = f"{command} {INDEX}/{tag}"
    if tag is None:  # no driver to ask: name the newest wheel and where to pick another
        where = "install the NVIDIA driver, then" if gpu else "on the GPU machine:"
        fix = f"{where} {command} {INDEX}/cu130 (or the CUDA tag its driver supports: {SELECTOR})"
    yield finding(
        "torch-cpu-build",
        "fail" if gpu else "warn",
        f"PyTorch {torch.version} is a CPU-only build (torch.version.cuda is None): "
        "it can never use a GPU"
        + ("." if gpu else ", and this machine has no NVIDIA GPU to use either."),
        fix,
    )


def torch_rocm_on_nvidia(report: InfoReport) -> Iterator[Finding]:
    torch = _torch(report)
    if torch.build == "rocm" and nvidia_gpu_present(report):
        yield finding(
            "torch-rocm-on-nvidia",
            "fail",
            f"PyTorch {torch.version} is a ROCm (AMD) build, but this machine has NVIDIA GPUs.",
            f"pip install --force-reinstall torch --index-url {INDEX}/"
            f"{wheel_tag_for(report.driver.cuda_driver_version) or 'cu130'}",
        )


def cuda_unavailable(report: InfoReport) -> Iterator[Finding]:
    torch = _torch(report)
    if torch.build != "cuda" or torch.cuda_available is not False:
        return
    reason = torch.unavailable_reason or "; ".join(torch.init_warnings)
    said = f"torch says: {reason}" if reason else "torch gives no reason"
    yield finding(
        "cuda-unavailable",
        "fail" if nvidia_gpu_present(report) else "warn",
        f"torch.cuda.is_available() is False; {said}.",
        "see the other findings for the cause; none found means CUDA sees no device "
        "(check CUDA_VISIBLE_DEVICES and `nvidia-smi`)",
    )


_RELEASE = re.compile(r"^(\d+)\.(\d+)")


def torchvision_mismatch(report: InfoReport) -> Iterator[Finding]:
    torch, vision = _torch(report), _torch(report).torchvision
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
            "torchvision-mismatch",
            "fail",
            f"torchvision {vision.version} does not match torch {torch.version}: "
            + "; ".join(problems)
            + ".",
            _reinstall_pair(torch, vision.version, expected),
        )


def _paired_torchvision(torch_version: str) -> str | None:
    """torch 2.X pairs with torchvision 0.(X+15) since torch 2.0 / torchvision 0.15."""
    match = _RELEASE.match(torch_version)
    if match is None or match.group(1) != "2":
        return None
    return f"0.{int(match.group(2)) + 15}"


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


CHECKS = (
    Check("torch-missing", "PyTorch is installed", "fail", torch_missing, pre.torch_probed),
    Check(
        "torch-import-error",
        "PyTorch imports",
        "fail",
        torch_import_error,
        pre.torch_installed,
    ),
    Check(
        "torch-cpu-build",
        "PyTorch is a CUDA build",
        "fail/warn",
        torch_cpu_build,
        pre.torch_imported,
    ),
    Check(
        "torch-rocm-on-nvidia",
        "PyTorch build matches the GPU vendor",
        "fail",
        torch_rocm_on_nvidia,
        pre.all_of(pre.nvidia_gpu, pre.torch_imported),
    ),
    Check(
        "torchvision-mismatch",
        "torchvision matches torch",
        "fail",
        torchvision_mismatch,
        pre.torchvision_installed,
    ),
)
# Shown after every other check: torch's own verdict, once the causes are listed.
SUMMARY_CHECKS = (
    Check(
        "cuda-unavailable",
        "torch.cuda.is_available() on a CUDA build",
        "fail/warn",
        cuda_unavailable,
        pre.torch_cuda_build,
    ),
)
