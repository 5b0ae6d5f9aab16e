"""Whether a library file's project runs on the CPU only: no script or notebook of it names a
device, and one of them runs.

karpathy's normalizing flows keep their layers in ``nflib/`` and train them in a notebook
beside it; nothing in the project says ``cuda``, ``device`` or ``.to(``. A ``torch.zeros`` in
such a layer's ``forward`` meets host inputs in every run the project makes: reporting it as a
GPU bug is a false alarm. The files are those of the linted file's directory and the ones
above it up to the project's root (_importers.py), read as text, never run.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from stat import S_ISREG

from gpudoc.lint.rules._gpu_savers import MAX_BYTES
from gpudoc.lint.rules._project_scripts import in_project_directories

DEVICE_WORDS = re.compile(
    r"cuda|device|\.to\(|accelerat|lightning|\bgpus?\b|\bmps\b|\btpu\b|\bxla\b|Trainer\(", re.I
)
"""Any mention of a place to run, or of a framework that picks one."""
NOT_A_DEVICE = re.compile(
    r"^[ \t]*#[^\n]*"  # a comment line: `# Train on CPU (hide GPU)`
    r"|\bos\.environ\[\s*[\"']CUDA_VISIBLE_DEVICES[\"']\s*\]\s*=\s*[\"'](-1)?[\"']",
    re.M,
)
"""What names no place to run: comments, and hiding every GPU (``CUDA_VISIBLE_DEVICES = ""``)."""
ENTRY_SCRIPT = re.compile(r"(train|main|run|demo|eval|test|infer|predict)\w*\.py", re.I)
TOP_LEVEL_CALL = re.compile(r"^(?!def |class |import |from |@|#)[A-Za-z_][^\n]*\(", re.M)
"""A statement at the top level that calls something (``adj = load_data(args.dataset)``)."""
MAX_FILES = 64
"""More files than this: a project too large to call CPU-only from a glance."""
MAX_NOTEBOOK_BYTES = 5_000_000
"""A notebook's outputs (plots) make it large; only its code cells are read."""


def project_files(linted: str) -> list[Path]:
    """The scripts and notebooks the verdict reads: also the linted file's cache key."""
    if not linted.endswith(".py"):
        return []
    found = in_project_directories(Path(linted).resolve(), _files_in)
    return found if len(found) <= MAX_FILES else []


def runs_on_cpu_only(linted: str) -> bool:
    """No file of the project names a device (outside comments; hiding every GPU names
    none), and a notebook, a script with a ``__main__`` block or a script named for its job
    (``train.py``) with code at its top level runs its code."""
    runs = False
    files = project_files(linted)
    for path in files:
        try:
            stat = path.stat()
        except OSError:
            return False
        if not S_ISREG(stat.st_mode):
            continue  # a named pipe or a device: never opened
        device, entry = _read(str(path), (stat.st_mtime_ns, stat.st_size))
        if device:
            return False
        runs |= entry
    return runs


@lru_cache(maxsize=64)
def _files_in(directory: str, stamp: int) -> tuple[Path, ...]:
    """Read once per directory while no file is added or removed there (``stamp``)."""
    folder = Path(directory)
    return tuple(sorted([*folder.glob("*.py"), *folder.glob("*.ipynb")]))


@lru_cache(maxsize=256)
def _read(path: str, stamp: tuple[int, int]) -> tuple[bool, bool]:
    """(names a device, runs: a notebook or a script with a ``__main__`` block)."""
    notebook = path.endswith(".ipynb")
    if stamp[1] > (MAX_NOTEBOOK_BYTES if notebook else MAX_BYTES):
        return True, False  # too big to read: take it as placing something
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True, False
    code = _code_of(text) if notebook else text  # not a notebook's outputs: base64 images
    if code is None:
        return True, False
    named = DEVICE_WORDS.search(NOT_A_DEVICE.sub("", code)) is not None
    # a script runs from `__main__`, or (named for its job: `train.py`) from its top level
    runs = notebook or "__main__" in code
    if not runs and ENTRY_SCRIPT.fullmatch(Path(path).name):
        runs = TOP_LEVEL_CALL.search(code) is not None
    return named, runs


def _code_of(notebook: str) -> str | None:
    """The source of a notebook's code cells; None when it is no notebook JSON."""
    try:
        cells = json.loads(notebook).get("cells", [])
        return "\n".join(
            "".join(cell.get("source", ""))
            for cell in cells
            if isinstance(cell, dict) and cell.get("cell_type") == "code"
        )
    except (ValueError, AttributeError, TypeError, RecursionError):
        return None
