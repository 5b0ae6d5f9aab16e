"""Which files a ``gpudoc lint PATH...`` run reads: files as given, directories walked."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

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
    listed = _git_listed(root)
    if listed is not None:
        venvs: dict[Path, bool] = {}
        return sorted(path for path in listed if not _under_skipped(path, root, venvs))
    found: list[Path] = []
    for directory, dirnames, filenames in os.walk(root):
        base = Path(directory)
        dirnames[:] = sorted(d for d in dirnames if not _skipped_dir(base / d))
        found.extend(base / name for name in filenames if name.endswith(SUFFIXES))
    # a named pipe called x.py would block the read for ever: only regular files are linted
    return sorted(path for path in found if path.is_file())


def _under_skipped(path: Path, root: Path, venvs: dict[Path, bool]) -> bool:
    parts = path.relative_to(root).parts[:-1]
    if any(part in SKIP_DIRS or part.endswith(".egg-info") for part in parts):
        return True
    directory = root
    for part in parts:
        directory = directory / part
        if directory not in venvs:
            venvs[directory] = (directory / "pyvenv.cfg").exists()
        if venvs[directory]:
            return True
    return False


def _git_listed(root: Path) -> list[Path] | None:
    """Files git does not ignore (tracked or untracked), when ``root`` is inside a work tree."""
    patterns = [f"*{suffix}" for suffix in SUFFIXES]
    try:
        result = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
             "--exclude-standard", "--", *patterns],
            capture_output=True,
            timeout=30,
            check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode != 0:
        return None
    names = [name for name in result.stdout.decode("utf-8", "replace").split("\0") if name]
    return [root / name for name in names if (root / name).is_file()]
