"""The one place a rich Console is configured (width, colour, NO_COLOR).

Never imported on the lint path: renderers of info, smoke and run import it inside their functions.
"""

from __future__ import annotations

import os
from typing import IO, Any, cast

from rich.console import Console


def make_console(
    file: IO[str] | None = None,
    *,
    stderr: bool = False,
    width: int | None = None,
    color: bool | None = None,
) -> Console:
    """A Console that honours NO_COLOR and never wraps to zero width under a pipe.

    Tests pass ``file=StringIO(), width=100, color=False`` to render deterministic text.
    """
    no_color = bool(os.environ.get("NO_COLOR")) if color is None else not color
    console = Console(
        file=file,
        stderr=stderr,
        width=width,
        no_color=no_color,
        color_system=None if no_color else "auto",
        force_terminal=None if color is None else color,
        highlight=False,
        soft_wrap=False,
    )
    if not console.is_terminal:  # a pipe, a file, a log: no padding after the last word
        console.file = cast("IO[str]", TrimmedLines(console.file))
    return console


class TrimmedLines:
    """A text file that drops the spaces rich pads table cells with at the end of each line."""

    def __init__(self, file: IO[str]) -> None:
        self._file = file
        self._pending = ""

    def write(self, text: str) -> int:
        *lines, self._pending = (self._pending + text).split("\n")
        if lines:
            self._file.write("".join(line.rstrip(" ") + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        if self._pending:  # a line without its end yet (print(..., end="")): as it is
            self._file.write(self._pending)
            self._pending = ""
        self._file.flush()

    def __getattr__(self, name: str) -> Any:  # isatty, encoding, fileno: the real file's
        return getattr(self._file, name)
