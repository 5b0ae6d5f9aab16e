"""The CUDA compiler a torch extension build would use, and its version from `nvcc --version`.

Started beside the torch probe, so it costs no wall time there, and never on the --no-torch
path: a prebuilt torch wheel ships its own CUDA runtime and does not care about nvcc.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Callable, Mapping

NvccResult = tuple[str | None, str | None]  # (path, "13.0")
NvccStarter = Callable[[], Callable[[], NvccResult]]
MIN_WAIT_S = 0.05
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
    import subprocess  # the torch path pays for it anyway

    path = find_nvcc(os.environ if environ is None else environ, default_home)
    if path is None:
        return lambda: (None, None)
    deadline = time.monotonic() + timeout_s
    try:
        process = subprocess.Popen(
            [path, "--version"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            errors="replace",
        )
    except OSError:
        return lambda: (path, None)

    def wait() -> NvccResult:
        try:
            # Never a zero timeout: communicate() would give up on a child that has
            # already finished before reading what it wrote.
            out, _ = process.communicate(timeout=max(MIN_WAIT_S, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            return path, None
        return path, parse_nvcc_version(out)

    return wait
