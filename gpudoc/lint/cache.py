"""Per-file result cache keyed by content, and by the lint code that produced the result.

One SQLite database (stdlib `sqlite3`) in the user cache directory ($GPUDOC_CACHE_DIR, else
$XDG_CACHE_HOME/gpudoc, else ~/.cache/gpudoc): a run reads the rows of the files it lints and
writes the rows of the files it linted, so a one-file pre-commit run costs what one file costs
however many entries the cache holds. Concurrent runs (pre-commit starts several) are SQLite's
to serialise. A corrupt, locked or unwritable cache is ignored, never an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import asdict
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpudoc import __version__
from gpudoc.jsondata import from_json
from gpudoc.lint.model import Finding

if TYPE_CHECKING:
    import sqlite3

MAX_ENTRIES = 100_000
LINT_PACKAGE = Path(__file__).resolve().parent
DATABASE = "lint.sqlite3"
# How long a run waits for another run's write to finish before it gives up on the cache.
LOCK_TIMEOUT_S = 2.0
Entry = tuple[list[Finding], str | None]


def cache_dir() -> Path:
    explicit = os.environ.get("GPUDOC_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpudoc"


@cache
def fingerprint(package: Path = LINT_PACKAGE) -> str:
    """gpudoc's version and the lint code's files as installed: a rule change invalidates.

    Names, sizes and modification times, not contents: a stat per file instead of reading and
    hashing the package on every start. Editors, pip and git all set the modification time of
    a file they change.
    """
    digest = hashlib.sha256(__version__.encode())
    for path in sorted(package.rglob("*.py")):
        stat = path.stat()
        digest.update(f"{path.relative_to(package)}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return digest.hexdigest()[:16]


def content_key(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _finding_to_json(finding: Finding, path: str) -> dict[str, Any]:
    """A finding without its path: the same content elsewhere reuses it. One in a project
    module the file's walk went through keeps where that module is from the file."""
    data = asdict(finding)
    data.pop("path")
    if finding.path != path:
        data[ELSEWHERE] = os.path.relpath(finding.path, os.path.dirname(path) or ".")
    return data


def _finding_path(item: dict[str, Any], path: str) -> str:
    elsewhere = item.pop(ELSEWHERE, None)
    if not isinstance(elsewhere, str):
        return path
    return os.path.normpath(os.path.join(os.path.dirname(path), elsewhere))


ELSEWHERE = "elsewhere"


class ResultCache:
    """Results by content key; the database is opened at the first lookup, not before."""

    def __init__(self, directory: Path | None = None) -> None:
        self.path = (directory or cache_dir()) / DATABASE
        self.pending: dict[str, str] = {}
        self._db: sqlite3.Connection | None = None
        self._broken = False

    def get(self, key: str, path: str) -> Entry | None:
        db = self._connect()
        if db is None:
            return None
        try:
            row = db.execute(
                "SELECT value FROM results WHERE key = ?", (self._key(key),)
            ).fetchone()
        except db_errors():
            self._broken = True
            return None
        if row is None:
            return None
        try:
            entry = json.loads(row[0])
            findings = [
                from_json(Finding, {**item, "path": _finding_path(item, path)})
                for item in entry["findings"]
            ]
            return findings, entry["error"]
        except (KeyError, TypeError, ValueError):  # DecodeError included
            return None

    def put(self, key: str, findings: list[Finding], error: str | None, path: str = "") -> None:
        entry = {
            "findings": [_finding_to_json(f, path or f.path) for f in findings],
            "error": error,
        }
        self.pending[self._key(key)] = json.dumps(entry, separators=(",", ":"))

    def save(self) -> None:
        """Write this run's new results in one transaction, keep the newest MAX_ENTRIES, close."""
        db = self._connect() if self.pending else self._db
        if db is None:
            return
        try:
            with db:
                db.executemany(
                    "INSERT OR REPLACE INTO results (key, value) VALUES (?, ?)",
                    self.pending.items(),
                )
                # A replaced row gets a new rowid: the oldest rowids are the least recent.
                db.execute(
                    "DELETE FROM results WHERE rowid <= (SELECT MAX(rowid) FROM results) - ?",
                    (MAX_ENTRIES,),
                )
            self.pending.clear()
        except db_errors():
            self._broken = True
        finally:
            db.close()
            self._db = None

    def _key(self, key: str) -> str:
        return f"{fingerprint()}:{key}"

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is not None or self._broken:
            return self._db
        try:
            import sqlite3
        except ImportError:  # a Python built without SQLite lints without a cache
            self._broken = True
            return None
        new = not self.path.exists()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = _open(self.path)
        except sqlite3.OperationalError:  # locked, read-only, ...: this run goes without
            self._broken = True
        except sqlite3.DatabaseError:  # not a database: start a new one
            new = True
            with contextlib.suppress(OSError, sqlite3.Error):
                self.path.unlink()
                self._db = _open(self.path)
            self._broken = self._db is None
        except OSError:
            self._broken = True
        if new and self._db is not None:
            _remove_json_caches(self.path.parent)
        return self._db


def _open(path: Path) -> sqlite3.Connection:
    import sqlite3

    db = sqlite3.connect(path, timeout=LOCK_TIMEOUT_S)
    try:
        # No fsync: a commit costs 0.3 ms instead of 30. A cache may lose its last writes when
        # the machine loses power; a database that cannot be read then is made anew.
        db.execute("PRAGMA synchronous = OFF")
        db.execute("CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, value TEXT)")
    except sqlite3.Error:
        db.close()
        raise
    return db


def db_errors() -> type[Exception]:
    """sqlite3.Error, imported only where the cache is used (never by --no-cache runs)."""
    import sqlite3

    return sqlite3.Error


def _remove_json_caches(directory: Path) -> None:
    """The cache was once one JSON file per fingerprint: removed when the database is made."""
    for old in directory.glob("lint-*.json"):
        with contextlib.suppress(OSError):
            old.unlink()
