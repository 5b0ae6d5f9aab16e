"""Per-file result cache keyed by content, rule set and gpudoc version.

One JSON file per rule-set fingerprint in the user cache directory ($GPUDOC_CACHE_DIR, else
$XDG_CACHE_HOME/gpudoc, else ~/.cache/gpudoc). Written atomically; a corrupt or unreadable cache
is ignored, never an error.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict
from functools import cache
from pathlib import Path
from typing import Any

from gpudoc import __version__
from gpudoc.lint.model import Edit, Finding, Fix

MAX_ENTRIES = 100_000
Entry = tuple[list[Finding], str | None]


def cache_dir() -> Path:
    explicit = os.environ.get("GPUDOC_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpudoc"


@cache
def fingerprint() -> str:
    """gpudoc's version and the text of the lint code itself: a rule change invalidates."""
    digest = hashlib.sha256(__version__.encode())
    package = Path(__file__).resolve().parent
    for path in sorted(package.rglob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def content_key(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _finding_to_json(finding: Finding) -> dict[str, Any]:
    data = asdict(finding)
    data.pop("path")
    return data


def _finding_from_json(data: dict[str, Any], path: str) -> Finding:
    fix = data.get("fix")
    if fix is not None:
        fix = Fix(tuple(Edit(**edit) for edit in fix["edits"]), fix["safe"], fix["description"])
    return Finding(**{**data, "fix": fix, "path": path})


class ResultCache:
    def __init__(self, directory: Path | None = None) -> None:
        self.path = (directory or cache_dir()) / f"lint-{fingerprint()}.json"
        self.entries: dict[str, dict[str, Any]] = {}
        self.dirty = False
        try:
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
            if isinstance(loaded, dict):
                self.entries = loaded
        except (OSError, ValueError):
            pass

    def get(self, key: str, path: str) -> Entry | None:
        entry = self.entries.get(key)
        if entry is None:
            return None
        try:
            findings = [_finding_from_json(item, path) for item in entry["findings"]]
            return findings, entry["error"]
        except (KeyError, TypeError, ValueError):
            return None

    def put(self, key: str, findings: list[Finding], error: str | None) -> None:
        self.entries[key] = {"findings": [_finding_to_json(f) for f in findings], "error": error}
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        entries = self.entries
        if len(entries) > MAX_ENTRIES:
            entries = dict(list(entries.items())[-MAX_ENTRIES:])
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                json.dump(entries, stream, separators=(",", ":"))
            os.replace(temporary, self.path)
        except OSError:
            pass
