"""The only torch importer in gpudoc/info: run as a script in a fresh subprocess, prints one JSON
object (the fields of `model.TorchInfo`) on stdout.

Why a subprocess: torch caches the CUDA device count once per process, CUDA initialisation poisons
`fork`, and a broken CUDA install can crash or hang the interpreter. This file uses the standard
library and torch only, so the parent can run it by path without gpudoc being importable.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import sys
import time
import warnings
from pathlib import Path
from typing import Any

_VERSION_LINE = re.compile(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", re.MULTILINE)


def probe() -> dict[str, Any]:
    started = time.perf_counter()
    if importlib.util.find_spec("torch") is None:
        return {"installed": False}
    try:
        import torch
    except BaseException as error:  # ImportError, OSError from a missing libcudnn, SystemExit
        return {"installed": True, "import_error": _describe(error)}
    info: dict[str, Any] = {"installed": True, "version": str(torch.__version__)}
    info.update(_build(torch))
    info.update(_availability(torch))
    info["devices"] = _devices(torch, info.get("device_count") or 0)
    info["torchvision"] = _torchvision()
    info["probe_seconds"] = round(time.perf_counter() - started, 3)
    return info


def _build(torch: Any) -> dict[str, Any]:
    cuda, hip = torch.version.cuda, getattr(torch.version, "hip", None)
    return {
        "build": "rocm" if hip else "cuda" if cuda else "cpu",
        "cuda_version": cuda,
        "hip_version": hip,
        "cudnn_version": _quiet(torch.backends.cudnn.version),
        "nccl_version": _nccl(torch),
        "arch_list": list(_quiet(torch.cuda.get_arch_list) or []),
    }


def _nccl(torch: Any) -> str | None:
    version = _quiet(torch.cuda.nccl.version)
    if isinstance(version, tuple):
        return ".".join(str(part) for part in version)
    return None if version is None else str(version)


def _availability(torch: Any) -> dict[str, Any]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        available = bool(torch.cuda.is_available())
        count = int(torch.cuda.device_count()) if available else 0
    reason = None
    if not available:
        try:  # torch keeps the real reason to itself unless asked to initialise
            torch.cuda.init()
        except BaseException as error:
            reason = _describe(error)
    return {
        "cuda_available": available,
        "device_count": count,
        "unavailable_reason": reason,
        "init_warnings": [str(w.message) for w in caught if "CUDA" in str(w.message)],
    }


def _devices(torch: Any, count: int) -> list[dict[str, Any]]:
    devices: list[dict[str, Any]] = []
    for index in range(count):
        props = _quiet(lambda i=index: torch.cuda.get_device_properties(i))
        if props is None:
            devices.append({"index": index})
            continue
        uuid = getattr(props, "uuid", None)
        pci = [getattr(props, f"pci_{part}_id", None) for part in ("domain", "bus", "device")]
        device: dict[str, Any] = {
            "index": index,
            "name": props.name,
            "uuid": None if uuid is None else f"GPU-{uuid}",
            "pci_bus_id": _bus_id(pci),
            "compute_capability": f"{props.major}.{props.minor}",
            "memory_total_bytes": int(props.total_memory),
        }
        devices.append(device)
    return devices


def _bus_id(parts: list[int | None]) -> str | None:
    domain, bus, device = parts
    if domain is None or bus is None or device is None:
        return None
    return f"{domain:04x}:{bus:02x}:{device:02x}.0"


def _torchvision() -> dict[str, Any]:
    spec = importlib.util.find_spec("torchvision")
    if spec is None or spec.origin is None:
        return {"installed": False}
    # Read the version from the file: the import may be exactly what fails.
    package = Path(spec.origin).parent
    match = _VERSION_LINE.search(_text(package / "version.py"))
    result: dict[str, Any] = {"installed": True, "version": match.group(1) if match else None}
    library = _ops_library(package)
    if library is not None:
        # What `import torchvision` does first, without the package's other imports (seconds on a
        # GPU machine, measured 4.3 s on an H100 box): the ops load, or why they do not.
        try:
            import torch

            torch.ops.load_library(str(library))
            return {**result, "ops_load": True, "ops_error": None}
        except BaseException as error:
            cause = error.__cause__ or error
            reason = f"its C++ library does not load: {cause}"
    else:
        reason = None
    try:  # the error the user's own `import torchvision` meets
        import torchvision
    except BaseException as error:
        text = _describe(error)
        ops_failed = "torchvision::" in text or reason is not None
        error_text = f"{text}, because {reason}" if reason else text
        result.update(import_error=text, ops_load=False if ops_failed else None)
        result["ops_error"] = error_text if ops_failed else None
        return result
    try:
        has_ops = bool(torchvision.extension._has_ops())
        missing = None if has_ops else reason or "C++ ops not loaded"
        result.update(ops_load=has_ops, ops_error=missing)
    except BaseException as error:
        result.update(ops_load=False, ops_error=_describe(error))
    return result


def _ops_library(package: Path) -> Path | None:
    """torchvision's C++ ops (``_C.so``, ``_C.pyd``), where its own extension.py finds them."""
    import importlib.machinery

    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        if (package / f"_C{suffix}").is_file():
            return package / f"_C{suffix}"
    return None


def _quiet(function: Any) -> Any:
    try:
        return function()
    except BaseException:
        return None


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _describe(error: BaseException) -> str:
    message = str(error).strip().splitlines()
    return f"{type(error).__name__}: {message[0]}" if message else type(error).__name__


def main() -> None:
    # Run by path: drop this file's directory so its sibling modules cannot shadow anything.
    if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
        del sys.path[0]
    with contextlib.redirect_stdout(sys.stderr):  # stray prints must not corrupt the JSON
        result = probe()
    sys.stdout.write(json.dumps(result) + "\n")
    # The answer is out: end without tearing torch down, ~0.5 s that the parent would wait for.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
