"""Python's cyclic garbage collector paused while one file is checked or fixed.

A parsed file is a tree of millions of long-lived objects, and each collection of the oldest
generation walks all of them: on a 10,000-line file the collector took a third of the lint
time and a quarter of the parse's. The tree and the walk's values are freed by reference
counting once the file is done; the few reference cycles wait for the next collection, which
runs as usual once the collector is back on.

What a big file's pause leaves alive (the tree that --fix and the rules' caches keep until the
next file) is frozen (``gc.freeze``) before the collector is back on, and thawed into the
oldest generation when the next pause begins: otherwise the first young collection after the
pause walks the whole tree (0.2 CPU-s on a 20,000-line file), the next walks it again, and the
collection at interpreter exit walks it once more (1.7 s of wall time after the output).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

FREEZE_AT = 100_000
"""Objects left alive by the pause (the collector's count of its youngest generation), from a
file of some 3,000 lines, above which they are frozen. Smaller files go as before: frozen, each
file's reference cycles would wait for a full collection, and one process linting a
repository's files one after the other peaked at 1.45 times the memory."""


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic collection inside; nested uses leave it to the outermost one."""
    enabled = gc.isenabled()
    gc.disable()
    if enabled:
        gc.unfreeze()  # the previous file's objects: collected as the oldest generation
    try:
        yield
    finally:
        if enabled:
            if gc.get_count()[0] >= FREEZE_AT:
                gc.freeze()
            gc.enable()
