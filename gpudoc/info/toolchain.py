"""The CUDA compiler a torch extension build would use, and its version from `nvcc --version`.

Started beside the torch probe, so it costs no wall time there, and never on the --no-torch
path: a prebuilt torch wheel ships its own CUDA runtime and does not care about nvcc.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Mapping

from gpudoc.info.child import start_child

NvccResult = tuple[str | None, str | None]  # (path, "13.0")
NvccStarter = Callable[[], Callable[[], NvccResult]]
_RELEASE = re.compile(r"release (\d+\.\d+)")


def find_nvcc(environ: Mapping[str, str], default_home: str = "/usr/local/cuda") -> str | None:
    """In torch.utils.cpp_extension's order: CUDA_HOME or CUDA_PATH, nvcc on PATH,
    /usr/local/cuda."""
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        home = environ.get(variable)
        if home:
            return _executable(os.path.join(home, "bin", "nvcc"))
    found = shutil.which("nvcc", path=environ.get("PATH", os.defpath))
    return found or _executable(os.path.join(default_home, "bin", "nvcc"))


def _executable(path: str) -> str | None:
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


def parse_nvcc_version(output: str) -> str | None:
    """`Cuda compilation tools, release 13.0, V13.0.88` -> "13.0"."""
    match = _RELEASE.search(output)
    return match.group(1) if match else None


def start_nvcc(
    environ: Mapping[str, str] | None = None,
    timeout_s: float = 10.0,
    default_home: str = "/usr/local/cuda",
) -> Callable[[], NvccResult]:
    path = find_nvcc(os.environ if environ is None else environ, default_home)
    if path is None:
        return lambda: (None, None)
    try:
        waiter = start_child([path, "--version"], timeout_s)
    except OSError:
        return lambda: (path, None)

    def wait() -> NvccResult:
        answer = waiter()
        return path, (parse_nvcc_version(answer.out) if answer is not None else None)

    return wait
