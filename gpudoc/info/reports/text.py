"""Read a report file and undo what pasting it into an issue or a chat adds to it."""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

# Reports larger than this are not pasted text: a kernel log of a busy year is ~100 MiB.
MAX_BYTES = 256 * 1024 * 1024
_FENCE = re.compile(r"^\s*(```|~~~)")
_QUOTE = re.compile(r"^\s*>(?: |$)")
_HTML = re.compile(r"^\s*</?(details|summary|pre|code)\b[^>]*>.*$", re.IGNORECASE)


class ReportError(Exception):
    """A report that cannot be read as text; the message names the file, on one line."""


def read_report(path: str) -> str:
    """The text of `path` ("-": standard input), decoded and unwrapped."""
    if path == "-":
        data = sys.stdin.buffer.read(MAX_BYTES + 1)
    else:
        try:
            with Path(path).open("rb") as file:
                data = file.read(MAX_BYTES + 1)
        except IsADirectoryError:
            raise ReportError(f"{path}: is a directory, not a report") from None
        except OSError as error:
            raise ReportError(f"{path}: cannot read it ({error.strerror or error})") from None
    if len(data) > MAX_BYTES:
        raise ReportError(f"{path}: larger than {MAX_BYTES // 2**20} MiB, not a report")
    return unwrap(decode(path, data))


def decode(path: str, data: bytes) -> str:
    """UTF-8, or UTF-16 with its byte-order mark (PowerShell's `>` writes that); binary refused."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16", errors="replace")
    else:
        if b"\0" in data[:65536]:
            raise ReportError(f"{path}: a binary file, not a text report")
        text = data.decode("utf-8-sig", errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def unwrap(text: str) -> str:
    """Drop Markdown fences and HTML wrappers, strip `> ` quoting (nested too), and remove the
    indentation every line shares."""
    lines = []
    for line in text.split("\n"):
        while _QUOTE.match(line):
            line = _QUOTE.sub("", line, count=1)
        if _FENCE.match(line) or _HTML.match(line):
            lines.append("")  # a fence separates blocks: keep the break
            continue
        lines.append(line.rstrip())
    # Parsers read each line stripped, or (nvidia-smi -q) its indentation relative to the
    # block's: indentation shared by the whole file, or by one block, changes nothing for them.
    return textwrap.dedent("\n".join(lines))
