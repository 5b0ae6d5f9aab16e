"""Scripts beside a file that train on the GPU and save checkpoints, found by a text scan and
never run: the evidence that a script with no device code of its own (a viewer, an evaluation
run on a laptop) loads CUDA tensors when it reads what they saved."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import libcst as cst

from gpudoc.lint.visit import walk

MAX_SIBLINGS = 64
"""A directory with more scripts than this is a collection, not one project's steps."""
MAX_BYTES = 200_000
_SAVES = re.compile(r"\btorch\.save\s*\(")
_ON_GPU = re.compile(r"\.cuda\s*\(|[\"']cuda(?::\d+)?[\"']")
_TEST = re.compile(r"^(?:test_.*|.*_test)\.py$")


def sibling_scripts(linted: str) -> list[Path]:
    """The other scripts in ``linted``'s directory (none in a directory of more than
    MAX_SIBLINGS): what a script with no device code is judged by, and so its cache key."""
    if not linted.endswith(".py"):
        return []
    here = Path(linted)
    try:
        directory = here.resolve().parent
        scripts = _scripts_in(str(directory), directory.stat().st_mtime_ns)
    except OSError:
        return []
    return [script for script in scripts if script.name != here.name]


@lru_cache(maxsize=64)
def _scripts_in(directory: str, stamp: int) -> tuple[Path, ...]:
    """Read once per directory while no file is added or removed there (``stamp``)."""
    scripts = sorted(Path(directory).glob("*.py"))
    return tuple(scripts) if len(scripts) <= MAX_SIBLINGS else ()


def gpu_savers(linted: str) -> list[Path]:
    """The scripts beside ``linted`` that put something on CUDA and call ``torch.save``
    (tests aside)."""
    found = []
    for script in sibling_scripts(linted):
        if _TEST.match(script.name):
            continue
        try:
            stat = script.stat()
        except OSError:
            continue
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stat.st_size <= MAX_BYTES and _saves_from_gpu(str(script), stamp):
            found.append(script)
    # the training script first: it is the one whose checkpoints others read
    return sorted(found, key=lambda script: "train" not in script.name.lower())


@lru_cache(maxsize=256)
def _saves_from_gpu(script: str, stamp: tuple[int, int]) -> bool:
    try:
        text = Path(script).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return bool(_SAVES.search(text) and _ON_GPU.search(text))


def names_no_device(module: cst.Module) -> bool:
    """The code names no device at all: no ``cuda``, ``device`` or ``gpu`` in a name, an
    attribute or a string, and no ``.to(...)`` (comments aside: ``# model.cuda()``)."""
    finder = _DeviceWords()
    walk(module, finder)
    return not finder.found


class _DeviceWords(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_Name(self, node: cst.Name) -> None:
        self.found |= _DEVICE_WORD.search(node.value) is not None or node.value == "to"

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self.found |= _DEVICE_WORD.search(node.value) is not None


_DEVICE_WORD = re.compile(r"cuda|device|gpu", re.I)


def saves_name(saver: Path, stem: str) -> bool:
    """``saver``'s text names the file stem a load reads (``"model"`` of ``model.pth``)."""
    try:
        return stem in saver.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def may_read_gpu_savers(source: str) -> bool:
    """A file that may load a checkpoint: its findings may depend on the scripts beside it
    (for cache keys; whether it has device code is the walk's to say, not the text's)."""
    return "load" in source
