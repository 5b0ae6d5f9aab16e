"""Jupyter notebooks as files: read the code cells, write fixed cells back (stdlib json only).

nbformat is not needed at run time: a notebook is JSON with a ``cells`` list whose code cells
carry ``source`` (a string, or a list of lines). To write a fix back we replace only the bytes of
the ``source`` values that changed, so outputs, metadata, key order, indentation and escapes stay
exactly as the notebook's editor wrote them. Unchanged lines of a changed cell keep their raw JSON
text too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

_DECODER = json.JSONDecoder()
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_ESCAPED_NON_ASCII = re.compile(
    r"\\u(?:00[89a-fA-F]|0[1-9a-fA-F][0-9a-fA-F]|[1-9a-fA-F][0-9a-fA-F]{2})"
)

Span = tuple[int, int]


class NotebookError(ValueError):
    """The file is not a notebook we can read; the message is one line for the user."""


@dataclass(frozen=True)
class CodeCell:
    index: int
    """1-based position among all cells, markdown included: the Nth cell from the top."""
    source: str
    span: Span
    """Where the raw JSON of the ``source`` value lies in the file's text."""
    line_spans: tuple[Span, ...] | None
    """The raw JSON string of each line when ``source`` is a list; None when it is one string."""


@dataclass(frozen=True)
class Notebook:
    text: str
    cells: tuple[CodeCell, ...]
    """The code cells, in order."""
    language: str
    """The kernel's language (``python`` when the notebook does not say)."""
    wants_gpu: bool = False
    """Its metadata asks for a GPU (Colab ``"accelerator": "GPU"``, Kaggle's accelerator)."""

    def raw_line(self, cell: int, line: int) -> int | None:
        """The 1-based line of the file's JSON text that holds line ``line`` of cell ``cell``."""
        for code_cell in self.cells:
            if code_cell.index == cell:
                spans = code_cell.line_spans
                start = code_cell.span[0]
                if spans and 1 <= line <= len(spans):
                    start = spans[line - 1][0]
                return self.text.count("\n", 0, start) + 1
        return None


def _skip(text: str, index: int) -> int:
    match = _WHITESPACE.match(text, index)
    return match.end() if match else index


def _expect(text: str, index: int, char: str) -> None:
    if text[index : index + 1] != char:
        raise NotebookError(f"expected {char!r} at offset {index}")


def _members(text: str, index: int) -> Iterator[tuple[str, Span]]:
    """The keys of the JSON object at ``index`` and the spans of their values."""
    _expect(text, index, "{")
    index = _skip(text, index + 1)
    if text[index : index + 1] == "}":
        return
    while True:
        _expect(text, index, '"')
        key, index = _DECODER.raw_decode(text, index)
        index = _skip(text, index)
        _expect(text, index, ":")
        start = _skip(text, index + 1)
        _value, end = _DECODER.raw_decode(text, start)
        yield key, (start, end)
        index = _skip(text, end)
        if text[index : index + 1] != ",":
            _expect(text, index, "}")
            return
        index = _skip(text, index + 1)


def _elements(text: str, index: int) -> Iterator[Span]:
    """The spans of the elements of the JSON array at ``index``."""
    _expect(text, index, "[")
    index = _skip(text, index + 1)
    if text[index : index + 1] == "]":
        return
    while True:
        _value, end = _DECODER.raw_decode(text, index)
        yield index, end
        index = _skip(text, end)
        if text[index : index + 1] != ",":
            _expect(text, index, "]")
            return
        index = _skip(text, index + 1)


def _language(data: Mapping[str, object]) -> str:
    metadata = data.get("metadata")
    if not isinstance(metadata, dict):
        return "python"
    for key in ("language_info", "kernelspec"):
        section = metadata.get(key)
        if isinstance(section, dict):
            name = section.get("name" if key == "language_info" else "language")
            if isinstance(name, str) and name:
                return name.lower()
    return "python"


