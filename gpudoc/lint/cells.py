"""A notebook's code cells as one Python module that libcst parses, and back again.

Cells share one namespace (a model placed in cell 2 is evaluated in cell 7), so they are linted
together: joined in order, each after a marker comment. IPython syntax -- ``%magic``, ``!shell``,
``obj?``, ``x = !cmd``, automagic ``cd dir`` -- is replaced line for line by a numbered ``pass``
so that line numbers stay aligned, and restored verbatim when a fixed module is split back into
cells. Cells that are not Python (``%%bash``, ``%%writefile``...) or do not compile are left out
and reported.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from gpudoc.lint.fix import FixResult, Lint, fix_source
from gpudoc.lint.model import Finding
from gpudoc.lint.notebook import Notebook, NotebookError, load, with_sources

MARKER = "# %% gpudoc cell {index}\n"
_MARKER_LINE = re.compile(r"^# %% gpudoc cell (\d+)\n", re.MULTILINE)
_NEUTRAL = "{indent}pass  # gpudoc: magic {number}"
_NEUTRAL_LINE = re.compile(r"^[ \t]*pass  # gpudoc: magic (\d+)(?=\r?$)", re.MULTILINE)

_LINE_MAGIC = re.compile(r"[ \t]*(?:%|!|\?|[\w.]+\?\??[ \t]*$|[\w.,\[\] \t]+=[ \t]*[%!])")
_AUTOMAGIC = re.compile(
    r"[ \t]*(?:cd|ls|pwd|pip|conda|cat|mkdir|rm|rmdir|cp|mv|env|set_env|load_ext|reload_ext|"
    r"matplotlib|time|timeit|run|reset|who|whos|history|autoreload|pushd|popd|pdb|"
    r"tensorflow_version|config|store|alias)(?:[ \t]+(?![=(\[{,:;'\"]|\.\w)|$)"
)
"""IPython's automagic: ``cd drive/My\\ Drive`` or ``pip install x`` without the ``%`` (on by
default in Jupyter and Colab). Taken as a magic only where the line is not Python itself."""
_CELL_MAGIC = re.compile(r"[ \t]*%%(\w+)")
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "pdb"})
"""Cell magics whose body is Python; any other ``%%`` cell is not linted."""

_COMPILE_FLAGS = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


@dataclass(frozen=True)
class VirtualSource:
    """The code cells joined into one module, and what is needed to map it back."""

    text: str
    positions: tuple[tuple[int, int], ...]
    """For each line of ``text`` (0-based): (cell index, line within the cell; 0 for a marker)."""
    magics: tuple[str, ...]
    """The original text of each neutralised line, by its number."""
    ends_with_newline: Mapping[int, bool]
    errors: tuple[tuple[int, str], ...]
    """(cell index, syntax error) for the cells left out because they do not compile."""
    indents: Mapping[int, tuple[str, frozenset[int], int]] = field(default_factory=dict)
    """Cells IPython dedents (their first line is indented): the indent, the lines of the
    cell (1-based) it was taken from, and the cell's line count."""

    def locate(self, line: int) -> tuple[int, int]:
        """(cell, line within the cell) of a 1-based line of ``text``."""
        index = min(max(line, 1), len(self.positions)) - 1
        return self.positions[index] if self.positions else (1, 1)

    def map_finding(self, finding: Finding, path: str) -> Finding:
        """The finding with ``path``, ``cell`` and cell-relative lines (the fix stays as it is)."""
        cell, line = self.locate(finding.line)
        end_cell, end_line = self.locate(finding.end_line or finding.line)
        col, end_col = finding.col, finding.end_col
        if end_cell != cell:
            end_line, end_col = line, finding.col
        indent = self.indents.get(cell)
        if indent is not None:  # the cell's own columns, with the indent IPython takes off
            width = len(indent[0])
            col += width if line in indent[1] else 0
            end_col = end_col + width if end_col is not None and end_line in indent[1] else end_col
        return replace(
            finding, path=path, line=line, col=col, end_line=end_line, end_col=end_col, cell=cell
        )

    def split(self, text: str) -> dict[int, str]:
        """Cut a (fixed) module back into cell sources, with the magic lines restored."""
        parts = _MARKER_LINE.split(text)
        prefix, pairs = parts[0], list(zip(parts[1::2], parts[2::2], strict=True))
        if [int(index) for index, _ in pairs] != list(self.ends_with_newline):
            raise NotebookError("a fix moved a cell boundary; the notebook was not changed")
        sources: dict[int, str] = {}
        for position, (index_text, body) in enumerate(pairs):
            index = int(index_text)
            body = prefix + body if position == 0 else body
            if index in self.indents:
                body = _indent(body, *self.indents[index])
            body = self._restore(body)
            if not self.ends_with_newline[index] and body.endswith("\n"):
                body = body[:-1]
            sources[index] = body
        return sources

    def _restore(self, body: str) -> str:
        def original(match: re.Match[str]) -> str:
            return self.magics[int(match.group(1))]

        return _NEUTRAL_LINE.sub(original, body)


