"""Which rules run on which file: --select/--ignore and ``[tool.gpudoc.lint]`` in pyproject.toml."""

from __future__ import annotations

import fnmatch
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from gpudoc.exit_codes import UsageError

DEFAULT_SELECT = ("GPD",)
PREFIX = "tool.gpudoc.lint."
"""Messages name a bad key by its full dotted path, as written in pyproject.toml."""
KEYS = {"select", "ignore", "per-file-ignores", "exclude", "extend-select", "extend-ignore"}


@dataclass(frozen=True)
class LintConfig:
    select: tuple[str, ...] = DEFAULT_SELECT
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = ()
    root: Path | None = None
    """The directory of the pyproject.toml: relative patterns are matched from here."""
    source: str | None = field(default=None, compare=False)

    def enabled(self, code: str, default_on: bool, path: str | None = None) -> bool:
        """ruff's prefix rules; off-by-default codes need a prefix of at least ``GPD9``."""
        selected = [p for p in self.select if code.startswith(p)]
        if not selected:
            return False
        if not default_on and max(len(p) for p in selected) < 4:
            return False
        if any(code.startswith(prefix) for prefix in self.ignore):
            return False
        if path is not None:
            for pattern, codes in self.per_file_ignores:
                if self._matches(path, pattern) and any(code.startswith(c) for c in codes):
                    return False
        return True

    def excluded(self, path: str) -> bool:
        return any(self._matches(path, pattern) for pattern in self.exclude)

    def _matches(self, path: str, pattern: str) -> bool:
        relative = PurePosixPath(self._relative(path))
        if fnmatch.fnmatch(str(relative), pattern) or relative.match(pattern):
            return True
        return any(fnmatch.fnmatch(part, pattern) for part in relative.parts)

    def _relative(self, path: str) -> str:
        if self.root is None:
            return path
        try:
            return Path(path).resolve().relative_to(self.root).as_posix()
        except (ValueError, OSError):
            return path

    def with_cli(self, select: Sequence[str] | None, ignore: Sequence[str] | None) -> LintConfig:
        updated = self
        if select:
            updated = replace(updated, select=_codes(select))
        if ignore:
            updated = replace(updated, ignore=(*updated.ignore, *_codes(ignore)))
        return updated


def _codes(values: Iterable[str]) -> tuple[str, ...]:
    codes = tuple(part.strip().upper() for value in values for part in value.split(","))
    for code in codes:
        if code and not (code == "ALL" or code.startswith("GPD")):
            raise UsageError(f"unknown rule code or prefix {code!r} (codes look like GPD101)")
    return tuple("GPD" if code == "ALL" else code for code in codes if code)


def find_pyproject(start: Path) -> tuple[Path, dict[str, Any]] | None:
    """The nearest pyproject.toml with a ``[tool.gpudoc]`` table, and that table (ruff's rule).

    A pyproject.toml without one is skipped: a sub-project's file that configures other tools
    does not hide the configuration of the repository it lives in.
    """
    directory = start if start.is_dir() else start.parent
    for candidate in [directory, *directory.parents]:
        path = candidate / "pyproject.toml"
        if not path.is_file():
            continue
        table = _gpudoc_table(path, _read_toml(path))
        if table is not None:
            return path, table
    return None


def load_config(start: Path) -> LintConfig:
    """``[tool.gpudoc.lint]`` of the nearest configured pyproject.toml, or the defaults."""
    found = find_pyproject(start.resolve())
    if found is None:
        return LintConfig()
    path, gpudoc = found
    table = gpudoc.get("lint", {})
    if not isinstance(table, dict):
        raise UsageError(f"{path}: tool.gpudoc.lint must be a table")
    return _from_table(table, path)


def _read_toml(path: Path) -> dict[str, Any]:
    # tomllib is stdlib from 3.11; on 3.10 the same parser is the `tomli` dependency.
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise UsageError(f"{path}: cannot read: {error}") from None
    except RecursionError:
        # The parser recurses once per nesting level: an absurdly deep array exhausts the stack.
        raise UsageError(f"{path}: cannot read: nested too deeply") from None


def _gpudoc_table(path: Path, data: dict[str, Any]) -> dict[str, Any] | None:
    """``tool.gpudoc``, or None; a ``tool`` or ``tool.gpudoc`` that is not a table is an error."""
    tool = data.get("tool")
    if tool is None:
        return None
    if not isinstance(tool, dict):
        raise UsageError(f"{path}: tool must be a table")
    gpudoc = tool.get("gpudoc")
    if gpudoc is None:
        return None
    if not isinstance(gpudoc, dict):
        raise UsageError(f"{path}: tool.gpudoc must be a table")
    return gpudoc


def _from_table(table: dict[str, Any], path: Path) -> LintConfig:
    unknown = set(table) - KEYS
    if unknown:
        raise UsageError(f"{path}: unknown key(s) in {PREFIX[:-1]}: {', '.join(sorted(unknown))}")
    select = _code_list(table, "select", path) or DEFAULT_SELECT
    select = (*select, *_code_list(table, "extend-select", path))
    ignore = (*_code_list(table, "ignore", path), *_code_list(table, "extend-ignore", path))
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise UsageError(f"{path}: {PREFIX}per-file-ignores must be a table of pattern = [codes]")
    pairs = tuple(
        (str(k), _codes(_strings(v, path, f'per-file-ignores."{k}"'))) for k, v in per_file.items()
    )
    exclude = tuple(_strings(table.get("exclude", []), path, "exclude"))
    return LintConfig(select, ignore, pairs, exclude, path.parent, str(path))


def _code_list(table: dict[str, Any], key: str, path: Path) -> tuple[str, ...]:
    return _codes(_strings(table.get(key, []), path, key))


def _strings(value: Any, path: Path, key: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise UsageError(f"{path}: {PREFIX}{key} must be a list of strings")
    return value
