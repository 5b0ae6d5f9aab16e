"""The project's own options that can choose the CPU, read by a file that defines none.

NVIDIA's pix2pixHD and SPADE define ``--gpu_ids`` ("use -1 for CPU") in
``options/base_options.py``. Their model files read ``self.gpu_ids`` or take a ``gpu_ids``
parameter, and hard-code ``.cuda()`` elsewhere, which fails for the user who asked for the CPU
(NVIDIA/pix2pixHD#159, NVlabs/SPADE#97). A file that reads such an option has the project's
CPU path, whichever file defines it: a library module's options (a script's own are its own;
in a folder of scripts no other file reads them), read on the settings object or on ``self``.
The files looked in are those of the project's directories (_importers.py) and of the folders
right below its top one (``options/``), read as text first and parsed only when they define an
option; never run.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

import libcst as cst

from gpudoc.lint import project
from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.analysis.placement import SETTINGS
from gpudoc.lint.rules._checkpoints import scan
from gpudoc.lint.rules._gpu_savers import MAX_BYTES, _scripts_in
from gpudoc.lint.rules._importers import is_entry
from gpudoc.lint.rules._project_scripts import project_directories
from gpudoc.lint.visit import walk

DEFINES_OPTION = re.compile(r"add_argument\(\s*[\"']-")
MAX_FILES = 256
"""More files than this below the project's top: too large to read for its options."""


def option_files(linted: str) -> list[Path]:
    """The files that may define the project's options: also the linted file's cache key."""
    if not linted.endswith(".py"):
        return []
    here = Path(linted).resolve()
    directories = project_directories(str(here.parent), os.getcwd())
    found: list[Path] = []
    try:
        top = directories[-1]
        for directory in dict.fromkeys([*directories, *_folders_below(str(top), _stamp(top))]):
            found += _scripts_in(str(directory), _stamp(directory))
    except OSError:
        return []
    found = [path for path in found if path != here]
    return found if len(found) <= MAX_FILES else []


def option_reader_cpu_path(module: cst.Module, path: str) -> str | None:
    """The project option this file reads that can choose the CPU (the evidence's text)."""
    options = _cpu_options(tuple(option_files(path)))
    if not options:
        return None
    reads = _Reads(set(options))
    walk(module, reads)
    for dest in sorted(reads.found):
        flag, where = options[dest]
        return f"the project's `{flag}` option in `{where.name}`, read here as `{dest}`"
    return None


def _stamp(directory: Path) -> int:
    return directory.stat().st_mtime_ns


@lru_cache(maxsize=64)
def _folders_below(directory: str, stamp: int) -> tuple[Path, ...]:
    """The top folder's sub-folders, read once while none is added or removed (``stamp``)."""
    return tuple(
        sorted(
            entry
            for entry in Path(directory).iterdir()
            if entry.is_dir() and not entry.name.startswith((".", "_"))
        )
    )


def _cpu_options(files: tuple[Path, ...]) -> dict[str, tuple[str, Path]]:
    """dest -> (flag, file) of every option of these files that can choose the CPU."""
    found: dict[str, tuple[str, Path]] = {}
    for path in files:
        try:
            stat = path.stat()
        except OSError:
            continue
        for dest, flag in _options_in(str(path), (stat.st_mtime_ns, stat.st_size)):
            found.setdefault(dest, (flag, path))
    return found


@lru_cache(maxsize=512)
def _options_in(path: str, stamp: tuple[int, int]) -> tuple[tuple[str, str], ...]:
    """(dest, flag) of the file's options that can choose the CPU; read once per change."""
    if stamp[1] > MAX_BYTES:
        return ()
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ()
    if DEFINES_OPTION.search(text) is None:
        return ()
    parsed = project.load(Path(path))
    if parsed is None or is_entry(parsed.module):
        return ()  # a script's own options: in a folder of scripts, no other file reads them
    theirs = scan(parsed.module, remember=False, path=path)
    return tuple(
        (dest, flag)
        for dest, flag in theirs.cpu_options.items()
        if dest not in theirs.gpu_selectors
    )


class _Reads(cst.CSTVisitor):
    """Which of ``names`` the file reads: as an attribute (``self.gpu_ids``, ``opt.gpu_ids``)
    or as a parameter it is handed (``def __init__(self, gpu_ids)``). A method called
    (``x.cpu()``, ``net.cuda()``) reads no option."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.found: set[str] = set()
        self._called: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        self._called.add(id(node.func))  # a call is visited before its callee

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value not in self.names or id(node) in self._called:
            return
        # the settings object or the instance keeping a copy (`opt.gpu_ids`, `self.gpu_ids`),
        # not a tensor's own attribute (`scores.device` of a `--device` option)
        owner = (dotted(node.value) or "").rsplit(".", 1)[-1]
        if owner == "self" or SETTINGS.match(owner):
            self.found.add(node.attr.value)

    def visit_Param(self, node: cst.Param) -> None:
        if node.name.value in self.names:
            self.found.add(node.name.value)
