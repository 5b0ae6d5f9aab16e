"""The project's scripts around a linted file: the directories that make up its project, and
the scripts there whose text may import it (read as text, never run)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path

from gpudoc.lint import project
from gpudoc.lint.rules._gpu_savers import _scripts_in, small_file_stamp

LEVELS = 3
"""The file's own directory and the two above it: ``train.py`` beside ``models/``, or
``tools/train.py`` beside the package."""


def candidate_importers(linted: str) -> list[Path]:
    """The scripts whose text may import ``linted``: its cache key, and where to look."""
    if not linted.endswith(".py"):
        return []
    here = Path(linted).resolve()
    scripts = in_project_directories(here, _scripts_in)
    return [s for s in scripts if s != here and s.name != "__init__.py"]


def importer_texts(linted: str) -> Iterator[str]:
    """The text of each script that may import ``linted`` (an unreadable one, or one larger
    than MAX_BYTES, which the other scans of scripts skip too, is left out)."""
    for script in candidate_importers(linted):
        if small_file_stamp(script) is None:
            continue
        try:
            yield script.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue


def in_project_directories(
    here: Path, listing: Callable[[str, int], tuple[Path, ...]]
) -> list[Path]:
    """What ``listing`` (a directory's files, read once per modification stamp) finds in each
    of the project directories of the file ``here`` (an unreadable one is left out)."""
    found: list[Path] = []
    for directory in project_directories(str(here.parent), os.getcwd()):
        try:
            found += listing(str(directory), directory.stat().st_mtime_ns)
        except OSError:
            continue
    return found


@lru_cache(maxsize=256)
def project_directories(directory: str, cwd: str) -> tuple[Path, ...]:
    """The file's directory and those above it up to the project's root (a root marker, at
    most LEVELS in all); without a root, the directory gpudoc runs in when it holds the file.
    Never a directory outside the project (``/tmp``): its files are no importers, and their
    changes would make the cache key change all the time."""
    start = Path(directory)
    chain = [start, *list(start.parents)[: LEVELS - 1]]
    for index, candidate in enumerate(chain):
        if any((candidate / marker).exists() for marker in project.ROOT_MARKERS):
            return tuple(chain[: index + 1])
    here = Path(cwd)
    if here in chain:
        return tuple(chain[: chain.index(here) + 1])
    return (start,)
