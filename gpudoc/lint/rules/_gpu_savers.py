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
    """Read once per directory while no file is added or removed there (``stamp``); regular
    files only (reading a named pipe ``pipe.py`` would wait forever)."""
    scripts = sorted(p for p in Path(directory).glob("*.py") if p.is_file())
    return tuple(scripts) if len(scripts) <= MAX_SIBLINGS else ()


def small_file_stamp(script: Path) -> tuple[int, int] | None:
    """(modification time, size) of a readable script of at most MAX_BYTES, the key its scans
    are cached under; None for a larger or unreadable one, which is not read."""
    try:
        stat = script.stat()
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size) if stat.st_size <= MAX_BYTES else None


def gpu_savers(linted: str) -> list[Path]:
    """The scripts beside ``linted`` that put something on CUDA and call ``torch.save``
    (tests aside)."""
    found = []
    for script in sibling_scripts(linted):
        if _TEST.match(script.name):
            continue
        stamp = small_file_stamp(script)
        if stamp is not None and _saves_from_gpu(str(script), stamp):
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


def saved_by_a_host_script(load_path: str, linted: str) -> bool:
    """A script beside ``linted`` writes ``load_path`` with ``torch.save`` and names no device
    at all: a data-preparation step (``torch.save(torch.tensor(samples), "samples.pt")``, a
    Dataset built from NumPy) whose file holds CPU tensors only."""
    writers = []
    for script in sibling_scripts(linted):
        stamp = small_file_stamp(script)
        if stamp is None:
            continue
        host, written = _writes_on_the_host(str(script), stamp)
        if load_path in written:
            writers.append(host)
    return bool(writers) and all(writers)


@lru_cache(maxsize=256)
def _writes_on_the_host(script: str, stamp: tuple[int, int]) -> tuple[bool, frozenset[str]]:
    """(names no device, the string literals its ``torch.save`` calls write to)."""
    try:
        text = Path(script).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False, frozenset()
    code = _COMMENT.sub("", text)
    written = frozenset(match.group(2) for match in _SAVED_TO.finditer(code))
    return _DEVICE_WORD.search(code) is None and ".to(" not in code, written


_COMMENT = re.compile(r"#[^\n]*")
_SAVED_TO = re.compile(r"\btorch\.save\s*\([^\n]*?,\s*([\"'])([^\"'\n]{1,300})\1\s*\)")
"""``torch.save(obj, "data/train.pt")``: the literal it writes to, on one line."""


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
