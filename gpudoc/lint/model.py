"""The data of gpudoc lint: findings and the fixes they carry. Frozen, and stdlib only."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, order=True)
class Edit:
    """Replace the source between two positions (1-based lines, 0-based columns) with ``text``.

    Positions, not CST nodes: a fix is applied to the original text, so every byte it does not
    touch (comments, formatting) stays as it was.
    """

    line: int
    col: int
    end_line: int
    end_col: int
    text: str


@dataclass(frozen=True)
class Fix:
    """A set of non-overlapping edits that remove one finding.

    ``safe`` fixes keep behaviour on the CPU and only repair what would crash on a GPU; unsafe ones
    change what the script does (moving a batch to the device the script names) and need
    ``--unsafe-fixes``.
    """

    edits: tuple[Edit, ...]
    safe: bool = True
    description: str = ""


@dataclass(frozen=True, order=True)
class Finding:
    """One problem at one place. Sorted by path, then position, then code: a stable order.

    ``line``/``end_line`` are 1-based; ``col``/``end_col`` are 1-based as printed (``end_col`` is
    one past the last character, like ruff's JSON). Edits inside ``fix`` use 0-based columns.
    """

    path: str
    line: int
    col: int
    code: str
    name: str = field(compare=False)
    message: str = field(compare=False)
    end_line: int = field(compare=False, default=0)
    end_col: int = field(compare=False, default=0)
    fix: Fix | None = field(compare=False, default=None)
    cell: int | None = field(compare=False, default=None)
    """For notebooks: the 1-based index of the code cell; ``line`` is then within the cell."""

    @property
    def fixable(self) -> bool:
        return self.fix is not None

    def sort_key(self) -> tuple[str, int, int, int, str]:
        """Path, then cell (notebooks), then position: the order findings are shown in."""
        return (self.path, self.cell or 0, self.line, self.col, self.code)


@dataclass(frozen=True)
class FileResult:
    """The outcome for one file: its findings, or the one-line reason it could not be linted."""

    path: str
    findings: tuple[Finding, ...] = ()
    error: str | None = None
    cached: bool = False
    partial: bool = False
    """A notebook whose other cells were linted, though ``error`` names cells that were not."""
    source_key: str | None = field(default=None, compare=False, repr=False)
    """content_key of the text these findings are for: --fix reuses them when it reads the same."""


@dataclass(frozen=True)
class LintResult:
    files: tuple[FileResult, ...]

    @property
    def findings(self) -> tuple[Finding, ...]:
        # a finding in a project module can come from each file whose calls reach it
        found = {
            (f.path, f.cell, f.line, f.col, f.code): f
            for result in self.files
            for f in result.findings
        }
        return tuple(sorted(found.values(), key=Finding.sort_key))

    @property
    def errors(self) -> tuple[str, ...]:
        return tuple(r.error for r in self.files if r.error is not None)

    @property
    def files_checked(self) -> int:
        return sum(1 for r in self.files if r.error is None or r.partial)
