"""Which files a ``gpudoc lint PATH...`` run reads: files as given, directories walked.

A directory walk skips what git ignores (gitignore.py reads the ignore files: git never runs),
tool and environment directories (SKIP_DIRS, any directory with a ``pyvenv.cfg``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gpudoc.lint.gitignore import GitIgnore, find_work_tree

SUFFIXES: tuple[str, ...] = (".py", ".ipynb")
"""File types a directory walk collects: scripts and Jupyter notebooks."""
SKIP_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".tox", ".nox", "site-packages",
        "dist-packages", "build", "dist", "node_modules", ".mypy_cache", ".ruff_cache",
        ".pytest_cache", ".eggs", ".gpudoc_cache", ".ipynb_checkpoints",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Target:
    path: Path | None
    """None for standard input."""
    display: str
    error: str | None = None


def _skipped_dir(directory: Path) -> bool:
    name = directory.name
    if name in SKIP_DIRS or name.endswith(".egg-info"):
        return True
    return (directory / "pyvenv.cfg").exists()


def discover(paths: list[str]) -> Iterator[Target]:
    """Each path in order; directories expand to their files in sorted order."""
    seen: set[Path] = set()
    for raw in paths:
        if raw == "-":
            yield Target(None, "<stdin>")
            continue
        path = Path(raw)
        if path.is_dir():
            for found in _walk(path):
                key = found.resolve()
                if key not in seen:
                    seen.add(key)
                    yield Target(found, str(found))
        elif path.exists() or path.is_symlink():
            if path.resolve() not in seen:
                seen.add(path.resolve())
                regular = path.is_file() or not path.exists()  # a broken link: "no such file"
                error = None if regular else f"{raw}: not a regular file (a pipe or device?)"
                yield Target(path, raw, error=error)
        else:
            yield Target(path, raw, error=f"{raw}: no such file or directory")


def _walk(root: Path) -> list[Path]:
    """The Python files under ``root``, less what git ignores and the SKIP_DIRS; git never runs."""
    absolute = root.resolve()
    top = find_work_tree(absolute)
    rules = GitIgnore(top, absolute) if top is not None else None
    found: list[Path] = []
    for directory, dirnames, filenames in os.walk(absolute):
        base = Path(directory)
        if rules is not None:
            rules.enter(base)
        dirnames[:] = sorted(d for d in dirnames if not _skipped(base / d, rules))
        found.extend(
            root / (base / name).relative_to(absolute)
            for name in filenames
            if name.endswith(SUFFIXES) and not (rules and rules.ignored(base / name, False))
        )
    # a named pipe called x.py would block the read for ever: only regular files are linted
    return sorted(path for path in found if path.is_file())


def _skipped(directory: Path, rules: GitIgnore | None) -> bool:
    if _skipped_dir(directory):
        return True
    if rules is None:
        return False
    # A nested repository (a submodule, a clone inside the tree) is not part of this one's files.
    return (directory / ".git").exists() or rules.ignored(directory, True)
