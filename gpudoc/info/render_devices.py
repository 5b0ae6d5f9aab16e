"""The Devices section of the human view: a table of GPUs and a details line for each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpudoc.info.model import GpuInfo, InfoReport

if TYPE_CHECKING:
    from rich.console import RenderableType

MISSING = "–"
GIB = 1024**3


def _v(value: object) -> str:
    return MISSING if value is None else str(value)


def devices_view(report: InfoReport) -> RenderableType:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    physical = _v(report.driver.physical_gpu_count)
    visible = MISSING if report.torch is None else _v(report.torch.device_count)
    count = Text(f"physical (NVML) {physical}, visible to torch {visible}")
    if not report.gpus:
        return Group(count, Text(""))
    table = Table(box=None, pad_edge=False, header_style="dim")
    for column in ("GPU", "cuda", "name", "bus id", "CC", "memory used/total", "util", "temp"):
        table.add_column(column, no_wrap=True)
    table.add_column("power", no_wrap=True)
    for gpu in report.gpus:
        table.add_row(*(Text(cell) for cell in _device_row(gpu)))
    details = Table.grid(padding=(0, 1))
    details.add_column(no_wrap=True, style="dim")
    details.add_column()
    for gpu in report.gpus:
        details.add_row(Text(f"GPU {gpu.nvml_index}"), Text(_device_details(gpu)))
    return Group(count, table, details, Text(""))


def _field(gpu: GpuInfo, name: str, text: str | None) -> str:
    if text is not None:
        return text
    if any(e.field == name and e.error == "NotSupported" for e in gpu.field_errors):
        return "n/a"
    return MISSING


def _device_row(gpu: GpuInfo) -> list[str]:
    memory = None
    if gpu.memory_total_bytes is not None:
        memory = f"{_gib(gpu.memory_used_bytes)}/{_gib(gpu.memory_total_bytes)} GiB"
    power = None
    if gpu.power_draw_mw is not None:
        power = f"{gpu.power_draw_mw / 1000:.0f}/{_v(_watts(gpu.power_limit_mw))} W"
    cc = gpu.compute_capability
    if cc and gpu.arch_supported_by_torch is False:
        cc += " (no kernels)"
    return [
        str(gpu.nvml_index) + (" LOST" if gpu.lost else ""),
        _v(gpu.torch_index),
        _v(gpu.name and gpu.name.removeprefix("NVIDIA ")),
        _v(gpu.pci_bus_id),
        _v(cc),
        _field(gpu, "memory", memory),
        _field(
            gpu,
            "utilization",
            None if gpu.utilization_gpu_percent is None else f"{gpu.utilization_gpu_percent}%",
        ),
        _field(
            gpu, "temperature_c", None if gpu.temperature_c is None else f"{gpu.temperature_c}°C"
        ),
        _field(gpu, "power_draw_mw", power),
    ]


def _gib(size_bytes: int | None) -> str:
    return "?" if size_bytes is None else f"{size_bytes / GIB:.1f}"


def _watts(milliwatts: int | None) -> str | None:
    return None if milliwatts is None else f"{milliwatts / 1000:.0f}"


def _device_details(gpu: GpuInfo) -> str:
    parts = [_v(gpu.uuid)]
    parts.append(f"mode {_field(gpu, 'compute_mode', gpu.compute_mode)}")
    parts.append(f"persistence {_field(gpu, 'persistence_mode', _onoff(gpu.persistence_mode))}")
    mig = _v(_onoff(gpu.mig_mode_current))
    if gpu.mig_mode_pending is not None and gpu.mig_mode_pending != gpu.mig_mode_current:
        mig += f" (pending {_onoff(gpu.mig_mode_pending)})"
    if gpu.mig_instances is not None:
        mig += f", {len(gpu.mig_instances)} instance(s)"
        mig += "".join(f" {m.uuid}" for m in gpu.mig_instances)
    parts.append(f"MIG {_field(gpu, 'mig_mode', None) if gpu.mig_mode_current is None else mig}")
    parts.append(
        f"ECC errors {_field(gpu, 'ecc_uncorrected_volatile', _n(gpu.ecc_uncorrected_volatile))}"
    )
    parts += _health(gpu)
    if gpu.processes is not None:
        listed = [
            " ".join(filter(None, [str(p.pid), p.name, f"{_gib(p.used_memory_bytes)} GiB"]))
            for p in gpu.processes
        ]
        parts.append("processes " + (", ".join(listed) or "none"))
    return " · ".join(parts)


def _health(gpu: GpuInfo) -> list[str]:
    """Clocks with their event reasons, and memory repair: only what this GPU reports."""
    parts = []
    if gpu.clock_sm_mhz is not None:
        clocks = f"SM {gpu.clock_sm_mhz}/{_v(gpu.clock_sm_max_mhz)} MHz"
        reasons = [_reason(r) for r in gpu.clocks_event_reasons or ()]
        parts.append(clocks + (f" ({', '.join(reasons)})" if reasons else ""))
    if gpu.remapped_rows_pending is not None:
        counts = (gpu.remapped_rows_uncorrectable, gpu.remapped_rows_correctable)
        rows = f"rows remapped {_v(counts[0])} uncorrectable, {_v(counts[1])} correctable"
        rows = "rows remapped 0" if counts == (0, 0) else rows
        rows += ", remap PENDING" if gpu.remapped_rows_pending else ""
        rows += ", remap FAILED" if gpu.remapped_rows_failure else ""
        parts.append(rows)
    elif gpu.retired_pages_pending is not None:
        parts.append(f"page retirement pending {'YES' if gpu.retired_pages_pending else 'no'}")
    if gpu.pcie_link_gen_current is not None or gpu.pcie_link_width_current is not None:
        parts.append(_pcie(gpu))
    return parts


def _pcie(gpu: GpuInfo) -> str:
    """`PCIe Gen1 x16 of Gen4 x16`, plus the GPU's own max where the slot allows less."""
    now = f"Gen{_v(gpu.pcie_link_gen_current)} x{_v(gpu.pcie_link_width_current)}"
    most = f"Gen{_v(gpu.pcie_link_gen_max)} x{_v(gpu.pcie_link_width_max)}"
    own, slot = gpu.pcie_link_gen_gpu_max, gpu.pcie_link_gen_max
    limit = f" (GPU Gen{own})" if own is not None and slot is not None and own > slot else ""
    return f"PCIe {now} of {most}{limit}"


def _reason(name: str) -> str:
    """ "sw_thermal_slowdown" -> "SW thermal slowdown"; "gpu_idle" -> "idle"."""
    words = name.removeprefix("gpu_").split("_")
    return " ".join(w.upper() if w in ("sw", "hw") else w for w in words)


def _onoff(value: bool | None) -> str | None:
    return None if value is None else "on" if value else "off"


def _n(value: int | None) -> str | None:
    return None if value is None else str(value)
