"""Helpers more than one group of doctor checks uses."""

from __future__ import annotations

from gpudoc.info.model import GpuInfo, InfoReport, TorchInfo

INDEX = "https://download.pytorch.org/whl"
# CUDA wheel tags PyTorch publishes, newest first, as (major, minor) of the CUDA runtime.
WHEEL_TAGS = ((13, 0), (12, 9), (12, 8), (12, 6), (12, 4), (12, 1), (11, 8))


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


def torch_of(report: InfoReport) -> TorchInfo:
    """The probe's result; only checks whose precondition needs a probe result call this."""
    assert report.torch is not None
    return report.torch


def label(gpu: GpuInfo) -> str:
    return f"GPU {gpu.nvml_index} ({gpu.name or gpu.pci_bus_id or 'unknown'})"


def age(seconds_since_boot: float | None, uptime_s: float | None) -> str:
    """' 10 min ago': how long ago a kernel log line was written; '' when unknown."""
    if seconds_since_boot is None or uptime_s is None:
        return ""
    seconds = max(0.0, uptime_s - seconds_since_boot)
    if seconds < 120:
        return f" {seconds:.0f} s ago"
    if seconds < 3600:
        return f" {seconds / 60:.0f} min ago"
    if seconds < 172800:
        return f" {seconds / 3600:.1f} h ago"
    return f" {seconds / 86400:.1f} days ago"
