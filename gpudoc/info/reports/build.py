"""Facts of every report merged into the InfoReport the live path builds, with provenance.

A value the first report gives wins over a later one's, except that a value yields to a real one
where it is None or a name nvidia-smi's table cut short ("Tesla V100-SXM2..."). GPUs of different
reports are the same GPU when their PCI bus ids match, else when their nvidia-smi indices do.
Every field no report gives keeps the blank value below: None, never a default that means
something.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from gpudoc.info.collect import arch_supported
from gpudoc.info.model import (
    DriverInfo,
    GpuInfo,
    HostInfo,
    InfoReport,
    KernelLog,
    ReportSource,
    TorchInfo,
    TorchvisionInfo,
    VisibleDevices,
    XidEvent,
)
from gpudoc.info.reports.collect_env import not_importable
from gpudoc.info.reports.facts import Facts, GpuFacts
from gpudoc.info.visible import parse_visible_devices

_BLANK_DRIVER = DriverInfo(*(None,) * 8)
_BLANK_HOST = HostInfo(None, None, None, None, None, None, None)
_GPU_REQUIRED = [f.name for f in dataclasses.fields(GpuInfo) if f.default is dataclasses.MISSING]


def build_report(reports: Sequence[tuple[str, Facts]]) -> InfoReport:
    gpus, gpu_given = _merge_gpus(reports)
    torch = _torch(reports)
    gpus = tuple(_with_arch(gpu, torch) for gpu in gpus)
    host = _host(reports)
    report = InfoReport(
        torch=torch,
        driver=dataclasses.replace(_BLANK_DRIVER, **_merged(f.driver for _, f in reports)),
        gpus=gpus,
        host=host,
        visible=_visible(host.env.get("CUDA_VISIBLE_DEVICES"), gpus),
    )
    sources = tuple(
        ReportSource(path, facts.format, _facts_given(facts, gpu_given.get(id(facts), [])))
        for path, facts in reports
    )
    return dataclasses.replace(report, sources=sources)


def _visible(raw: str | None, gpus: tuple[GpuInfo, ...]) -> VisibleDevices:
    """CUDA_VISIBLE_DEVICES read with the live path's rules against the GPUs the reports list,
    when they list nvidia-smi's indices from 0 without a gap."""
    if raw is None or not gpus or [g.nvml_index for g in gpus] != list(range(len(gpus))):
        return VisibleDevices(raw=raw, nvml_indices=None)
    parents = {m.uuid: g.nvml_index for g in gpus for m in g.mig_instances or () if m.uuid}
    return parse_visible_devices(raw, [g.uuid for g in gpus], parents)


def _better(old: Any, new: Any) -> bool:
    if old is None:
        return new is not None
    return isinstance(old, str) and old.endswith("...") and isinstance(new, str) and len(new) > 3


def _merged(dicts: Any) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for facts in dicts:
        for key, value in facts.items():
            if key not in merged or _better(merged[key], value):
                merged[key] = value
    return merged


def _torch(reports: Sequence[tuple[str, Facts]]) -> TorchInfo | None:
    said = [f.torch for _, f in reports if f.torch]
    if not said:
        return None
    merged = _merged(said)
    if any(t.get("installed") is False for t in said) and any(t.get("installed") for t in said):
        # collect_env printed "PyTorch version: N/A" but a package list has torch: it is
        # installed and does not import.
        not_importable(merged)
    torch = dataclasses.replace(TorchInfo(installed=bool(merged.pop("installed", False))), **merged)
    vision = _merged(f.torchvision for _, f in reports)
    if vision:
        blank = TorchvisionInfo(True, None, None, None, None)
        torch = dataclasses.replace(torch, torchvision=dataclasses.replace(blank, **vision))
    return torch


def _host(reports: Sequence[tuple[str, Facts]]) -> HostInfo:
    host = dataclasses.replace(_BLANK_HOST, **_merged(f.host for _, f in reports))
    env = _merged(f.env for _, f in reports)
    logs = [(path, f.xid_events) for path, f in reports if f.xid_events is not None]
    kernel_log = None
    if logs:
        events: list[XidEvent] = [e for _, found in logs for e in found]
        switches = [s for _, f in reports for s in f.sxid_events]
        source = ", ".join(p for p, _ in logs)
        kernel_log = KernelLog(source, None, None, tuple(events), tuple(switches))
    return dataclasses.replace(host, env=env, kernel_log=kernel_log)


