"""The one place a rich Console is configured (width, colour, NO_COLOR).

Never imported on the lint path: renderers of info, smoke and run import it inside their functions.
"""

from __future__ import annotations

import os
from typing import IO

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
    return Console(
        file=file,
        stderr=stderr,
        width=width,
        no_color=no_color,
        color_system=None if no_color else "auto",
        force_terminal=None if color is None else color,
        highlight=False,
        soft_wrap=False,
    )