def _neutralise(source: str, magics: list[str]) -> str | None:
    """The cell with IPython lines replaced; None when the cell is not Python at all."""
    cell_magic = _CELL_MAGIC.match(source)
    if cell_magic and cell_magic.group(1) not in PYTHON_CELL_MAGICS:
        return None
    lines = source.splitlines(keepends=True)
    indent: str | None = None  # set while inside a backslash-continued magic
    python = _PythonState()
    for number, line in enumerate(lines):
        body = line.rstrip("\r\n")
        continued = python.continues()  # `print("..."` then `% (a, b))`: Python, not a magic
        magic = (number == 0 and cell_magic) or _LINE_MAGIC.match(body) or _automagic(body)
        if indent is None and (continued or not magic):
            python.read(body)
            continue
        if indent is None:
            indent = body[: len(body) - len(body.lstrip(" \t"))]
        lines[number] = _NEUTRAL.format(indent=indent, number=len(magics)) + line[len(body) :]
        magics.append(body)
        if not body.endswith("\\"):
            indent = None
    return "".join(lines)


def _automagic(line: str) -> bool:
    if not _AUTOMAGIC.match(line):
        return False
    try:  # `ls -la` is Python (a subtraction): IPython would run it, but linting it is harmless
        compile(line.strip(), "<line>", "exec", flags=_COMPILE_FLAGS, dont_inherit=True)
    except SyntaxError as error:
        return "never closed" not in str(error)  # `config = {` opens a literal
    except (ValueError, RecursionError, MemoryError):
        return False
    return False


class _PythonState:
    """Whether the Python read so far leaves a bracket, a triple-quoted string or a backslash
    continuation open: IPython reads a ``%`` or ``!`` line there as Python, and so must we."""

    def __init__(self) -> None:
        self.depth = 0
        self.string: str | None = None  # the open string's quotes
        self.backslash = False

    def continues(self) -> bool:
        return self.depth > 0 or self.string is not None or self.backslash

    def read(self, line: str) -> None:
        index, self.backslash = 0, False
        while index < len(line):
            char = line[index]
            if self.string is not None:
                if char == "\\":
                    index += 2
                    continue
                if line.startswith(self.string, index):
                    index += len(self.string)
                    self.string = None
                    continue
            elif char == "#":
                break
            elif char in "\"'":
                self.string = char * 3 if line.startswith(char * 3, index) else char
                index += len(self.string)
                continue
            elif char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(0, self.depth - 1)
            index += 1
        if self.string is not None and len(self.string) == 1 and not line.endswith("\\"):
            self.string = None  # an unclosed one-line string: Python's own error, not ours
        self.backslash = line.endswith("\\") and self.string is None


def _leading_indent(source: str) -> tuple[str, str, frozenset[int], int] | None:
    """IPython's ``leading_indent``: a cell whose first line is indented (pasted from inside a
    function) runs with that indent taken off every line. (text, indent, the 1-based lines it
    came off, the cell's line count); None when the first line is not indented, or a line
    with text lacks the indent (putting it back after a fix could not restore the cell)."""
    lines = source.splitlines(keepends=True)
    first = next((line for line in lines if line.strip()), "")
    indent = first[: len(first) - len(first.lstrip(" \t"))]
    if not indent:
        return None
    stripped: set[int] = set()
    for number, line in enumerate(lines, 1):
        if line.startswith(indent):
            lines[number - 1] = line[len(indent) :]
            stripped.add(number)
        elif line.strip():
            return None
    return "".join(lines), indent, frozenset(stripped), len(lines)


def _indent(body: str, indent: str, stripped: frozenset[int], count: int) -> str:
    """Put a dedented cell's indent back: on the same lines when a fix kept the cell's
    ``count`` of lines, else on every line with text."""
    lines = body.splitlines(keepends=True)
    same = len(lines) == count
    for number, line in enumerate(lines, 1):
        if (number in stripped) if same else line.strip():
            lines[number - 1] = indent + line
    return "".join(lines)


def _syntax_error(source: str) -> str | None:
    try:
        compile(source, "<cell>", "exec", flags=_COMPILE_FLAGS, dont_inherit=True)
    except SyntaxError as error:
        return f"line {error.lineno}: {error.msg}"
    except (ValueError, RecursionError, MemoryError) as error:
        return str(error)
    return None


