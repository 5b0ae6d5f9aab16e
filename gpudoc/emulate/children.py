"""Python processes the script starts see the same emulated machine.

``torch.multiprocessing.spawn``, DataLoader workers with the ``spawn`` start method and
``subprocess`` calls of Python start a fresh interpreter, which would see no CUDA. During an
emulated run the environment carries the machine (:data:`ENV`) and puts a directory holding a
``sitecustomize.py`` first on ``PYTHONPATH``: a child interpreter reads it at start-up and
installs the same emulated devices once the child imports torch (not before: a child that never
imports torch pays nothing).
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

ENV = "GPUDOC_EMULATE_CUDA"  # {"devices": N, "batches": K or null}
_INSTALLED: list[Any] = []
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent.parent)
_SITECUSTOMIZE = """\
# Written by gpudoc run --emulate-cuda: this process inherits the emulated CUDA devices.
import sys
sys.path.append({root!r})
from gpudoc.emulate.children import install_in_child
install_in_child()
"""


@contextlib.contextmanager
def inherited(device_count: int, batch_limit: int | None) -> Iterator[None]:
    """While the run lasts, child interpreters start with the same emulated devices."""
    saved = {name: os.environ.get(name) for name in (ENV, "PYTHONPATH")}
    with tempfile.TemporaryDirectory(prefix="gpudoc-emulate-") as folder:
        Path(folder, "sitecustomize.py").write_text(_SITECUSTOMIZE.format(root=_PACKAGE_ROOT))
        os.environ[ENV] = json.dumps({"devices": device_count, "batches": batch_limit})
        path = saved["PYTHONPATH"]
        os.environ["PYTHONPATH"] = folder + (os.pathsep + path if path else "")
        try:
            yield
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def install_in_child() -> None:
    """In a child interpreter: emulate once torch is imported (now, if it already is)."""
    if ENV not in os.environ:
        return
    if "torch" in sys.modules:
        _install()
    else:
        sys.meta_path.insert(0, _AfterTorchImport())


def _install() -> None:
    from gpudoc.emulate.patches import emulated_cuda
    from gpudoc.emulate.state import STATE

    machine = json.loads(os.environ[ENV])
    visible = visible_devices(os.environ.get("CUDA_VISIBLE_DEVICES"), int(machine["devices"]))
    installed = emulated_cuda(len(visible), machine.get("batches"))
    installed.__enter__()
    STATE.physical = visible
    _INSTALLED.append(installed)  # held for the process's life: collected, it would undo itself


def visible_devices(variable: str | None, count: int) -> list[int]:
    """The machine's GPUs a child sees, in order: CUDA's rules for ``CUDA_VISIBLE_DEVICES``
    (indices, or the emulated UUIDs ``GPU-00000000-0000-0000-0000-00000000000N``; the list
    stops at the first entry that names no device)."""
    if variable is None:
        return list(range(count))
    visible: list[int] = []
    for entry in variable.split(","):
        entry = entry.strip()
        digits = entry.rsplit("-", 1)[-1] if entry.startswith("GPU-") else entry
        if not digits.isdigit() or int(digits) >= count or int(digits) in visible:
            break
        visible.append(int(digits))
    return visible


class _AfterTorchImport(importlib.abc.MetaPathFinder):
    """Finds torch as usual, and installs the emulated devices when its import completes."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _InstallingLoader(spec.loader)
        return spec


class _InstallingLoader(importlib.abc.Loader):
    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: Any) -> ModuleType | None:
        module: ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        _install()
