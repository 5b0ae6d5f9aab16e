"""A fake pynvml driven by a recorded scenario, raising pynvml's REAL exception classes.

Scenario layout (fixtures/nvml/*.json, key "nvml"):
  init_error        null or an NVML error name ("LibraryNotFound", "DriverNotLoaded", ...)
  system            {pynvml function name: value}
  devices           [{pynvml function name: value}], plus optional "lost": true and
                    "mig_devices": [{"slot": n, function name: value}]
A value {"error": "NotSupported"} raises `pynvml.NVMLError_NotSupported`; {"error":
"NVMLLibraryMismatchError"} raises that (non-NVMLError) class. A function missing from the
scenario raises NVMLError_FunctionNotFound, as pynvml does when the driver lacks the symbol;
a function named in "binding_lacks" is not there at all, as in an nvidia-ml-py older than it.
Dict values become attribute objects (memory info, PCI info, utilization, processes).
Calls with arguments pynvml fills or indexes are recorded as NVML answers them:
  nvmlDeviceGetNvLinkState      [1, 1, 0, ...]: one entry per link; a later index raises
                                InvalidArgument (no such link), {"error": ...} raises for all
  nvmlDeviceGetGpuFabricInfo(V) {"state": 3, "status": 0}: written into pynvml's real struct
  nvmlDeviceGetFieldValues      {"173": 0, "230": {"error": "NotSupported"}}: per field id, as
                                pynvml's real c_nvmlFieldValue_t; an absent id answers
                                InvalidArgument (a driver older than the field)
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pynvml


def nvml_error(name: str) -> Exception:
    if name == "NVMLLibraryMismatchError":
        return pynvml.NVMLLibraryMismatchError("Unversioned function called and the library lacks")
    error_class = getattr(pynvml, f"NVMLError_{name}")
    assert issubclass(error_class, pynvml.NVMLError), name
    return error_class()


def _value(recorded: Any) -> Any:
    if isinstance(recorded, dict) and set(recorded) == {"error"}:
        raise nvml_error(recorded["error"])
    if isinstance(recorded, dict):
        return SimpleNamespace(**recorded)
    if isinstance(recorded, list) and recorded and isinstance(recorded[0], dict):
        return [SimpleNamespace(**item) for item in recorded]
    return recorded


class _Handle:
    def __init__(self, record: dict[str, Any], lost: bool) -> None:
        self.record = record
        self.lost = lost


class FakeNvml:
    """Module-like: functions by name, constants and exception classes from the real pynvml."""

    def __init__(self, scenario: dict[str, Any]) -> None:
        self.scenario = scenario
        self.initialised = 0
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if name in self.scenario.get("binding_lacks", ()):
            raise AttributeError(name)
        if name.startswith(("NVML", "nvmlMemory", "c_nvml")):
            return getattr(pynvml, name)  # real constants and exception classes
        if name.startswith("nvmlDevice"):
            return lambda handle, *args: self._device_call(name, handle, *args)
        if name.startswith("nvmlSystem"):
            return lambda: self._system_call(name)
        raise AttributeError(name)

    def nvmlInit(self) -> None:
        self.calls.append("nvmlInit")
        if self.scenario.get("init_error"):
            raise nvml_error(self.scenario["init_error"])
        self.initialised += 1

    def nvmlShutdown(self) -> None:
        self.calls.append("nvmlShutdown")
        self.initialised -= 1

    def nvmlDeviceGetCount(self) -> int:
        self._require_init()
        return len(self.scenario.get("devices", []))

    def nvmlDeviceGetHandleByIndex(self, index: int) -> _Handle:
        self._require_init()
        record = self.scenario["devices"][index]
        if "handle" in record:
            _value(record["handle"])
        return _Handle(record, bool(record.get("lost")))

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: _Handle, slot: int) -> _Handle:
        for mig in handle.record.get("mig_devices", []):
            if mig["slot"] == slot:
                return _Handle(mig, False)
        raise nvml_error("NotFound")

    def _require_init(self) -> None:
        if self.initialised <= 0:
            raise nvml_error("Uninitialized")

    def _system_call(self, name: str) -> Any:
        self._require_init()
        self.calls.append(name)
        system = self.scenario.get("system", {})
        if name not in system:
            raise nvml_error("FunctionNotFound")
        return _value(system[name])

    def _device_call(self, name: str, handle: _Handle, *args: Any) -> Any:
        self._require_init()
        self.calls.append(name)
        if handle.lost:
            raise nvml_error("GpuIsLost")
        if name not in handle.record:
            raise nvml_error("FunctionNotFound")
        recorded = handle.record[name]
        if name in _OUT_STRUCT and "error" not in recorded:
            for key, value in recorded.items():
                setattr(args[0]._obj, key, value)  # args[0] is ctypes.byref(struct)
            return pynvml.NVML_SUCCESS
        if name == "nvmlDeviceGetNvLinkState" and isinstance(recorded, list):
            if args[0] >= len(recorded):
                raise nvml_error("InvalidArgument")
            return _value(recorded[args[0]])
        if name == "nvmlDeviceGetFieldValues" and "error" not in recorded:
            return _field_values(recorded, args[0])
        return _value(recorded)


_OUT_STRUCT = ("nvmlDeviceGetGpuFabricInfoV", "nvmlDeviceGetGpuFabricInfo")


def _field_values(recorded: dict[str, Any], ids: list[int]) -> Any:
    values = (pynvml.c_nvmlFieldValue_t * len(ids))()
    for slot, field_id in zip(values, ids, strict=True):
        slot.fieldId = field_id
        answer = recorded.get(str(field_id), {"error": "InvalidArgument"})
        if isinstance(answer, dict):
            slot.nvmlReturn = nvml_error(answer["error"]).value  # type: ignore[attr-defined]
        else:
            slot.valueType = pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
            slot.value.ullVal = answer
    return values