# Per report (by id): which joined GPU each of its GPU facts went to, and the fields it gave.
Given = dict[int, list[tuple[GpuFacts, list[str]]]]


def _merge_gpus(reports: Sequence[tuple[str, Facts]]) -> tuple[tuple[GpuInfo, ...], Given]:
    """The GPUs every report lists, joined, and what each report gave about which."""
    joined: list[GpuFacts] = []
    given: Given = {}
    for _, facts in reports:
        for gpu in facts.gpus or ():
            match = _same_gpu(joined, gpu)
            if match is None:
                match = GpuFacts(gpu.index, {})
                joined.append(match)
            if match.index is None:
                match.index = gpu.index
            match.fields = _merged([match.fields, gpu.fields])
            given.setdefault(id(facts), []).append((match, list(gpu.fields)))
    for _, facts in reports:  # after every list: torch names GPUs, it does not list them
        for name, fields in facts.gpus_by_name.items():
            named = [g for g in joined if _same_name(g.fields.get("name"), name)]
            if not named:
                named = [GpuFacts(None, {"name": name})]
                joined.extend(named)
            for gpu in named:
                gpu.fields = _merged([gpu.fields, fields])
                given.setdefault(id(facts), []).append((gpu, list(fields)))
    numbered = _number(joined)
    for index, gpu in numbered:
        gpu.index = index
    return tuple(_gpu_info(index, gpu.fields) for index, gpu in numbered), given


def _same_name(listed: object, named: str) -> bool:
    """`NVIDIA GeForce RTX 5090` as torch names it is nvidia-smi's (older ones lack "NVIDIA ")."""
    if not isinstance(listed, str):
        return False
    return listed.removeprefix("NVIDIA ") == named.removeprefix("NVIDIA ")


def _same_gpu(joined: list[GpuFacts], gpu: GpuFacts) -> GpuFacts | None:
    bus = gpu.fields.get("pci_bus_id")
    for other in joined:
        other_bus = other.fields.get("pci_bus_id")
        if bus is not None and bus == other_bus:
            return other
    for other in joined:
        other_bus = other.fields.get("pci_bus_id")
        if bus is not None and other_bus is not None:
            continue  # both know their bus and they differ
        if gpu.index is not None and gpu.index == other.index:
            return other
    return None


def _number(joined: list[GpuFacts]) -> list[tuple[int, GpuFacts]]:
    """nvidia-smi's index where a report says it; else the next free one, by bus id."""
    taken = {g.index for g in joined if g.index is not None}
    free = (i for i in range(len(joined) * 2 + 1) if i not in taken)
    unnumbered = sorted(
        (g for g in joined if g.index is None), key=lambda g: str(g.fields.get("pci_bus_id"))
    )
    numbered = [(g.index, g) for g in joined if g.index is not None]
    numbered += [(next(free), g) for g in unnumbered]
    return sorted(((i, g) for i, g in numbered if i is not None), key=lambda pair: pair[0])


def _gpu_info(index: int, fields: dict[str, Any]) -> GpuInfo:
    blank: dict[str, Any] = dict.fromkeys(_GPU_REQUIRED)
    blank["nvml_index"] = index
    return dataclasses.replace(GpuInfo(**blank), **fields)


def _facts_given(facts: Facts, gpus: list[tuple[GpuFacts, list[str]]]) -> tuple[str, ...]:
    given = [f"torch.{key}" for key in facts.torch]
    given += [f"torchvision.{key}" for key in facts.torchvision]
    given += [f"driver.{key}" for key in facts.driver]
    given += [f"host.{key}" for key in facts.host]
    given += [f"host.env.{name}" for name in facts.env]
    if "CUDA_VISIBLE_DEVICES" in facts.env:
        given.append("visible.raw")
    if facts.gpus is not None:
        given.append("gpus")
    given += [f"gpus[{gpu.index}].{key}" for gpu, keys in gpus for key in keys]
    if facts.xid_events is not None:
        given.append("host.kernel_log")
    return tuple(dict.fromkeys(given + facts.declared))


def _with_arch(gpu: GpuInfo, torch: TorchInfo | None) -> GpuInfo:
    """Whether torch has kernels for the GPU, as the live path decides it, when both are said."""
    if torch is None or torch.arch_list is None or gpu.arch_supported_by_torch is not None:
        return gpu
    if torch.build not in ("cuda", None):
        return gpu
    supported = arch_supported(gpu.compute_capability, torch.arch_list)
    return dataclasses.replace(gpu, arch_supported_by_torch=supported)
