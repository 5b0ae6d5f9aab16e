"""Where a place in text that --fix has edited was in the original source."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable


class Origin:
    """Where an offset of the current text was in the original source: the edits of each round
    applied so far, undone one round at a time. Text a fix wrote maps to where it was put."""

    def __init__(self) -> None:
        self._rounds: list[tuple[list[int], list[tuple[int, int, int]]]] = []

    def applied(self, spans: Iterable[tuple[int, int, str]]) -> None:
        """Record one round's edits: (start, end, new text) in the text they were applied to."""
        edits: list[tuple[int, int, int]] = []
        new_starts: list[int] = []
        shift = 0
        for start, end, text in sorted(set(spans)):
            new_starts.append(start + shift)
            edits.append((start, end, len(text)))
            shift += len(text) - (end - start)
        self._rounds.append((new_starts, edits))

    def source_offset(self, offset: int) -> int:
        for new_starts, edits in reversed(self._rounds):
            index = bisect_right(new_starts, offset) - 1
            if index < 0:
                continue
            start, end, length = edits[index]
            written_from = new_starts[index]
            if offset < written_from + length:
                offset = start  # inside what the edit wrote
            else:
                offset = end + offset - (written_from + length)
        return offset