def build(notebook: Notebook) -> VirtualSource:
    """Join the notebook's Python code cells into one module."""
    chunks: list[str] = []
    positions: list[tuple[int, int]] = []
    magics: list[str] = []
    ends: dict[int, bool] = {}
    errors: list[tuple[int, str]] = []
    indents: dict[int, tuple[str, frozenset[int], int]] = {}
    for cell in notebook.cells:
        neutral = _neutralise(cell.source, magics)
        if neutral is None:  # %%bash, %%writefile...: not Python, nothing to lint
            continue
        problem = _syntax_error(neutral)
        dedented = _leading_indent(neutral) if problem is not None else None
        if dedented is not None and _syntax_error(dedented[0]) is None:
            neutral, problem = dedented[0], None
            indents[cell.index] = dedented[1:]
        if problem is not None:
            errors.append((cell.index, f"syntax error at {problem}"))
            continue
        body = neutral if neutral.endswith("\n") or not neutral else neutral + "\n"
        chunks += [MARKER.format(index=cell.index), body]
        positions.append((cell.index, 0))
        positions += [(cell.index, line) for line in range(1, body.count("\n") + 1)]
        ends[cell.index] = cell.source.endswith("\n") or not cell.source
    return VirtualSource(
        "".join(chunks), tuple(positions), tuple(magics), ends, tuple(errors), indents
    )


def _cell_order(finding: Finding) -> tuple[int, int, int, str]:
    return (finding.cell or 0, finding.line, finding.col, finding.code)


def _located(virtual: VirtualSource, findings: Iterable[Finding], path: str) -> list[Finding]:
    return sorted((virtual.map_finding(f, path) for f in findings), key=_cell_order)


GPU_REQUIRED_QUIET = frozenset({"GPD203", "GPD205"})
"""Codes a notebook that asks for a GPU in its metadata does not draw: it never runs on a CPU."""


def for_notebook(notebook: Notebook, lint: Lint) -> Lint:
    """``lint`` as this notebook sees it: without CUDA-fallback findings if it asks for a GPU."""
    if not notebook.wants_gpu:
        return lint

    def gpu_lint(text: str) -> list[Finding]:
        return [f for f in lint(text) if f.code not in GPU_REQUIRED_QUIET]

    return gpu_lint


def lint_notebook(notebook: Notebook, path: str, lint: Lint) -> tuple[list[Finding], VirtualSource]:
    """The findings of a notebook, each located by cell and line within the cell."""
    lint = for_notebook(notebook, lint)
    virtual = build(notebook)
    return _located(virtual, lint(virtual.text), path), virtual


CELL_PROBLEM = "cell "
"""How the error of a partly linted notebook starts (``cell 5: syntax error ...``)."""


def partly_linted(error: str) -> bool:
    """The error of ``check_notebook`` names cells left out: the rest of it was linted."""
    return error.startswith(CELL_PROBLEM)


def check_notebook(text: str, path: str, check: Lint) -> tuple[list[Finding], str | None]:
    """Lint a notebook's JSON text: findings by cell, and one line naming what was not linted."""
    try:
        notebook = load(text)
    except NotebookError as error:
        return [], str(error)
    if notebook.language != "python":
        return [], None
    findings, virtual = lint_notebook(notebook, path, check)
    problems = "; ".join(f"{CELL_PROBLEM}{cell}: {message}" for cell, message in virtual.errors)
    return findings, problems or None


@dataclass(frozen=True)
class NotebookFix:
    text: str
    """The notebook's new JSON text (the old one when nothing changed)."""
    result: FixResult
    """The fix on the joined module of the cells."""
    remaining: tuple[Finding, ...]
    """What is left after fixing, located by cell."""
    errors: tuple[tuple[int, str], ...]
    before: Mapping[int, str]
    after: Mapping[int, str]
    """Cell sources (by index) before and after, for the changed cells only."""


def fix_notebook(notebook: Notebook, path: str, lint: Lint, *, unsafe: bool = False) -> NotebookFix:
    """Fix the notebook's cells; outputs, metadata and layout stay as they were."""
    lint = for_notebook(notebook, lint)
    virtual = build(notebook)
    result = fix_source(virtual.text, lint, unsafe=unsafe)
    if not result.changed:
        remaining = tuple(_located(virtual, result.remaining, path))
        return NotebookFix(notebook.text, result, remaining, virtual.errors, {}, {})
    sources = virtual.split(result.fixed)
    text = with_sources(notebook, sources)
    old = {cell.index: cell.source for cell in notebook.cells}
    after = {index: source for index, source in sources.items() if source != old[index]}
    fixed_virtual = build(load(text))
    found = result.remaining if fixed_virtual.text == result.fixed else lint(fixed_virtual.text)
    before = {index: old[index] for index in after}
    remaining = tuple(_located(fixed_virtual, found, path))
    return NotebookFix(text, result, remaining, fixed_virtual.errors, before, after)
