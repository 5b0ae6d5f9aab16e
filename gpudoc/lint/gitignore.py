"""Which files git ignores, read from the ignore files themselves: git is never started.

Running ``git`` on a linted tree runs whatever that repository configures (``core.fsmonitor``,
filters, hooks): a cloned repository could make every ``gpudoc lint .`` start its program. So
the walk reads ``.gitignore`` files (nested ones too), ``$GIT_DIR/info/exclude`` and the user's
global ``git/ignore`` file, with git's own precedence, and matches each entry of a top-down walk
with git's wildmatch rules (wildmatch.py). Unlike ``git ls-files``, a file git tracks but an
ignore pattern matches is skipped (as ruff does): git's index is not worth reading for that.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from gpudoc.lint.wildmatch import IgnorePattern, parse_ignore_lines


@dataclass(frozen=True)
class IgnoreFile:
    base: Path
    """The directory its patterns are relative to."""
    patterns: tuple[IgnorePattern, ...]

    def decide(self, relative: str, is_dir: bool) -> bool | None:
        """True ignored, False re-included (``!``), None no pattern matched: the last match wins."""
        for pattern in reversed(self.patterns):
            if pattern.matches(relative, is_dir):
                return not pattern.negated
        return None


def _load(path: Path, base: Path) -> IgnoreFile | None:
    try:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
    except (OSError, ValueError):
        return None
    patterns = parse_ignore_lines(text.splitlines())
    return IgnoreFile(base, patterns) if patterns else None


def find_work_tree(start: Path) -> Path | None:
    """The top of the git work tree holding ``start``: the nearest directory with a ``.git``."""
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def _git_common_dir(top: Path) -> Path | None:
    """``.git`` itself, or for a linked work tree the directory its ``.git`` file points to."""
    dot_git = top / ".git"
    if dot_git.is_dir():
        return dot_git
    try:
        line = dot_git.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not line.startswith("gitdir:"):
        return None
    git_dir = (top / line.removeprefix("gitdir:").strip()).resolve()
    try:
        common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return git_dir
    return (git_dir / common).resolve()


def _global_ignore() -> Path:
    config_home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config_home) / "git" / "ignore"


class GitIgnore:
    """The ignore rules of one work tree; ``enter`` a directory before asking about its entries."""

    def __init__(self, top: Path, walk_root: Path) -> None:
        self.top = top
        common = _git_common_dir(top)
        fallback = [_load(common / "info" / "exclude", top)] if common is not None else []
        fallback.append(_load(_global_ignore(), top))
        # Lowest precedence last: info/exclude, then the global file.
        self._fallback = [f for f in fallback if f is not None]
        self._files: dict[Path, IgnoreFile | None] = {}
        for directory in reversed((walk_root, *walk_root.parents)):
            if directory == top or top in directory.parents:
                self.enter(directory)

    def enter(self, directory: Path) -> None:
        if directory not in self._files:
            self._files[directory] = _load(directory / ".gitignore", directory)

    def ignored(self, path: Path, is_dir: bool) -> bool:
        """git's answer: the deepest ignore file with a matching pattern decides, its last one."""
        directory = path.parent
        chain: list[IgnoreFile] = []
        while True:
            found = self._files.get(directory)
            if found is not None:
                chain.append(found)
            if directory == self.top or directory == directory.parent:
                break
            directory = directory.parent
        for rules in (*chain, *self._fallback):
            decision = rules.decide(path.relative_to(rules.base).as_posix(), is_dir)
            if decision is not None:
                return decision
        return False
