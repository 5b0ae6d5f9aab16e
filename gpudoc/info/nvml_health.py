"""NVML reads that say whether a GPU is unwell: clock slowdowns and their reasons, page
retirement and row remapping, the PCIe link. Called by nvml.py with its reader (so failures
become None)."""

from __future__ import annotations

from typing import Any

from gpudoc.info.nvml_reader import Reader

# nvmlClocksEventReason* bits (the same values as the older nvmlClocksThrottleReason*).
CLOCKS_EVENT_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def clocks(lib: Any, read: Reader, handle: Any) -> dict[str, Any]:
    reasons = read.first(
        "clocks_event_reasons",
        ("nvmlDeviceGetCurrentClocksEventReasons", (handle,)),
        ("nvmlDeviceGetCurrentClocksThrottleReasons", (handle,)),  # its name before 535
    )
    return {
        "clock_sm_mhz": read.get(
            "clock_sm_mhz", "nvmlDeviceGetClockInfo", handle, lib.NVML_CLOCK_SM
        ),
        "clock_sm_max_mhz": read.get(
            "clock_sm_max_mhz", "nvmlDeviceGetMaxClockInfo", handle, lib.NVML_CLOCK_SM
        ),
        "clocks_event_reasons": None if reasons is None else reason_names(reasons),
    }


def reason_names(mask: int) -> tuple[str, ...]:
    """0x48 -> ("hw_slowdown", "hw_thermal_slowdown"); unknown bits keep their value."""
    bits = [1 << shift for shift in range(64) if mask >> shift & 1]
    return tuple(CLOCKS_EVENT_REASONS.get(bit, f"0x{bit:x}") for bit in bits)


def memory_health(read: Reader, handle: Any) -> dict[str, Any]:
    """Page retirement (before Ampere) or row remapping (Ampere and later): the other one, and
    both on GeForce, answer NotSupported, which leaves the fields None."""
    pending = read.get("retired_pages_pending", "nvmlDeviceGetRetiredPagesPendingStatus", handle)
    rows = read.get("remapped_rows", "nvmlDeviceGetRemappedRows", handle)
    correctable, uncorrectable, remap_pending, failure = rows if rows else (None,) * 4
    return {
        "retired_pages_pending": None if pending is None else bool(pending),
        "remapped_rows_correctable": correctable,
        "remapped_rows_uncorrectable": uncorrectable,
        "remapped_rows_pending": None if remap_pending is None else bool(remap_pending),
        "remapped_rows_failure": None if failure is None else bool(failure),
    }


def pcie_link(read: Reader, handle: Any) -> dict[str, Any]:
    """Generation and width of the link now and at most (NotSupported leaves them None)."""
    return {
        "pcie_link_gen_current": read.get(
            "pcie_link_gen_current", "nvmlDeviceGetCurrPcieLinkGeneration", handle
        ),
        "pcie_link_gen_max": read.get(
            "pcie_link_gen_max", "nvmlDeviceGetMaxPcieLinkGeneration", handle
        ),
        # Newer than the other four: a driver without it is old, not mismatched with its binding.
        "pcie_link_gen_gpu_max": read.get(
            "pcie_link_gen_gpu_max",
            "nvmlDeviceGetGpuMaxPcieLinkGeneration",
            handle,
            expected=("FunctionNotFound",),
        ),
        "pcie_link_width_current": read.get(
            "pcie_link_width_current", "nvmlDeviceGetCurrPcieLinkWidth", handle
        ),
        "pcie_link_width_max": read.get(
            "pcie_link_width_max", "nvmlDeviceGetMaxPcieLinkWidth", handle
        ),
    }