def _wants_gpu(data: Mapping[str, object]) -> bool:
    """Colab writes ``"accelerator": "GPU"`` (and ``gpuClass``); Kaggle writes
    ``kaggle.accelerator`` (``"gpu"``, ``"nvidiaTeslaT4"``; ``"none"`` without one)."""
    metadata = data.get("metadata")
    if not isinstance(metadata, dict):
        return False
    kaggle = metadata.get("kaggle")
    values = [metadata.get("accelerator")]
    if isinstance(kaggle, dict):
        values.append(kaggle.get("accelerator"))
    for value in values:
        if isinstance(value, str) and ("gpu" in value.lower() or "nvidia" in value.lower()):
            return True
    return "gpuClass" in metadata


def _code_cell(text: str, index: int, span: Span, cell: object) -> CodeCell | None:
    if not isinstance(cell, dict) or cell.get("cell_type") != "code":
        return None
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        joined = "".join(source)
    elif isinstance(source, str):
        joined = source
    else:
        raise NotebookError(f"cell {index}: 'source' is neither a string nor a list of strings")
    value_span = dict(_members(text, span[0])).get("source")
    if value_span is None:  # a code cell without source: nothing to lint or fix
        return None
    lines = tuple(_elements(text, value_span[0])) if isinstance(source, list) else None
    return CodeCell(index, joined, value_span, lines)


def load(text: str) -> Notebook:
    """Read a notebook's JSON text; NotebookError (one line) when it is not a notebook."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise NotebookError(f"not valid JSON: {error}") from None
    except RecursionError:  # json recurses per level: 100,000 nested arrays exhaust the stack
        raise NotebookError("JSON nested too deeply to read") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise NotebookError("not a Jupyter notebook (no 'cells' list)")
    members = dict(_members(text, _skip(text, 0)))
    cell_spans = list(_elements(text, members["cells"][0]))
    cells = []
    for number, (span, cell) in enumerate(zip(cell_spans, data["cells"], strict=True), start=1):
        code_cell = _code_cell(text, number, span, cell)
        if code_cell is not None:
            cells.append(code_cell)
    return Notebook(text, tuple(cells), _language(data), _wants_gpu(data))


def split_lines(source: str) -> list[str]:
    """A cell's source as Jupyter stores it: lines that keep their line break, the last without."""
    return source.splitlines(keepends=True)


def _ensure_ascii(text: str) -> bool:
    """Whether the notebook escapes non-ASCII (``\\u00e9``) or writes it as it is."""
    if any(ord(char) > 127 for char in text):
        return False
    return bool(_ESCAPED_NON_ASCII.search(text))


def _list_json(text: str, cell: CodeCell, lines: list[str], ascii_only: bool) -> str:
    """The new ``source`` list, laid out like the old one, reusing the raw text of kept lines."""
    old_spans = cell.line_spans or ()
    raw_by_line = {json.loads(text[a:b]): text[a:b] for a, b in old_spans}
    items = [raw_by_line.get(line) or json.dumps(line, ensure_ascii=ascii_only) for line in lines]
    start, end = cell.span
    if not old_spans:
        return "[" + ", ".join(items) + "]"
    opening = text[start + 1 : old_spans[0][0]]
    closing = text[old_spans[-1][1] : end - 1]
    separator = text[old_spans[0][1] : old_spans[1][0]] if len(old_spans) > 1 else "," + opening
    return "[" + opening + separator.join(items) + closing + "]"


def with_sources(notebook: Notebook, sources: Mapping[int, str]) -> str:
    """The notebook's text with the code cells named in ``sources`` (by index) replaced."""
    text = notebook.text
    ascii_only = _ensure_ascii(text)
    replacements: list[tuple[Span, str]] = []
    for cell in notebook.cells:
        new = sources.get(cell.index)
        if new is None or new == cell.source:
            continue
        if cell.line_spans is None:
            raw = json.dumps(new, ensure_ascii=ascii_only)
        else:
            raw = _list_json(text, cell, split_lines(new), ascii_only)
        replacements.append((cell.span, raw))
    for (start, end), raw in sorted(replacements, reverse=True):
        text = text[:start] + raw + text[end:]
    return text
