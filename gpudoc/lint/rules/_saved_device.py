"""Where a checkpoint that lies in the project saved its tensors, read from its bytes and never
unpickled: ``torch.save``'s zip archive keeps, in ``data.pkl``, each storage's location
(``"cpu"``, ``"cuda:0"``) as a pickled string."""

from __future__ import annotations

import re
from pathlib import Path

MAX_PICKLE = 64 << 20
"""A larger ``data.pkl`` is not read (a state dict's pickle is kilobytes; tensors are apart)."""
_LOCATION = re.compile(rb"cpu|cuda(?::\d{1,3})?|mps|xpu(?::\d{1,3})?")


LEGACY_MAGIC = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"
"""The start of a checkpoint in torch.save's legacy format (before PyTorch 1.6): its magic
number, pickled. The pickle that names the storages follows, then their raw bytes."""


def saved_locations(path: Path) -> frozenset[str] | None:
    """The storage locations a ``torch.save`` file names (its zip archive's ``data.pkl``, or
    the head of the legacy format); None when ``path`` is no such file or cannot be read."""
    data = _pickle_bytes(path)
    if data is None:
        return None
    return frozenset(
        match.group().decode()
        for match in _LOCATION.finditer(data)
        if _pickled_string(data, match.start(), match.end() - match.start())
    )


def _pickle_bytes(path: Path) -> bytes | None:
    import zipfile  # only where a checkpoint lies in the project: not on every lint's start-up

    try:
        if not path.is_file():
            return None
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                pickles = [i for i in archive.infolist() if i.filename.endswith("data.pkl")]
                if len(pickles) != 1 or pickles[0].file_size > MAX_PICKLE:
                    return None
                return archive.read(pickles[0])
        with path.open("rb") as file:
            head = file.read(MAX_PICKLE)  # the storages' pickle comes before their bytes
        return head if head.startswith(LEGACY_MAGIC) else None
    except (OSError, zipfile.BadZipFile, ValueError, RuntimeError, NotImplementedError):
        return None


def _pickled_string(data: bytes, start: int, size: int) -> bool:
    """The bytes at ``start`` are a whole pickled string: BINUNICODE (``X`` and a 4-byte
    length) or SHORT_BINUNICODE (``\\x8c`` and a 1-byte length)."""
    long = data[start - 5 : start] == b"X" + size.to_bytes(4, "little")
    return long or data[start - 2 : start] == b"\x8c" + bytes([size])


def saved_on_cpu(load_path: str, linted: str) -> bool:
    """The checkpoint ``load_path`` names (relative to the linted file, or to where gpudoc
    runs) is in the project and holds CPU storages only: it loads on any host."""
    for candidate in _candidates(load_path, linted):
        locations = saved_locations(candidate)
        if locations is not None:
            return locations == {"cpu"}
    return False


def _candidates(load_path: str, linted: str) -> list[Path]:
    return [Path(linted).parent / load_path, Path.cwd() / load_path]


_CHECKPOINT_LITERAL = re.compile(r"""["']([^"'\n]{1,300}\.(?:pt|pth|ckpt|tar|bin|pkl))["']""")


def checkpoint_files(source: str, linted: str) -> list[Path]:
    """The checkpoint files that a file's ``torch.load`` may read and that exist (for cache
    keys: replacing one must re-lint the file), found by a text scan."""
    if "load" not in source:
        return []
    return [
        candidate
        for text in dict.fromkeys(_CHECKPOINT_LITERAL.findall(source))
        for candidate in _candidates(text, linted)
        if candidate.is_file()
    ]
