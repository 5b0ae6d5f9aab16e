"""NVML reads about a GPU's links and its trustworthiness: NVLink per link, the NVSwitch fabric,
ECC mode, PCIe replays and AER counts, the driver's recovery action, the InfoROM. Called by
nvml.py with its reader, so a failed read is None plus a FieldError, never an exception.

A driver without one of these functions (FunctionNotFound) leaves the field None without a
FieldError: they are diagnostics added after the rest, and an older driver lacking them is
not a binding/driver mismatch worth a warning.
"""

from __future__ import annotations

from ctypes import byref
from typing import Any

from gpudoc.info.model import FieldError
from gpudoc.info.nvml_reader import NOT_IN_BINDING, Reader, error_name

FABRIC_STATES = {0: "not_supported", 1: "not_started", 2: "in_progress", 3: "completed"}
RECOVERY_ACTIONS = {
    0: "none",
    1: "gpu_reset",
    2: "node_reboot",
    3: "drain_p2p",
    4: "drain_and_reset",
    5: "recover_imex_domain",
    6: "bus_reset",
    7: "system_reboot",
}
ABSENT = ("FunctionNotFound",)
# NVML's answers for a link index the GPU does not have: InvalidArgument for the index,
# NotSupported for every index on a GPU without NVLink.
NO_SUCH_LINK = ("NotSupported", "InvalidArgument")
# nvmlFieldValue_t.valueType -> the member of its value union.
_VALUE_MEMBERS = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")
# Model field -> the NVML field id constant (nvmlDeviceGetFieldValues).
FIELD_IDS = {
    "pcie_aer_correctable_count": "NVML_FI_DEV_PCIE_COUNT_CORRECTABLE_ERRORS",
    "pcie_aer_nonfatal_count": "NVML_FI_DEV_PCIE_COUNT_NON_FATAL_ERROR",
    "pcie_aer_fatal_count": "NVML_FI_DEV_PCIE_COUNT_FATAL_ERROR",
    "recovery_action": "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION",
}


def interconnect(lib: Any, read: Reader, handle: Any) -> dict[str, Any]:
    ecc, _ = call(read, "ecc_mode", "nvmlDeviceGetEccMode", handle)
    replays, _ = call(read, "pcie_replay_count", "nvmlDeviceGetPcieReplayCounter", handle)
    return {
        "nvlink_links_active": nvlink_links(lib, read, handle),
        **fabric(lib, read, handle),
        "ecc_mode_current": None if ecc is None else bool(ecc[0]),
        "ecc_mode_pending": None if ecc is None else bool(ecc[1]),
        "pcie_replay_count": replays,
        **field_values(lib, read, handle),
        "inforom_valid": inforom_valid(read, handle),
    }


def call(
    read: Reader, field: str, function: str, *args: Any, quiet: tuple[str, ...] = ABSENT
) -> tuple[Any, str | None]:
    """(value, None) or (None, error name); errors in `quiet` leave no FieldError."""
    before = len(read.errors)
    value = read.get(field, function, *args)
    failures = read.errors[before:]
    if not failures:
        return value, "GpuIsLost" if read.lost else None
    if failures[0].error in quiet:
        del read.errors[before:]
    return None, failures[0].error


def nvlink_links(lib: Any, read: Reader, handle: Any) -> tuple[bool, ...] | None:
    """Active or not, for each link the GPU has; () without NVLink; None when NVML cannot say."""
    states: list[bool] = []
    for link in range(getattr(lib, "NVML_NVLINK_MAX_LINKS", 18)):
        state, error = call(
            read,
            "nvlink_links_active",
            "nvmlDeviceGetNvLinkState",
            handle,
            link,
            quiet=(*NO_SUCH_LINK, *ABSENT),
        )
        if error == "NotSupported" and not states:
            break  # the GPU has no NVLink: NVML says so for every index
        if error in NO_SUCH_LINK:
            continue  # an index this GPU does not have (disabled links may leave gaps)
        if error is not None:
            return None  # NoPermission, FunctionNotFound, GpuIsLost: unknown
        states.append(bool(state))
    return tuple(states)


def fabric(lib: Any, read: Reader, handle: Any) -> dict[str, Any]:
    """The GPU's NVSwitch fabric registration (Hopper and later; NotSupported before)."""
    info = lib.c_nvmlGpuFabricInfoV_t()
    _, error = call(
        read,
        "fabric_state",
        "nvmlDeviceGetGpuFabricInfoV",
        handle,
        byref(info),
        quiet=(*ABSENT, NOT_IN_BINDING),
    )
    if error in (*ABSENT, NOT_IN_BINDING):  # drivers before 550 have the unversioned call only
        info = lib.c_nvmlGpuFabricInfo_t()
        _, error = call(read, "fabric_state", "nvmlDeviceGetGpuFabricInfo", handle, byref(info))
    if error is not None:
        return {"fabric_state": None, "fabric_status": None}
    state, status = int(info.state), int(info.status)
    return {
        "fabric_state": FABRIC_STATES.get(state, f"unknown({state})"),
        "fabric_status": "Success" if status == 0 else error_name(lib.NVMLError(status)),
    }


def field_values(lib: Any, read: Reader, handle: Any) -> dict[str, Any]:
    """AER counts and the recovery action in one call; a field this driver lacks stays None."""
    found: dict[str, Any] = dict.fromkeys(FIELD_IDS)
    ids = [getattr(lib, constant, None) for constant in FIELD_IDS.values()]
    if None in ids:  # an nvidia-ml-py older than these fields
        read.errors.append(FieldError("field_values", NOT_IN_BINDING))
        return found
    values, _ = call(read, "field_values", "nvmlDeviceGetFieldValues", handle, ids)
    for field, value in zip(FIELD_IDS, values or (), strict=False):
        if value.nvmlReturn != 0:  # NotSupported on GeForce; InvalidArgument: an older driver
            read.errors.append(FieldError(field, error_name(lib.NVMLError(value.nvmlReturn))))
            continue
        found[field] = int(getattr(value.value, _VALUE_MEMBERS[value.valueType]))
    action = found["recovery_action"]
    if action is not None:
        found["recovery_action"] = RECOVERY_ACTIONS.get(action, f"unknown({action})")
    return found


def inforom_valid(read: Reader, handle: Any) -> bool | None:
    """NVML checks the InfoROM's checksums: CorruptedInforom is the answer False."""
    _, error = call(
        read,
        "inforom_valid",
        "nvmlDeviceValidateInforom",
        handle,
        quiet=(*ABSENT, "CorruptedInforom"),
    )
    if error is None:
        return True
    return False if error == "CorruptedInforom" else None
